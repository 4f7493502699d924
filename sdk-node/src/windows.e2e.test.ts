/**
 * Windowed aggregations against the REAL engine binary and its embedded
 * Kafka broker, checked with an independent Kafka client (confluent-kafka):
 * an async host aggregate over tumbling windows, its final results through
 * suppress, the windowed keys on the topics as Kafka's bytes, the
 * dropped-records count of a late record, window store queries, and host
 * functions over session and sliding windows (fold programs).
 */

import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { describe, test } from "node:test";
import { isDeepStrictEqual } from "node:util";
import { InvalidArgumentError, SessionWindows, SlidingWindows, Suppressed, TimeWindows, Windowed, decode } from "./index.js";
import { Runner, open, useEngine } from "./testing/app.js";
import { type Consumed, type Produce, createTopics, produce, readUntil } from "./testing/kafka.js";

useEngine();

const KEY_SERDE = "windowed(string,60000)";
const MINUTE = 60_000;

const clicks = (rows: [string, number][]): Produce[] => rows.map(([key, timestamp]) => ({ key, value: "click", partition: 0, timestamp }));

function decoded(records: readonly Consumed[]): [unknown, unknown][] {
  return records.map((r) => [decode(KEY_SERDE, r.key), decode("long", r.value)]);
}

describe("windows against the real engine", { concurrency: false }, () => {
  test("an async aggregate per minute, its final results through suppress, Kafka's windowed key bytes, and a late record dropped and counted", async () => {
    const app = await open({ config: { statestoreCacheMaxBytes: 0 } }); // every update, as Kafka Streams without a cache
    try {
      assert.ok(app.brokers);
      await createTopics(app.brokers, { clicks: 1, "clicks-updates": 1, "clicks-final": 1 });
      // alice's 59999 and 60000 fall in two windows; bob at 130000 closes the
      // first two minutes; alice at 5000 then comes too late for [0, 60000)
      // (no grace): dropped.
      await produce(app.brokers, "clicks", clicks([["alice", 1_000], ["bob", 2_000], ["alice", 59_999], ["alice", 60_000], ["bob", 130_000], ["alice", 5_000]]));
      const grouped = app.stream("clicks", { key: "string", value: "string" }).groupByKey();
      const bad = grouped.windowedBy(TimeWindows.ofSizeWithNoGrace(MINUTE).advanceBy(2 * MINUTE));
      await assert.rejects(bad.handle, (e: unknown) => e instanceof InvalidArgumentError && /advance_ms 120000/.test(e.message) && /size_ms 60000/.test(e.message));
      const folded: string[] = [];
      const perMinute = grouped.windowedBy(TimeWindows.ofSizeWithNoGrace(MINUTE)).aggregate(
        () => 0n,
        async (user, _value, n) => {
          folded.push(user);
          await new Promise((r) => setTimeout(r, 1));
          return n + 1n;
        },
        { materialized: { storeName: "clicks-per-minute", value: "long", retentionMs: 3_600_000 } },
      );
      perMinute.toStream().to("clicks-updates");
      perMinute.suppress(Suppressed.untilWindowCloses({ name: "final" })).toStream().to("clicks-final");
      assert.equal((await perMinute.handle).keySerde, KEY_SERDE);
      assert.equal(await perMinute.store, "clicks-per-minute");

      const runner = new Runner(app);
      const updates = await readUntil(app.brokers, "clicks-updates", (rs) => rs.length >= 5, { timeoutMs: 60_000, check: runner.check });
      const final = await readUntil(app.brokers, "clicks-final", (rs) => rs.length >= 3, { timeoutMs: 60_000, check: runner.check });
      assert.deepEqual(decoded(updates), [
        [new Windowed("alice", 0, MINUTE), 1n],
        [new Windowed("bob", 0, MINUTE), 1n],
        [new Windowed("alice", 0, MINUTE), 2n],
        [new Windowed("alice", MINUTE, 2 * MINUTE), 1n],
        [new Windowed("bob", 2 * MINUTE, 3 * MINUTE), 1n],
      ]);
      // Kafka's TimeWindowedSerializer bytes: the key, then the start (8 bytes BE).
      const start = Buffer.alloc(8);
      start.writeBigInt64BE(60_000n);
      assert.deepEqual(updates[3]!.key, Buffer.concat([Buffer.from("alice"), start]));
      // One final result per closed window; bob's [120000, 180000) is still open.
      assert.deepEqual(decoded(final), [
        [new Windowed("alice", 0, MINUTE), 2n],
        [new Windowed("bob", 0, MINUTE), 1n],
        [new Windowed("alice", MINUTE, 2 * MINUTE), 1n],
      ]);
      assert.equal(folded.length, 5); // the late record is never folded
      const deadline = Date.now() + 30_000;
      while ((await app.droppedRecords()) < 1 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.equal(await app.droppedRecords(), 1);
      await app.stop();
      await runner.done;
      assert.equal(runner.error, undefined);
    } finally {
      await app.close();
    }
  });

  test("host functions over session and sliding windows: async merges of the sessions a record bridges, and sliding windows made from earlier ones", async () => {
    const app = await open({ config: { statestoreCacheMaxBytes: 0 } });
    try {
      assert.ok(app.brokers);
      await createTopics(app.brokers, { clicks: 1, sessions: 1, sliding: 1 });
      // alice's clicks at T and T + 20 s make two sessions (gap 10 s); the
      // one at T + 10 s bridges them: merged from the initializer, in time order.
      const T = 100_000;
      await produce(app.brokers, "clicks", clicks([["alice", T], ["alice", T + 20_000], ["bob", T + 1_000], ["alice", T + 10_000]]));
      const grouped = app.stream("clicks", { key: "string", value: "string" }).groupByKey();
      const merges: [string, string, string][] = [];
      grouped
        .windowedBy(SessionWindows.ofInactivityGapAndGrace(10_000, 60_000)) // grace: bob and the bridge come after T + 20 s
        .aggregate(
          () => "",
          async (_user, _click, a) => `${a}c`,
          async (user, a1, a2) => {
            merges.push([user, a1, a2]);
            await new Promise((r) => setTimeout(r, 1));
            return `${a1}[${a2}]`;
          },
          { materialized: { value: "string", retentionMs: 3_600_000 } },
        )
        .toStream()
        .to("sessions");
      grouped
        .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(10_000, 60_000))
        .aggregate(() => 0n, (_user, _click, n) => n + 1n, { materialized: { value: "long", retentionMs: 3_600_000 } })
        .toStream()
        .to("sliding");
      const runner = new Runner(app);
      const sessions = await readUntil(app.brokers, "sessions", (rs) => rs.length >= 6, { timeoutMs: 60_000, check: runner.check });
      const SESSION = "session-windowed(string)";
      assert.deepEqual(
        sessions.map((r) => [decode(SESSION, r.key), r.value === null ? null : decode("string", r.value)]),
        [
          [new Windowed("alice", T, T), "c"],
          [new Windowed("alice", T + 20_000, T + 20_000), "c"],
          [new Windowed("bob", T + 1_000, T + 1_000), "c"],
          [new Windowed("alice", T, T), null],
          [new Windowed("alice", T + 20_000, T + 20_000), null],
          [new Windowed("alice", T, T + 20_000), "[c][c]c"],
        ],
      );
      assert.deepEqual(merges, [["alice", "", "c"], ["alice", "[c]", "c"]]);
      // Sliding windows of 10 s: alice at T + 10 s makes T's right window
      // [T + 1, T + 10001], her left window [T, T + 10000] (from T's left
      // window) and her right window [T + 10001, T + 20001] (a copy of the
      // window holding T + 20 s), and updates [T + 10000, T + 20000].
      const SLIDING = "windowed(string,10000)";
      const sliding = await readUntil(app.brokers, "sliding", (rs) => rs.length >= 7, { timeoutMs: 60_000, check: runner.check });
      const last = new Map<string, bigint>();
      for (const r of sliding) {
        const w = decode(SLIDING, r.key) as Windowed<string>;
        last.set(`${w.key}@${w.start - T}`, decode("long", r.value) as bigint);
      }
      assert.deepEqual(Object.fromEntries(last), {
        "alice@-10000": 1n,
        "alice@0": 2n,
        "alice@1": 1n,
        "alice@10000": 2n,
        "alice@10001": 1n,
        "bob@-9000": 1n,
      });
      await app.stop();
      await runner.done;
      assert.equal(runner.error, undefined);
    } finally {
      await app.close();
    }
  });

  test("window store fetch and fetchAll answer windowed keys", async () => {
    const app = await open({ config: { statestoreCacheMaxBytes: 0 } });
    try {
      assert.ok(app.brokers);
      await createTopics(app.brokers, { clicks: 1, "clicks-updates": 1 });
      await produce(app.brokers, "clicks", clicks([["alice", 1_000], ["bob", 2_000], ["alice", 59_999], ["alice", 60_000], ["bob", 130_000]]));
      const counts = app
        .stream("clicks", { key: "string", value: "string" })
        .groupByKey()
        .windowedBy(TimeWindows.ofSizeWithNoGrace(MINUTE))
        .count({ materialized: { storeName: "clicks-per-minute", retentionMs: 3_600_000 } });
      counts.toStream().to("clicks-updates");
      const runner = new Runner(app);
      await readUntil(app.brokers, "clicks-updates", (rs) => rs.length >= 5, { timeoutMs: 60_000, check: runner.check });
      const store = await counts.windowStore();
      assert.equal(await store.keySerde(), KEY_SERDE);
      const want = [
        [new Windowed("alice", 0, MINUTE), 2n],
        [new Windowed("alice", MINUTE, 2 * MINUTE), 1n],
      ];
      const deadline = Date.now() + 30_000;
      while (!isDeepStrictEqual(await store.fetch("alice", 0, 2 * MINUTE), want) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 200)); // the store answers what is committed
      }
      assert.deepEqual(await store.fetch("alice", 0, 2 * MINUTE), want);
      assert.deepEqual(await store.fetch("alice", 1, MINUTE), [[new Windowed("alice", MINUTE, 2 * MINUTE), 1n]]);
      const all = await store.fetchAll(new Date(0), new Date(3 * MINUTE));
      all.sort(([a], [b]) => a.start - b.start || String(a.key).localeCompare(String(b.key)));
      assert.deepEqual(all, [
        [new Windowed("alice", 0, MINUTE), 2n],
        [new Windowed("bob", 0, MINUTE), 1n],
        [new Windowed("alice", MINUTE, 2 * MINUTE), 1n],
        [new Windowed("bob", 2 * MINUTE, 3 * MINUTE), 1n],
      ]);
      assert.deepEqual(await app.windowStore("clicks-per-minute").fetch("carol", 0, 200_000), []);
      await app.stop();
      await runner.done;
      assert.equal(runner.error, undefined);
    } finally {
      await app.close();
    }
  });
});
