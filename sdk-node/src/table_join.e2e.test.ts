/**
 * Table-table joins (KTable.join / leftJoin / outerJoin) against the REAL
 * engine binary and its embedded Kafka broker, read back with an
 * independent Kafka client (confluent-kafka).
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { InvalidArgumentError } from "./index.js";
import { Runner, open, useEngine } from "./testing/app.js";
import { type Consumed, createTopics, produce, readUntil } from "./testing/kafka.js";

useEngine();

const joiner = (v: string | null, o: string | null): string => `${v}+${o}`;

// [topic, key, value, ts] and what the inner, left and outer joins forward
// for it, as "key=value" ("key=null" for a tombstone): KTableKTableInnerJoin
// forwards only for keys both tables hold (a delete of either side: a
// tombstone); the left join's other side (KTableKTableRightJoin) joins with
// null for a deleted row; the outer join forwards for every change.
const STEPS: [string, string, string | null, number, string[], string[], string[]][] = [
  ["ta", "k1", "a1", 10, [], ["k1=a1+null"], ["k1=a1+null"]],
  ["tb", "k1", "b1", 5, ["k1=a1+b1"], ["k1=a1+b1"], ["k1=a1+b1"]],
  ["ta", "k1", "a2", 20, ["k1=a2+b1"], ["k1=a2+b1"], ["k1=a2+b1"]],
  ["tb", "k2", "b2", 30, [], [], ["k2=null+b2"]],
  ["tb", "k1", null, 40, ["k1=null"], ["k1=a2+null"], ["k1=a2+null"]],
  ["ta", "k1", null, 50, [], ["k1=null"], ["k1=null"]],
  ["ta", "k2", "a3", 25, ["k2=a3+b2"], ["k2=a3+b2"], ["k2=a3+b2"]],
  ["tb", "k2", null, 60, ["k2=null"], ["k2=a3+null"], ["k2=a3+null"]],
];

/** Lines per key, in order (keys land in different partitions). */
const perKey = (lines: readonly string[]): Record<string, string[]> => {
  const out: Record<string, string[]> = {};
  for (const l of lines) {
    const [k, v] = [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)];
    (out[k] ??= []).push(v);
  }
  return out;
};

const lines = (rs: readonly Consumed[]): string[] =>
  [...rs]
    .sort((a, b) => a.partition - b.partition || a.offset - b.offset)
    .map((r) => `${r.key!.toString("utf8")}=${r.value === null ? "null" : r.value.toString("utf8")}`);

describe("table-table joins against the real engine", { concurrency: false }, () => {
  test("inner, left and outer joins forward Kafka Streams' update sequences, deletes included", async () => {
    const app = await open();
    try {
      assert.ok(app.brokers);
      await createTopics(app.brokers, { ta: 2, tb: 2, inner: 2, left: 2, outer: 2 });
      const ta = app.table("ta", { key: "string", value: "string" });
      const tb = app.table("tb", { key: "string", value: "string" });
      const inner = ta.join(tb, joiner);
      assert.equal((await inner.handle).node, "KTABLE-MERGE-0000000006");
      inner.toStream().to("inner");
      const left = ta.leftJoin(tb, joiner, { name: "lj" });
      assert.equal((await left.handle).node, "lj");
      left.toStream().to("left");
      const outer = ta.outerJoin(tb, joiner, { materialized: "outer-joined" });
      assert.equal(await outer.store, "outer-joined");
      outer.toStream().to("outer");
      const runner = new Runner(app);
      const want: Record<string, string[]> = { inner: [], left: [], outer: [] };
      for (const [i, [topic, key, value, timestamp, ...forwarded]] of STEPS.entries()) {
        await produce(app.brokers, topic, [{ key, value, timestamp }], { partitioner: "murmur2_random" });
        (["inner", "left", "outer"] as const).forEach((t, j) => want[t]!.push(...forwarded[j]!));
        // Each step makes the outer join forward; once all three joins have
        // forwarded what they should, the next step may go.
        for (const t of ["inner", "left", "outer"]) {
          const got = await readUntil(app.brokers, t, (rs) => rs.length >= want[t]!.length, { timeoutMs: 30_000, check: runner.check });
          assert.deepEqual(perKey(lines(got)), perKey(want[t]!), `after step ${i + 1} (${topic} ${key}=${value}): ${t} join`);
        }
      }
      const store = await outer.query();
      const rows: [string, string][] = [];
      for await (const [k, v] of store.all()) {
        rows.push([k, v]);
      }
      assert.deepEqual(rows, [["k2", "a3+null"]]);
      await app.stop();
      await runner.done;
      assert.equal(runner.error, undefined);
    } finally {
      await app.close();
    }
  });

  test("refusals carry the engine's message and the session goes on", async () => {
    const app = await open();
    try {
      const ta = app.table("ta", { key: "string", value: "string" });
      const longs = app.table("tl", { key: "long", value: "string" });
      await assert.rejects(
        ta.join(longs as never, joiner).handle,
        (e: unknown) => e instanceof InvalidArgumentError && /table handle 1 has string keys and table handle 2 long keys/.test(e.message),
      );
      assert.throws(() => ta.outerJoin(ta.groupBy((k, v) => [v, k]) as never, joiner), /outerJoin: want a KTable/);
      assert.throws(() => ta.leftJoin(ta, null as never), /leftJoin: want a function/);
      // A filter reads through its value getter; over an unmaterialized join
      // result it reaches no store.
      const filtered = ta.join(app.table("te", { key: "string", value: "string" }), joiner).filter(() => true);
      await assert.rejects(
        filtered.leftJoin(app.table("tc", { key: "string", value: "string" }), joiner).handle,
        (e: unknown) => e instanceof InvalidArgumentError && /this table handle \d+ \(KTABLE-FILTER-\d+\) keeps no store/.test(e.message),
      );
      const ok = ta.join(app.table("td", { key: "string", value: "string" }), joiner);
      assert.equal((await ok.handle).kind, "table");
      await app.built();
    } finally {
      await app.close();
    }
  });
});
