// A Kafka broker that stops answering, as the SDK sees it, against the real
// engine: the state listeners hear running -> degraded -> running. The broker
// is a `polystreams dev` process of its own (the embedded broker); the
// application runs on an engine spawned against it. Freezing that process
// (SIGSTOP) makes the broker stop answering without closing a connection;
// SIGCONT brings it back.
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, test } from "node:test";
import { EngineProcess } from "./engine.js";
import { App, type BrokerOutage, type State } from "./index.js";
import { Runner, appId, requireEngine, useEngine } from "./testing/app.js";
import { createTopics, engineBinary, produce, readUntil, type Consumed } from "./testing/kafka.js";

const stateDir = useEngine();

function counts(records: Consumed[]): Map<string, bigint> {
  return new Map(records.map((r) => [r.key!.toString(), r.value!.readBigInt64BE(0)]));
}

function same(got: Map<string, bigint>, want: Record<string, bigint>): boolean {
  return got.size === Object.keys(want).length && Object.entries(want).every(([k, n]) => got.get(k) === n);
}

describe("a broker outage against the real engine", { concurrency: false }, () => {
  test("the state listener hears running -> degraded -> running while the broker is frozen", async () => {
    requireEngine();
    const broker = await EngineProcess.start(engineBinary());
    try {
      const brokers = broker.broker!;
      assert.ok(brokers);
      await createTopics(brokers, { lines: 2, "word-counts": 2 });
      await produce(brokers, "lines", [{ value: "a b a" }]);
      const id = appId();
      const app = await App.create(id, { brokers, config: { stateDir: join(stateDir(), id), commitIntervalMs: 100 } });
      const transitions: [State, State][] = [];
      const outages: (BrokerOutage | undefined)[] = [];
      try {
        app
          .stream("lines", { value: "string" })
          .flatMapValues((line) => line.split(/\s+/).filter(Boolean))
          .groupBy((_key, word) => word, { key: "string" })
          .count()
          .toStream()
          .to("word-counts");
        assert.equal(await app.brokerOutage(), undefined); // before start
        app.onStateChange(async (next, old) => {
          if (next === "degraded") {
            outages.push(await app.brokerOutage());
          }
          transitions.push([next, old]);
        });
        const last = (): State | undefined => transitions.at(-1)?.[0];
        const waitFor = async (what: string, cond: () => boolean): Promise<void> => {
          for (let i = 0; !cond(); i++) {
            assert.ok(i < 600, `${what}: not within 60 s; transitions ${JSON.stringify(transitions)}`);
            await new Promise((r) => setTimeout(r, 100));
          }
        };
        const runner = new Runner(app);
        const first = { a: 2n, b: 1n };
        assert.ok(same(counts(await readUntil(brokers, "word-counts", (rs) => same(counts(rs), first), { timeoutMs: 90_000, check: runner.check })), first));
        await waitFor("running", () => last() === "running");
        assert.equal(await app.brokerOutage(), undefined);

        process.kill(broker.pid, "SIGSTOP");
        try {
          await waitFor("degraded", () => last() === "degraded");
          assert.equal(await app.state(), "degraded");
        } finally {
          process.kill(broker.pid, "SIGCONT");
        }
        await waitFor("running again", () => last() === "running");
        assert.equal(await app.brokerOutage(), undefined);

        await produce(brokers, "lines", [{ value: "b c" }]);
        const want = { a: 2n, b: 2n, c: 1n };
        assert.ok(same(counts(await readUntil(brokers, "word-counts", (rs) => same(counts(rs), want), { timeoutMs: 90_000, check: runner.check })), want));
        await app.stop();
        await runner.done;
        runner.check();
        assert.ok(runner.returned);
      } finally {
        await app.close();
      }
      const states = transitions.map(([next]) => next);
      assert.equal(states.filter((s) => s === "degraded").length, 1, JSON.stringify(transitions));
      const i = states.indexOf("degraded");
      assert.ok(states.slice(0, i).includes("running") && states.slice(i + 1).includes("running"), JSON.stringify(transitions));
      assert.deepEqual(transitions.at(-1), ["stopped", "running"]);
      // What the listener read when it heard of the outage: the brokers and since when.
      assert.equal(outages.length, 1);
      const o = outages[0];
      assert.ok(o !== undefined);
      assert.deepEqual(o.brokers, [brokers]);
      assert.equal(o.outages, 1);
      assert.ok(o.sinceMs > 0 && o.sinceMs <= Date.now(), `sinceMs ${o.sinceMs}`);
    } finally {
      process.kill(broker.pid, "SIGCONT"); // never leave it frozen
      await broker.close();
    }
  });
});
