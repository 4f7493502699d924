/**
 * A polystreams app for the signal tests: builds a topology, runs it, prints
 * `running <engine pid>` once the engine runs it and `returned` when run()
 * resolves. Usage: signal_app.ts APPLICATION_ID STATE_DIR
 */

import { App } from "../index.js";
import { createTopics } from "./kafka.js";

const [id, stateDir] = process.argv.slice(2);
const app = await App.create(id!, { config: { stateDir: stateDir!, commitIntervalMs: 100 } });
await createTopics(app.brokers!, { in: 1, out: 1 });
app
  .stream("in", { value: "string" })
  .mapValues((v) => v.toUpperCase())
  .to("out");
const running = app.run();
while ((await app.state()) !== "running") {
  await new Promise((r) => setTimeout(r, 50));
}
console.log(`running ${app.enginePid}`);
await running;
console.log("returned");
await app.close();
