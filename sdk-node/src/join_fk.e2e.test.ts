/**
 * Foreign-key table-table joins (KIP-213) against the REAL engine binary and
 * its embedded Kafka broker, checked with an independent Kafka client
 * (confluent-kafka).
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { InvalidArgumentError } from "./index.js";
import { Runner, open, useEngine } from "./testing/app.js";
import { type Consumed, createTopics, produce, readUntil } from "./testing/kafka.js";

useEngine();

interface Order {
  customer?: string;
  n: number;
}

/** Each key's last value (null: a tombstone). */
const last = (records: readonly Consumed[]): Map<string, unknown> =>
  new Map(records.map((r) => [r.key!.toString("utf8"), r.value === null ? null : JSON.parse(r.value.toString("utf8"))]));

const holds = (got: Map<string, unknown>, want: Record<string, unknown>): boolean =>
  Object.entries(want).every(([k, v]) => got.has(k) && JSON.stringify(got.get(k)) === JSON.stringify(v));

describe("foreign-key joins against the real engine", { concurrency: false }, () => {
  test("orders (3 partitions) joined with their customer (5 partitions): updates, key changes, deletes, null keys", async () => {
    const app = await open();
    try {
      assert.ok(app.brokers);
      const brokers = app.brokers;
      await createTopics(brokers, { orders: 3, customers: 5, enriched: 3, "all-orders": 3 });
      const orders = app.table("orders", { key: "string", value: "json" });
      const customers = app.table("customers", { key: "string", value: "string" });
      const customerOf = (o: unknown): string | null => (o as Order).customer ?? null;
      const enrich = (o: unknown, name: string | null) => ({ ...(o as Order), name });
      const inner = orders.foreignKeyJoin(customers, customerOf, enrich);
      assert.equal((await inner.handle).node, "KTABLE-FK-JOIN-OUTPUT-0000000018");
      inner.toStream().to("enriched");
      const left = orders.leftForeignKeyJoin(customers, customerOf, enrich, { name: "all", materialized: "all-orders" });
      assert.equal(await left.store, "all-orders");
      left.toStream().to("all-orders");
      const runner = new Runner(app);
      const both = async (wantInner: Record<string, unknown>, wantLeft: Record<string, unknown>) => {
        for (const [topic, want] of [["enriched", wantInner], ["all-orders", wantLeft]] as const) {
          const got = last(await readUntil(brokers, topic, (rs) => holds(last(rs), want), { timeoutMs: 60_000, check: runner.check }));
          assert.ok(holds(got, want), `${topic}: ${JSON.stringify([...got])}`);
        }
      };
      // murmur2: subscriptions reach the customers' partitions by Kafka's partitioner.
      await produce(brokers, "customers", [0, 1, 2].map((i) => ({ key: `c${i}`, value: `name${i}` })), { partitioner: "murmur2_random" });
      await produce(
        brokers,
        "orders",
        Array.from({ length: 8 }, (_, i) => ({ key: `o${i}`, value: JSON.stringify({ customer: `c${i % 4}`, n: i }) })),
      );
      const wantInner: Record<string, unknown> = {};
      const wantLeft: Record<string, unknown> = {};
      for (let i = 0; i < 8; i++) {
        const name = i % 4 < 3 ? `name${i % 4}` : null;
        if (name) wantInner[`o${i}`] = { customer: `c${i % 4}`, n: i, name };
        wantLeft[`o${i}`] = { customer: `c${i % 4}`, n: i, name };
      }
      await both(wantInner, wantLeft);

      await produce(brokers, "customers", [{ key: "c1", value: "NAME1" }], { partitioner: "murmur2_random" });
      for (const o of ["o1", "o5"]) wantInner[o] = wantLeft[o] = { ...(wantLeft[o] as object), name: "NAME1" };
      await both(wantInner, wantLeft);

      await produce(brokers, "orders", [
        { key: "o0", value: JSON.stringify({ customer: "c2", n: 0 }) },
        { key: "o2", value: null },
        { key: "o4", value: JSON.stringify({ n: 4 }) },
      ]);
      wantInner.o0 = wantLeft.o0 = { customer: "c2", n: 0, name: "name2" };
      wantInner.o2 = wantLeft.o2 = null;
      wantInner.o4 = null;
      wantLeft.o4 = { n: 4, name: null };
      await both(wantInner, wantLeft);

      await produce(brokers, "customers", [{ key: "c2", value: null }], { partitioner: "murmur2_random" });
      wantInner.o0 = wantInner.o6 = null;
      wantLeft.o0 = { customer: "c2", n: 0, name: null };
      wantLeft.o6 = { customer: "c2", n: 6, name: null };
      await both(wantInner, wantLeft);
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
      const orders = app.table("orders", { key: "string", value: "json" });
      const customers = app.table("customers", { key: "string", value: "string" });
      const stream = app.stream("s", { key: "string", value: "string" });
      assert.throws(() => orders.foreignKeyJoin(stream as never, (v) => v, (v) => v), /foreignKeyJoin: want a KTable/);
      assert.throws(() => orders.foreignKeyJoin(customers, null as never, (v) => v), /foreignKeyJoin: want a function/);
      await assert.rejects(
        orders.foreignKeyJoin(customers, (v) => v as string, (v) => v, { materialized: { storeName: "m", retentionMs: 1000 } }).handle,
        (e: unknown) => e instanceof InvalidArgumentError && /retention_ms 1000/.test(e.message),
      );
      const ok = orders.leftForeignKeyJoin(customers, (v) => (v as Order).customer, (v, c) => ({ v, c }));
      assert.equal((await ok.handle).kind, "table");
      await app.built();
    } finally {
      await app.close();
    }
  });
});
