/**
 * Tables against the REAL engine binary and its embedded Kafka broker,
 * checked with an independent Kafka client (confluent-kafka). Each test
 * writes its input in order to partition 0, so that the table's changes
 * reach the engine in one order and each key's updates are a fixed sequence
 * (Kafka Streams without a record cache emits one update per change).
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { InvalidArgumentError, type KTable } from "./index.js";
import { Runner, open, useEngine } from "./testing/app.js";
import { type Consumed, type Produce, consume, createTopics, produce, readUntil } from "./testing/kafka.js";

useEngine();

/** Records written in order to partition 0: [key, value], a null value a tombstone. */
function inOrder(records: readonly [string, string | null][]): Produce[] {
  return records.map(([key, value]) => ({ key, value, partition: 0 }));
}

/** Each key's values in topic order, decoded by dec (null for a tombstone). */
function updates<T>(records: readonly Consumed[], dec: (b: Buffer) => T): Map<string, (T | null)[]> {
  const byKey = new Map<string, (T | null)[]>();
  for (const r of records) {
    const k = r.key!.toString("utf8");
    byKey.set(k, [...(byKey.get(k) ?? []), r.value === null ? null : dec(r.value)]);
  }
  return byKey;
}

const asLong = (b: Buffer): bigint => b.readBigInt64BE(0);
const asText = (b: Buffer): string => b.toString("utf8");

/** Reads topic until it holds n records (or 60 s pass); returns each key's updates. */
async function readUpdates<T>(broker: string, topic: string, n: number, dec: (b: Buffer) => T, runner: Runner): Promise<Record<string, (T | null)[]>> {
  const records = await readUntil(broker, topic, (rs) => rs.length >= n, { timeoutMs: 60_000, check: runner.check });
  return Object.fromEntries(updates(records, dec));
}

