/**
 * Operations Kafka Streams users look for, against the real engine:
 * autoOffsetReset, default serdes, pause/resume/isPaused and cleanUp.
 */

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { FailedPreconditionError, InvalidArgumentError } from "./index.js";
import { Runner, open, useEngine } from "./testing/app.js";
import { consume, createTopics, produce, readUntil } from "./testing/kafka.js";

const stateDir = useEngine();

describe("operations against the real engine", { concurrency: false }, () => {
  test("autoOffsetReset latest, default serdes, pause before run, resume, cleanUp", async () => {
    const app = await open({
      config: {
        autoOffsetReset: "latest",
        defaultKeySerde: "string",
        defaultValueSerde: "string",
        defaultProductionExceptionHandler: "continue",
        numStreamThreads: 2,
      },
    });
    try {
      assert.ok(app.brokers);
      await createTopics(app.brokers, { "ops-in": 1, "ops-out": 1 });
      await produce(app.brokers, "ops-in", [{ value: "before" }]);
      // default.value.serde string: the function gets a string.
      app.stream<"string", "string">("ops-in").mapValues((v) => `${typeof v}:${v}`).to("ops-out");
      assert.equal(app.config["auto.offset.reset"], "latest");
      assert.equal(app.config["num.stream.threads"], "2");
      await app.pause(); // before run: it starts paused
      assert.equal(await app.isPaused(), true);
      const runner = new Runner(app);
      const deadline = Date.now() + 60_000;
      while ((await app.state()) !== "running") {
        runner.check();
        assert.ok(Date.now() < deadline, "the application never ran");
        await new Promise((r) => setTimeout(r, 50));
      }
      await assert.rejects(app.cleanUp(), (e: unknown) => e instanceof FailedPreconditionError && /the application is running/.test(e.message));
      await produce(app.brokers, "ops-in", [{ value: "paused" }]);
      await new Promise((r) => setTimeout(r, 1000)); // a paused application processes nothing: watch a while
      assert.deepEqual(await consume(app.brokers, "ops-out"), []);
      await app.resume();
      assert.equal(await app.isPaused(), false);
      const out = await readUntil(app.brokers, "ops-out", (rs) => rs.some((r) => r.value?.toString() === "string:paused"), {
        timeoutMs: 60_000,
        check: runner.check,
      });
      // latest: what the topic held before the start is skipped.
      assert.deepEqual(out.map((r) => r.value?.toString()), ["string:paused"]);
      await app.stop();
      await runner.done;
      runner.check();
      const dir = join(stateDir(), app.applicationId, app.applicationId);
      assert.equal(await app.cleanUp(), dir);
      assert.equal(existsSync(dir), false);
    } finally {
      await app.close();
    }
  });

  test("operations config and offsetReset are checked naming the key", async () => {
    await assert.rejects(
      open({ config: { extra: { "auto.offset.reset": "smallest", "num.stream.threads": "0" } } }),
      (e: unknown) =>
        e instanceof InvalidArgumentError &&
        e.message.includes("auto.offset.reset: want earliest (the default), latest or none") &&
        e.message.includes("num.stream.threads: want an integer from 1 to 65536"),
    );
    const app = await open();
    try {
      app.stream("x", { offsetReset: "smallest" as "latest" }).to("y");
      await assert.rejects(app.built(), (e: unknown) => e instanceof InvalidArgumentError && e.message.includes('offset_reset "smallest"'));
    } finally {
      await app.close();
    }
  });
});
