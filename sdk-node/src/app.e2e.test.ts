/**
 * The SDK against the REAL engine binary and its embedded Kafka broker,
 * checked with an independent Kafka client (confluent-kafka / librdkafka).
 * The binary is $POLYSTREAMS_ENGINE, else <repo>/bin/polystreams; when it is
 * missing these tests fail, never skip.
 */

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { describe, test } from "node:test";
import { App, FailedPreconditionError, InvalidArgumentError, NotFoundError, PolystreamsError, ProcessingError, type SerdeName } from "./index.js";
import { SETTLED } from "./dsl.js";
import { Runner, appId, open, requireEngine, useEngine } from "./testing/app.js";
import { createTopics, produce, readUntil } from "./testing/kafka.js";

const WORDCOUNT_DESCRIBE = `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [lines])
      --> KSTREAM-FLATMAPVALUES-0000000001
    Processor: KSTREAM-FLATMAPVALUES-0000000001 (stores: [])
      --> KSTREAM-KEY-SELECT-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-KEY-SELECT-0000000002 (stores: [])
      --> KSTREAM-FILTER-0000000006
      <-- KSTREAM-FLATMAPVALUES-0000000001
    Processor: KSTREAM-FILTER-0000000006 (stores: [])
      --> KSTREAM-SINK-0000000005
      <-- KSTREAM-KEY-SELECT-0000000002
    Sink: KSTREAM-SINK-0000000005 (topic: KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition)
      <-- KSTREAM-FILTER-0000000006

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000007 (topics: [KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition])
      --> KSTREAM-AGGREGATE-0000000004
    Processor: KSTREAM-AGGREGATE-0000000004 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000003])
      --> KTABLE-TOSTREAM-0000000008
      <-- KSTREAM-SOURCE-0000000007
    Processor: KTABLE-TOSTREAM-0000000008 (stores: [])
      --> KSTREAM-SINK-0000000009
      <-- KSTREAM-AGGREGATE-0000000004
    Sink: KSTREAM-SINK-0000000009 (topic: word-counts)
      <-- KTABLE-TOSTREAM-0000000008

`;

const stateDir = useEngine();

function wordCount(app: App): void {
  app
    .stream("lines", { value: "string" })
    .flatMapValues((line) => line.split(/\s+/).filter(Boolean))
    .groupBy((_key, word) => word, { key: "string" })
    .count()
    .toStream()
    .to("word-counts");
}