describe("tables against the real engine", { concurrency: false }, () => {
  test("groupBy + count follows a table's changes: a move is removed from its old group before it is added to the new one (KTableRepartitionMap old-then-new, KTableAggregate subtract-then-add)", async () => {
    const app = await open({ config: { statestoreCacheMaxBytes: 0 } }); // every update, as Kafka Streams without a cache
    try {
      assert.ok(app.brokers);
      await createTopics(app.brokers, { users: 1, "region-counts": 2 });
      await produce(
        app.brokers,
        "users",
        inOrder([
          ["u1", "eu"],
          ["u2", "eu"],
          ["u3", "us"],
          ["u1", "us"], // moves: eu -1 (old pair first), then us +1
          ["u2", null], // deleted by a tombstone: eu -1
        ]),
      );
      const users = app.table("users", { key: "string", value: "string", materialized: "users-store" });
      const byRegion = users.groupBy((user, region) => [region, user] as const, { key: "string", value: "string" });
      const counts = byRegion.count({ materialized: "region-counts-store" });
      counts.toStream().to("region-counts");
      assert.equal((await users.handle).kind, "table");
      assert.equal((await users.handle).store, "users-store");
      assert.equal((await byRegion.handle).kind, "grouped_table");
      assert.equal((await counts.handle).store, "region-counts-store");
      assert.equal((await counts.handle).valueSerde, "long");

      const runner = new Runner(app);
      // A count that reaches zero stays, as 0 (KTableAggregate stores it; no tombstone).
      const want = { eu: [1n, 2n, 1n, 0n], us: [1n, 2n] };
      assert.deepEqual(await readUpdates(app.brokers, "region-counts", 6, asLong, runner), want);
      await app.stop();
      await runner.done;
      assert.equal(runner.error, undefined);
      // Nothing more came after: stopped, the topic holds exactly these updates.
      assert.deepEqual(Object.fromEntries(updates(await consume(app.brokers, "region-counts"), asLong)), want);
    } finally {
      await app.close();
    }
  });

  test("filter forwards a tombstone for a row that does not pass (KTableFilter); mapValues maps values and keeps tombstones", async () => {
    const app = await open({ config: { statestoreCacheMaxBytes: 0 } }); // every update, as Kafka Streams without a cache
    try {
      assert.ok(app.brokers);
      await createTopics(app.brokers, { fruit: 1, "a-fruit": 1, "not-a-fruit": 1, "upper-fruit": 1 });
      await produce(
        app.brokers,
        "fruit",
        inOrder([
          ["k1", "apple"],
          ["k2", "banana"],
          ["k1", "avocado"],
          ["k3", null], // deleting a key that is not there
          ["k1", null],
        ]),
      );
      const fruit = app.table("fruit", { key: "string", value: "string" });
      const seen: string[] = [];
      fruit
        .filter((_k, v) => (seen.push(v), v.startsWith("a")))
        .toStream()
        .to("a-fruit");
      fruit
        .filterNot(async (_k, v) => v.startsWith("a"))
        .toStream()
        .to("not-a-fruit");
      const upper = fruit.mapValues((v) => ({ name: v.toUpperCase(), length: v.length }), { value: "json", materialized: "upper-store" });
      upper.toStream().to("upper-fruit");
      assert.equal((await upper.handle).store, "upper-store");
      assert.equal((await upper.handle).valueSerde, "json");

      const runner = new Runner(app);
      assert.deepEqual(await readUpdates(app.brokers, "a-fruit", 5, asText, runner), {
        k1: ["apple", "avocado", null],
        k2: [null], // banana does not pass: a tombstone, not nothing
        k3: [null],
      });
      assert.deepEqual(await readUpdates(app.brokers, "not-a-fruit", 5, asText, runner), {
        k1: [null, null, null],
        k2: ["banana"],
        k3: [null],
      });
      assert.deepEqual(await readUpdates(app.brokers, "upper-fruit", 5, (b) => JSON.parse(asText(b)) as unknown, runner), {
        k1: [{ name: "APPLE", length: 5 }, { name: "AVOCADO", length: 7 }, null],
        k2: [{ name: "BANANA", length: 6 }],
        k3: [null],
      });
      assert.deepEqual(seen.sort(), ["apple", "avocado", "banana"], "a predicate never sees a tombstone");
      await app.stop();
      await runner.done;
      assert.equal(runner.error, undefined);
    } finally {
      await app.close();
    }
  });

  test("host reduce and aggregate with subtractors, and the built-in sum, keep totals of balances that change, move and disappear", async () => {
    const app = await open({ config: { statestoreCacheMaxBytes: 0 } }); // every update, as Kafka Streams without a cache
    try {
      assert.ok(app.brokers);
      await createTopics(app.brokers, { accounts: 1, "reduced-totals": 1, "aggregated-totals": 1, "summed-totals": 1 });
      await produce(
        app.brokers,
        "accounts",
        inOrder([
          ["a1", "eu:5"],
          ["a2", "eu:7"],
          ["a3", "us:4"],
          ["a1", "eu:10"], // same group: one change, -5 then +10
          ["a2", "us:1"], // moves: eu -7, then us +1
          ["a3", null], // closed: us -4
        ]),
      );
      const byRegion = app
        .table("accounts", { key: "string", value: "string" })
        .groupBy(
          (_account, v) => {
            const [region, amount] = v.split(":");
            return [region!, BigInt(amount!)] as const;
          },
          // No name: each aggregation gets its own repartition topic (one named topic cannot feed three, as in Kafka Streams).
          { key: "string", value: "long" },
        );
      const subtracted: string[] = [];
      byRegion
        .reduce(
          (total, v) => total + v,
          (total, old) => (subtracted.push(`${total}-${old}`), total - old),
          { materialized: "reduced-store" },
        )
        .toStream()
        .to("reduced-totals");
      byRegion
        .aggregate(
          async () => ({ total: 0, accounts: 0 }),
          async (_region, v, agg) => ({ total: agg.total + Number(v), accounts: agg.accounts + 1 }),
          async (_region, old, agg) => ({ total: agg.total - Number(old), accounts: agg.accounts - 1 }),
          { materialized: { storeName: "aggregated-store", value: "json" } },
        )
        .toStream()
        .to("aggregated-totals");
      byRegion.reduce("sum").toStream().to("summed-totals");

      const runner = new Runner(app);
      const want = { eu: [5n, 12n, 17n, 10n], us: [4n, 5n, 1n] };
      assert.deepEqual(await readUpdates(app.brokers, "reduced-totals", 7, asLong, runner), want);
      assert.deepEqual(await readUpdates(app.brokers, "summed-totals", 7, asLong, runner), want);
      assert.deepEqual(await readUpdates(app.brokers, "aggregated-totals", 7, (b) => JSON.parse(asText(b)) as unknown, runner), {
        eu: [
          { total: 5, accounts: 1 },
          { total: 12, accounts: 2 },
          { total: 17, accounts: 2 },
          { total: 10, accounts: 1 },
        ],
        us: [
          { total: 4, accounts: 1 },
          { total: 5, accounts: 2 },
          { total: 1, accounts: 1 },
        ],
      });
      assert.deepEqual(subtracted, ["12-5", "17-7", "5-4"]);
      await app.stop();
      await runner.done;
      assert.equal(runner.error, undefined);
      assert.deepEqual(Object.fromEntries(updates(await consume(app.brokers, "reduced-totals"), asLong)), want);
    } finally {
      await app.close();
    }
  });

  test("refused table calls name the engine's error, and the session stays usable", async () => {
    const app = await open({ config: { statestoreCacheMaxBytes: 0 } }); // every update, as Kafka Streams without a cache
    try {
      const grouped = app.table("t1", { key: "string", value: "long" }).groupBy((k, v) => [k, v] as const);
      // What the types refuse, as untyped JavaScript calls it: the engine refuses it too.
      const untyped = grouped as unknown as { reduce(...args: unknown[]): KTable<string, bigint> };
      // A host adder needs a subtractor.
      const noSubtractor = untyped.reduce((a: bigint, v: bigint) => a + v);
      await assert.rejects(noSubtractor.handle, (e: unknown) => e instanceof InvalidArgumentError && /subtractor/.test(e.message));
      // max cannot remove a value.
      await assert.rejects(
        untyped.reduce("max").handle,
        (e: unknown) => e instanceof InvalidArgumentError && /max/.test(e.message) && /cannot remove/.test(e.message),
      );
      // A topic read twice.
      await assert.rejects(app.table("t1").handle, (e: unknown) => e instanceof InvalidArgumentError && /"t1"/.test(e.message));
      // A table's changelog must stay compacted.
      await assert.rejects(
        app.table("t2", { materialized: { storeName: "t2-store", changelogConfig: { "cleanup.policy": "delete" } } }).handle,
        (e: unknown) => e instanceof InvalidArgumentError && /cleanup\.policy="delete"/.test(e.message) && /must be compacted/.test(e.message),
      );
      const sum = grouped.reduce("sum", { materialized: "sums" });
      assert.equal((await sum.handle).store, "sums");
      assert.match(await app.describe(), /KTABLE-REDUCE-/);
    } finally {
      await app.close();
    }
  });
});
