/**
 * Stream-table joins against the REAL engine binary and its embedded Kafka
 * broker, checked with an independent Kafka client (confluent-kafka).
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { InvalidArgumentError } from "./index.js";
import { Runner, open, useEngine } from "./testing/app.js";
import { type Consumed, createTopics, produce, readUntil } from "./testing/kafka.js";

useEngine();

interface Order {
  customer: string;
  total: number;
}

interface Enriched extends Order {
  name: string | null;
}

const values = (records: readonly Consumed[]): Enriched[] => records.map((r) => JSON.parse(r.value!.toString("utf8")) as Enriched);

describe("stream-table joins against the real engine", { concurrency: false }, () => {
  test("orders keyed by customer joined with a customers table: inner drops unknown customers, left keeps them with null", async () => {
    const customers = Array.from({ length: 5 }, (_, i) => ({ key: `c${i}`, value: `name${i}` }));
    const orders: Order[] = Array.from({ length: 60 }, (_, i) => ({ customer: `c${i % 7}`, total: i }));
    const app = await open();
    try {
      assert.ok(app.brokers);
      await createTopics(app.brokers, { customers: 2, orders: 2, enriched: 2, "all-orders": 2 });
      // murmur2: a table written with librdkafka's default partitioner is not
      // co-partitioned with what the engine repartitions (as with Kafka Streams).
      await produce(app.brokers, "customers", customers, { partitioner: "murmur2_random" });
      const table = app.table("customers", { key: "string", value: "string" });
      const byCustomer = app.stream("orders", { key: "string", value: "json" }).selectKey((_k, v) => (v as Order).customer, { key: "string" });
      const enrich = async (order: unknown, name: string | null): Promise<Enriched> => ({ ...(order as Order), name });
      const joined = byCustomer.join(table, enrich);
      assert.match((await joined.handle).node, /^KSTREAM-JOIN-\d{10}$/);
      joined.to("enriched");
      const left = byCustomer.leftJoin(table, enrich, { name: "all" });
      assert.equal((await left.handle).node, "all");
      left.to("all-orders");

      const runner = new Runner(app);
      // The table's rows are in before the orders are processed: the join
      // sees the table as it is when each order comes.
      const changelog = `${app.applicationId}-customers-STATE-STORE-0000000000-changelog`;
      const rows = await readUntil(app.brokers, changelog, (rs) => rs.length >= 5, { timeoutMs: 60_000, check: runner.check });
      assert.equal(rows.length, 5);
      await produce(
        app.brokers,
        "orders",
        orders.map((o, i) => ({ key: String(i), value: JSON.stringify(o) })),
      );
      const known = orders.filter((o) => Number(o.customer.slice(1)) < 5);
      const enriched = await readUntil(app.brokers, "enriched", (rs) => rs.length >= known.length, { timeoutMs: 60_000, check: runner.check });
      const all = await readUntil(app.brokers, "all-orders", (rs) => rs.length >= orders.length, { timeoutMs: 60_000, check: runner.check });
      await app.stop();
      await runner.done;
      assert.equal(runner.error, undefined);

      assert.equal(enriched.length, known.length, "each known order once");
      assert.deepEqual(new Set(enriched.map((r) => r.key!.toString("utf8"))), new Set(customers.map((c) => c.key)), "keyed by customer");
      const got = values(enriched).sort((a, b) => a.total - b.total);
      assert.deepEqual(
        got,
        known.map((o) => ({ ...o, name: `name${o.customer.slice(1)}` })),
      );
      assert.equal(all.length, orders.length, "each order once");
      assert.deepEqual(
        values(all)
          .filter((o) => o.name === null)
          .map((o) => o.total)
          .sort((a, b) => a - b),
        orders.filter((o) => Number(o.customer.slice(1)) >= 5).map((o) => o.total),
      );
    } finally {
      await app.close();
    }
  });

  test("refusals carry the engine's message and the session goes on", async () => {
    const app = await open();
    try {
      const table = app.table("t", { key: "long", value: "string" });
      const stream = app.stream("s", { key: "string", value: "string" });
      await assert.rejects(
        stream.join(table as never, (v: string) => v).handle,
        (e: unknown) => e instanceof InvalidArgumentError && /string keys and table handle .* long keys/.test(e.message),
      );
      assert.throws(() => stream.leftJoin(stream as never, (v: string) => v), /leftJoin: joining two streams takes JoinWindows/);
      assert.throws(() => stream.join(app.table("u", { key: "string", value: "string" }), null as never), /join: want a function/);
      const ok = stream.join(app.table("w", { key: "string", value: "string" }), (v, o) => `${v}:${o}`);
      assert.equal((await ok.handle).kind, "stream");
      await app.built();
    } finally {
      await app.close();
    }
  });
});