describe("against the real engine", { concurrency: false }, () => {
  test("word count end to end: counts are 8-byte big-endian longs", async () => {
    const lines = Array.from({ length: 3000 }, (_, i) =>
      Array.from({ length: (i % 6) + 1 }, (_, j) => `w${(i * 7 + j * 13) % 41}`).join(" "),
    );
    const expected = new Map<string, bigint>();
    for (const line of lines) {
      for (const w of line.split(" ")) {
        expected.set(w, (expected.get(w) ?? 0n) + 1n);
      }
    }
    const app = await open();
    try {
      assert.ok(app.brokers, "a dev engine reports its embedded broker");
      await createTopics(app.brokers, { lines: 4, "word-counts": 4 });
      await produce(app.brokers, "lines", lines.map((value) => ({ value })));
      wordCount(app);
      const runner = new Runner(app);
      const last = new Map<string, Buffer>();
      const complete = (records: { key: Buffer | null; value: Buffer | null }[]): boolean => {
        last.clear();
        for (const r of records) {
          last.set(r.key!.toString("utf8"), r.value!);
        }
        return (
          last.size === expected.size &&
          [...expected].every(([w, n]) => last.get(w)?.length === 8 && last.get(w)!.readBigInt64BE(0) === n)
        );
      };
      await readUntil(app.brokers, "word-counts", complete, { timeoutMs: 60_000, check: runner.check });
      await app.stop();
      await runner.done;
      assert.equal(runner.error, undefined);
      assert.ok(runner.returned);
      for (const [w, n] of expected) {
        const v = last.get(w);
        assert.ok(v, `no count for ${w}`);
        assert.equal(v.length, 8, `count of ${w} is ${v.length} bytes, want an 8-byte long`);
        assert.equal(v.readBigInt64BE(0), n, `count of ${w}`);
      }
      assert.deepEqual([...last.keys()].sort(), [...expected.keys()].sort());
    } finally {
      await app.close();
    }
  });

  test("describe() is Kafka Streams' text, byte for byte", async () => {
    const app = await open();
    try {
      wordCount(app);
      assert.equal(await app.describe(), WORDCOUNT_DESCRIBE);
    } finally {
      await app.close();
    }
  });

  test("refused builder calls name the engine's error and keep the session usable", async () => {
    const app = await open();
    try {
      assert.ok(app.brokers);
      await createTopics(app.brokers, { in: 1, out: 1 });

      // Awaited at the node: the engine's code and message, reported once.
      const refused = app.stream("in", { value: "xml" as SerdeName });
      await assert.rejects(refused.handle, (e: unknown) => {
        assert.ok(e instanceof InvalidArgumentError, String(e));
        assert.equal(e.code, "invalid_argument");
        assert.match(e.message, /"xml"/);
        assert.match(e.stack ?? "", /app\.e2e\.test\.ts/, "the stack points at the builder call");
        return true;
      });
      // A node built on a refused one is refused for the same reason, without a call.
      await assert.rejects(refused.mapValues((v) => v).handle, (e: unknown) => e instanceof InvalidArgumentError && /"xml"/.test(e.message));
      await app.built(); // both seen already: nothing left to report

      const s = app.stream("in", { value: "string" });
      const h = await s.handle;

      // Not awaited: reported by the next describe(), once.
      void app.stream([]);
      await assert.rejects(app.describe(), (e: unknown) => e instanceof InvalidArgumentError && /topic/.test(e.message));
      assert.match(await app.describe(), /^Topologies:/);
      // No count() on a KStream in the typed API; the engine refuses it too.
      const count = app.build("count", s, [], (input) => ({ case: "count", value: { input } }));
      await assert.rejects(count.handle, (e: unknown) => {
        assert.ok(e instanceof InvalidArgumentError, String(e));
        assert.match(e.message, /count/);
        assert.ok(e.message.includes(String(h.id)), e.message);
        return true;
      });
      const fake = { [SETTLED]: Promise.resolve({ ...h, id: 999n }) };
      const missing = app.build("mapValues", fake, [(v: unknown) => v], (input, [token]) => ({
        case: "mapValues",
        value: { input, token: token! },
      }));
      await assert.rejects(missing.handle, (e: unknown) => e instanceof NotFoundError && /999/.test(e.message));

      // Still usable, and refused calls burned no node number.
      const m = s.mapValues((v) => v.toUpperCase());
      const mh = await m.handle;
      assert.equal(mh.node, "KSTREAM-MAPVALUES-0000000001");
      assert.equal(mh.kind, "stream");
      assert.equal(mh.valueSerde, "string");
      await m.to("out");
      await app.start();
      await assert.rejects(app.stream("in").handle, (e: unknown) => e instanceof FailedPreconditionError && /after Start/.test(e.message));
      assert.ok(["rebalancing", "running"].includes(await app.state()));
    } finally {
      await app.close();
    }
  });

  test("run() reports a refused call nobody awaited, and the session stays usable", async () => {
    const app = await open();
    try {
      assert.ok(app.brokers);
      await createTopics(app.brokers, { in: 1, out: 1 });
      app.stream("in", { value: "xml" as SerdeName }).to("out");
      await assert.rejects(app.run({ signals: false }), (e: unknown) => e instanceof InvalidArgumentError && /xml/.test(e.message));
      const table = app.stream("in", { value: "string" }).groupByKey().count({ materialized: "counts" });
      assert.equal((await table.handle).store, "counts");
      table.toStream().to("out");
      const runner = new Runner(app);
      const deadline = Date.now() + 60_000;
      for (let state = await app.state(); state !== "running"; state = await app.state()) {
        runner.check();
        assert.ok(Date.now() < deadline, `the app is still ${state} after 60 s`);
        await new Promise((r) => setTimeout(r, 50));
      }
      await app.stop();
      await runner.done;
      assert.equal(runner.error, undefined);
      assert.ok(runner.returned);
    } finally {
      await app.close();
    }
  });

  test("a throwing function fails run() with a ProcessingError naming topic, partition, offset and node", async () => {
    const logged: string[] = [];
    const app = await open({ logger: (_level, line) => void logged.push(line) });
    try {
      assert.ok(app.brokers);
      await createTopics(app.brokers, { in: 1, out: 1 });
      await produce(app.brokers, "in", ["a", "b", "poison", "c"].map((value) => ({ value, partition: 0 })));
      app
        .stream("in", { value: "string" })
        .mapValues(async (v) => {
          if (v === "poison") {
            throw new RangeError("poison pill");
          }
          return v.toUpperCase();
        })
        .to("out");
      const error = await app.run({ signals: false }).then(
        () => assert.fail("run() resolved"),
        (e: unknown) => e,
      );
      assert.ok(error instanceof ProcessingError, String(error));
      assert.ok(error instanceof PolystreamsError);
      assert.match(error.message, /in\/0@2/);
      assert.match(error.message, /KSTREAM-MAPVALUES-0000000001/);
      assert.match(error.message, /RangeError: poison pill/);
      assert.deepEqual([error.topic, error.partition, error.offset, error.node], ["in", 0, 2n, "KSTREAM-MAPVALUES-0000000001"]);
      assert.ok(logged.some((l) => /level=ERROR/.test(l) && /poison pill/.test(l)), "the engine's log reaches the logger");
    } finally {
      await app.close();
    }
  });

  test("map, selectKey, json and async functions reach Kafka; stop() ends run() cleanly", async () => {
    const app = await open();
    try {
      assert.ok(app.brokers);
      await createTopics(app.brokers, { orders: 2, totals: 2 });
      await produce(app.brokers, "orders", [
        { key: "o1", value: JSON.stringify({ customer: "ann", amount: 3 }) },
        { key: "o2", value: JSON.stringify({ customer: "bob", amount: 4 }) },
        { key: "o3", value: JSON.stringify({ customer: "ann", amount: 5 }) },
        { key: "o4", value: "not json" },
      ]);
      const seen: string[] = [];
      app
        .stream("orders", { key: "string", value: "string" })
        .filter((_k, v) => v.startsWith("{"))
        .mapValues((v): { customer: string; amount: number } => JSON.parse(v), { value: "json" })
        .peek((k) => void seen.push(k))
        .selectKey(async (_k, order) => order.customer, { key: "string" })
        .map((customer, order) => [customer, BigInt(order.amount)] as const, { value: "long" })
        .groupByKey()
        .reduce("sum")
        .toStream()
        .to("totals");
      const runner = new Runner(app);
      const totals = new Map<string, bigint>();
      await readUntil(
        app.brokers,
        "totals",
        (records) => {
          for (const r of records) {
            totals.set(r.key!.toString(), r.value!.readBigInt64BE(0));
          }
          return totals.get("ann") === 8n && totals.get("bob") === 4n;
        },
        { timeoutMs: 60_000, check: runner.check },
      );
      assert.deepEqual(Object.fromEntries(totals), { ann: 8n, bob: 4n });
      assert.deepEqual(seen.sort(), ["o1", "o2", "o3"]);
      await app.stop();
      await runner.done;
      assert.equal(runner.error, undefined);
      assert.ok(runner.returned, "run() resolved after stop()");
    } finally {
      await app.close();
    }
  });

  test("host reduce and aggregate fold on this side, one output per value", async () => {
    const app = await open();
    try {
      assert.ok(app.brokers);
      await createTopics(app.brokers, { nums: 1, maxes: 1, lists: 1 });
      await produce(app.brokers, "nums", ["3", "1", "4", "1", "5"].map((value) => ({ key: value === "1" ? "one" : "k", value })));
      const grouped = app.stream("nums", { key: "string", value: "string" }).groupByKey();
      grouped
        .reduce(async (a, v) => (Number(v) > Number(a) ? v : a), { materialized: "maxes-store" })
        .toStream()
        .to("maxes");
      grouped
        .aggregate(
          () => [] as string[],
          (_k, v, list) => [...list, v],
          { materialized: { storeName: "lists-store", value: "json" } },
        )
        .toStream()
        .to("lists");
      const runner = new Runner(app);
      const maxes = new Map<string, string>();
      await readUntil(
        app.brokers,
        "maxes",
        (records) => {
          for (const r of records) {
            maxes.set(r.key!.toString(), r.value!.toString());
          }
          return maxes.get("k") === "5";
        },
        { timeoutMs: 60_000, check: runner.check },
      );
      const lists = new Map<string, unknown>();
      await readUntil(
        app.brokers,
        "lists",
        (records) => {
          for (const r of records) {
            lists.set(r.key!.toString(), JSON.parse(r.value!.toString()));
          }
          return lists.size === 2 && (lists.get("k") as string[]).length === 3;
        },
        { timeoutMs: 30_000, check: runner.check },
      );
      assert.deepEqual(Object.fromEntries(maxes), { k: "5", one: "1" });
      assert.deepEqual(Object.fromEntries(lists), { k: ["3", "4", "5"], one: ["1", "1"] });
      await app.stop();
      await runner.done;
      assert.equal(runner.error, undefined);
    } finally {
      await app.close();
    }
  });

  test("interactive queries over a count store while run() serves: get, range, prefix, all, errors; states in order", async () => {
    const lines = [...Array.from({ length: 1000 }, (_, i) => Array.from({ length: (i % 6) + 1 }, (_, j) => `w${(i * 7 + j * 13) % 41}`).join(" ")), "w w w wx x"];
    const expected = new Map<string, bigint>();
    for (const line of lines) {
      for (const w of line.split(" ")) {
        expected.set(w, (expected.get(w) ?? 0n) + 1n);
      }
    }
    const keys = [...expected.keys()].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    const app = await open();
    try {
      await createTopics(app.brokers!, { lines: 4, "word-counts": 4 });
      await produce(app.brokers!, "lines", lines.map((value) => ({ value })));
      const table = app
        .stream("lines", { value: "string" })
        .flatMapValues((line) => line.split(/\s+/).filter(Boolean))
        .groupBy((_key, word) => word, { key: "string" })
        .count();
      table.toStream().to("word-counts");
      assert.equal(await table.store, "KSTREAM-AGGREGATE-STATE-STORE-0000000003");
      const store = await table.query();
      assert.equal(store.name, "KSTREAM-AGGREGATE-STATE-STORE-0000000003");
      await assert.rejects(store.get("w"), (e: unknown) => {
        assert.ok(e instanceof FailedPreconditionError, String(e)); // before the topology runs
        assert.match(e.message, /KSTREAM-AGGREGATE-STATE-STORE-0000000003/);
        return true;
      });
      const transitions: [string, string][] = [];
      app.onStateChange((next, old) => void transitions.push([next, old]));
      const runner = new Runner(app);
      await readUntil(app.brokers!, "word-counts", (records) => records.length === lines.join(" ").split(" ").length, { timeoutMs: 60_000, check: runner.check });
      // The store holds what is committed; wait until it caught up.
      let found = new Map<string, bigint>();
      const deadline = Date.now() + 30_000;
      while (Date.now() < deadline) {
        runner.check();
        found = new Map(await app.store<string, bigint>(store.name).all().toArray());
        if (found.size === expected.size && [...expected].every(([k, n]) => found.get(k) === n)) {
          break;
        }
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.deepEqual(found, expected);
      assert.equal(await store.get("w"), 3n);
      assert.equal(await store.get("x"), 1n);
      assert.equal(await store.get("nope"), undefined);
      assert.deepEqual((await store.all().toArray()).map(([k]) => k), keys, "all() is in serialized key order");
      const inRange = (lo: string, hi: string) => keys.filter((k) => k >= lo && k <= hi).map((k) => [k, expected.get(k)]);
      assert.deepEqual(await store.range({ from: "w1", to: "w2" }).toArray(), inRange("w1", "w2"));
      assert.deepEqual(await store.range({ to: "w0" }).toArray(), [["w", 3n], ["w0", expected.get("w0")]]);
      assert.deepEqual(await store.range({ from: "w9" }).toArray(), inRange("w9", "\uffff"));
      assert.deepEqual(await store.prefix("w1").toArray(), keys.filter((k) => k.startsWith("w1")).map((k) => [k, expected.get(k)]));
      assert.deepEqual(await store.prefix("x").toArray(), [["x", 1n]]);
      assert.deepEqual(await store.prefix("nothing").toArray(), []);
      // Small pages: the engine truncates each answer at the limit, the store reads on.
      const paged = app.store<string, bigint>(store.name, { pageSize: 4 });
      assert.deepEqual(await paged.all().toArray(), keys.map((k) => [k, expected.get(k)]));
      assert.deepEqual(await paged.prefix("w2").toArray(), keys.filter((k) => k.startsWith("w2")).map((k) => [k, expected.get(k)]));
      assert.deepEqual(await paged.range({ from: "w1", to: "w2" }).toArray(), inRange("w1", "w2"));
      assert.equal(await paged.approximateNumEntries(), expected.size);
      await assert.rejects(app.store("no-such-store").get("w"), (e: unknown) => {
        assert.ok(e instanceof NotFoundError, String(e));
        assert.match(e.message, /"no-such-store" does not exist/);
        assert.match(e.message, /KSTREAM-AGGREGATE-STATE-STORE-0000000003/);
        return true;
      });
      // Many queries at once on the connection run() polls on.
      const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => store.get(keys[i % keys.length]!)));
      assert.deepEqual(answers, Array.from({ length: 50 }, (_, i) => expected.get(keys[i % keys.length]!)));
      runner.check();
      await app.stop();
      await runner.done;
      assert.equal(runner.error, undefined);
      assert.equal(runner.returned, true);
      const states = transitions.map(([next]) => next);
      assert.ok(states.includes("running"), JSON.stringify(transitions));
      assert.equal(states.at(-1), "stopped", JSON.stringify(transitions));
      assert.equal(transitions[0]![1], "created", JSON.stringify(transitions));
      for (let i = 1; i < transitions.length; i++) {
        assert.equal(transitions[i]![1], transitions[i - 1]![0], `a chain of changes: ${JSON.stringify(transitions)}`);
        assert.notEqual(transitions[i]![0], transitions[i]![1]);
      }
    } finally {
      await app.close();
    }
  });

  test("a restart with no local state restores the store from its changelog; queries answer the same", async () => {
    const first = await open();
    try {
      await createTopics(first.brokers!, { events: 2 });
      await produce(first.brokers!, "events", Array.from({ length: 600 }, (_, i) => ({ key: `k${i % 30}`, value: "x" })));
      const build = (app: App) => app.stream("events", { key: "string", value: "string" }).groupByKey().count({ materialized: "counts" });
      build(first);
      const runner = new Runner(first);
      const counts = first.store<string, bigint>("counts");
      const want = new Map(Array.from({ length: 30 }, (_, i) => [`k${i}`, 20n]));
      const deadline = Date.now() + 60_000;
      let got = new Map<string, bigint>();
      while (Date.now() < deadline) {
        runner.check();
        got = await counts
          .all()
          .toArray()
          .then((e) => new Map(e), () => new Map<string, bigint>()); // not queryable until running
        if (got.size === 30 && [...want].every(([k, n]) => got.get(k) === n)) {
          break;
        }
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.deepEqual(got, want);
      await first.stop();
      await runner.done;
      assert.equal(runner.error, undefined);

      // The same application on the same engine, with an empty state directory.
      const again = await App.create(first.applicationId, { engine: first.engineUrl, config: { stateDir: join(stateDir(), `${first.applicationId}-empty`), commitIntervalMs: 100 } });
      try {
        const states: string[] = [];
        again.onStateChange((next) => void states.push(next));
        const progress: number[][] = [];
        again.onRestoreProgress((p) => void progress.push([p.restoredRecords, p.totalRecords]));
        build(again);
        const r2 = new Runner(again);
        const store = again.store<string, bigint>("counts");
        const until = Date.now() + 60_000;
        let restored = new Map<string, bigint>();
        while (Date.now() < until) {
          r2.check();
          if (states.includes("running")) {
            restored = new Map(await store.all().toArray());
            if (restored.size === 30) {
              break;
            }
          }
          await new Promise((r) => setTimeout(r, 100));
        }
        assert.deepEqual(restored, want, "the store restored from its changelog");
        assert.equal(await store.get("k7"), 20n);
        // An engine that reports restoring says how far it came.
        if (states.includes("restoring")) {
          assert.ok(states.indexOf("restoring") < states.indexOf("running"), JSON.stringify(states));
        }
        const last = progress.at(-1);
        if (last !== undefined) {
          assert.equal(last[0], last[1], `restore progress ends complete: ${JSON.stringify(progress)}`);
        }
        await again.stop();
        await r2.done;
        assert.equal(r2.error, undefined);
      } finally {
        await again.close();
      }
    } finally {
      await first.close();
    }
  });

  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    test(`${signal} stops run() cleanly and ends the spawned engine`, async () => {
      requireEngine();
      const child = spawn(process.execPath, ["--import", "tsx", join(import.meta.dirname, "testing", "signal_app.ts"), appId(), join(stateDir(), `sig-${signal}`)], {
        stdio: ["ignore", "pipe", "pipe"],
        env: process.env,
      });
      let out = "";
      let err = "";
      child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
      child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
      const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
      const deadline = Date.now() + 60_000;
      while (!/^running \d+$/m.test(out)) {
        assert.ok(Date.now() < deadline, `the app did not start within 60s: ${out}${err}`);
        assert.equal(child.exitCode, null, `the app exited early: ${out}${err}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const enginePid = Number(/^running (\d+)$/m.exec(out)![1]);
      child.kill(signal);
      const code = await exited;
      assert.equal(code, 0, `exit ${code}: ${out}${err}`);
      assert.match(out, /^returned$/m);
      assert.doesNotMatch(err, /Error/);
      const gone = Date.now() + 10_000;
      for (;;) {
        try {
          process.kill(enginePid, 0);
        } catch {
          break; // no such process: the engine is gone
        }
        assert.ok(Date.now() < gone, `engine ${enginePid} still running after the app exited`);
        await new Promise((r) => setTimeout(r, 100));
      }
    });
  }
});
