/**
 * Node-hosted benchmark arms, started by the Go benchmark (core/cmd/bench)
 * against its in-process engine; serves bundles until SIGTERM. The twin of
 * pyhost.py, run from sdk-node/ with `node --import tsx ../tools/bench/nodehost.mts`.
 *
 * --topology map_values: stream -> mapValues(toUpperCase) -> to (crossing table, arm (a'));
 * --topology aggregate:  JSON {"amount": n} per string key -> groupByKey ->
 *     aggregate(0n, a + amount, { materialized: { value: "long" } }) -> toStream -> to,
 *     under exactly_once_v2 (aggregation table, arm (a')).
 */

import { parseArgs } from "node:util";
import { App, type Config } from "../../sdk-node/src/index.js";

const { values: args } = parseArgs({
  options: {
    engine: { type: "string" },
    app: { type: "string" },
    input: { type: "string" },
    output: { type: "string" },
    bundle: { type: "string", default: "2000" },
    topology: { type: "string", default: "map_values" },
    "commit-ms": { type: "string", default: "-1" },
  },
});

for (const required of ["engine", "app", "input", "output"] as const) {
  if (!args[required]) {
    throw new Error(`nodehost: --${required} is required`);
  }
}
const extra = { "polystreams.bundle.max.records": args.bundle! };
const commitMs = Number(args["commit-ms"]);

let app: App;
if (args.topology === "map_values") {
  app = await App.create(args.app!, { engine: args.engine!, config: { extra } });
  app.stream(args.input!, { value: "string" }).mapValues((v) => v.toUpperCase()).to(args.output!);
} else if (args.topology === "aggregate") {
  const config: Config = { processingGuarantee: "exactly_once_v2", extra, ...(commitMs >= 0 ? { commitIntervalMs: commitMs } : {}) };
  app = await App.create(args.app!, { engine: args.engine!, config });
  app
    .stream(args.input!, { key: "string", value: "json" })
    .groupByKey()
    .aggregate(
      () => 0n,
      (_key, v: { amount: number }, total: bigint) => total + BigInt(v.amount),
      { materialized: { value: "long" } },
    )
    .toStream()
    .to(args.output!);
} else {
  throw new Error(`nodehost: --topology ${JSON.stringify(args.topology)}: want map_values or aggregate`);
}
await app.run(); // until SIGTERM
await app.close();
