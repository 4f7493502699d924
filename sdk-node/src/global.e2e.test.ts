/**
 * Global tables and stream-global-table joins against the REAL engine
 * binary and its embedded Kafka broker, checked with an independent Kafka
 * client (confluent-kafka).
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { FailedPreconditionError, GlobalKTable } from "./index.js";
import { Runner, open, useEngine } from "./testing/app.js";
import { createTopics, produce, readUntil } from "./testing/kafka.js";

useEngine();

interface Order {
  product: string;
  n: number;
}

const DESCRIBE = `Topologies:
   Sub-topology: 0 for global store (will not generate tasks)
    Source: KSTREAM-SOURCE-0000000000 (topics: [products])
      --> KTABLE-SOURCE-0000000001
    Processor: KTABLE-SOURCE-0000000001 (stores: [products-store])
      --> none
      <-- KSTREAM-SOURCE-0000000000
  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000002 (topics: [orders])
      --> KSTREAM-LEFTJOIN-0000000003
    Processor: KSTREAM-LEFTJOIN-0000000003 (stores: [])
      --> KSTREAM-SINK-0000000004
      <-- KSTREAM-SOURCE-0000000002
    Sink: KSTREAM-SINK-0000000004 (topic: all-orders)
      <-- KSTREAM-LEFTJOIN-0000000003

`;

async function waitFor(what: string, cond: () => Promise<boolean>, check: () => void): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    check();
    try {
      if (await cond()) {
        return;
      }
    } catch (e) {
      if (!(e instanceof FailedPreconditionError)) {
        throw e;
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`timed out waiting for ${what}`);
}

describe("global tables against the real engine", { concurrency: false }, () => {
  test("orders (1 partition) left-joined with a global table of 3 partitions, updates seen by later orders", async () => {
    const app = await open();
    try {
      assert.ok(app.brokers);
      await createTopics(app.brokers, { products: 3, orders: 1, "all-orders": 1 });
      for (let p = 0; p < 3; p++) {
        await produce(app.brokers, "products", [
          { key: `p${p}`, value: `name${p}`, partition: p },
          { key: `p${p + 3}`, value: `name${p + 3}`, partition: p },
        ]);
      }
      const products = app.globalTable("products", { key: "string", value: "string", materialized: "products-store" });
      assert.ok(products instanceof GlobalKTable);
      const orders = app.stream("orders", { key: "string", value: "json" });
      const joined = orders.leftJoin(
        products,
        (_k, v) => (v as Order).product,
        async (order, name) => ({ ...(order as Order), name }),
      );
      joined.to("all-orders");
      assert.equal((await products.handle).kind, "global_table");
      assert.equal(await products.store, "products-store");
      assert.equal(await app.describe(), DESCRIBE);

      const runner = new Runner(app);
      const store = await products.query();
      await waitFor("the global store's rows", async () => (await store.all().toArray()).length === 6, runner.check);
      assert.equal(await store.get("p4"), "name4");
      await produce(
        app.brokers,
        "orders",
        Array.from({ length: 16 }, (_, i) => ({ key: `o${i}`, value: JSON.stringify({ product: `p${i % 8}`, n: i }) })),
      );
      let all = await readUntil(app.brokers, "all-orders", (rs) => rs.length >= 16, { timeoutMs: 60_000, check: runner.check });
      const byKey = new Map(all.map((r) => [r.key!.toString("utf8"), JSON.parse(r.value!.toString("utf8"))]));
      for (let i = 0; i < 16; i++) {
        assert.deepEqual(byKey.get(`o${i}`), { product: `p${i % 8}`, n: i, name: i % 8 < 6 ? `name${i % 8}` : null });
      }
      await produce(app.brokers, "products", [{ key: "p7", value: "name7", partition: 1 }]);
      await waitFor("the update in the global store", async () => (await store.get("p7")) === "name7", runner.check);
      await produce(app.brokers, "orders", [{ key: "o100", value: JSON.stringify({ product: "p7", n: 100 }) }]);
      all = await readUntil(app.brokers, "all-orders", (rs) => rs.length >= 17, { timeoutMs: 60_000, check: runner.check });
      const last = all.find((r) => r.key!.toString("utf8") === "o100")!;
      assert.deepEqual(JSON.parse(last.value!.toString("utf8")), { product: "p7", n: 100, name: "name7" });
      await app.stop();
      await runner.done;
      assert.equal(runner.error, undefined);
    } finally {
      await app.close();
    }
  });

  test("refusals name the offender and the session goes on", async () => {
    const app = await open();
    try {
      const g = app.globalTable("g", { key: "string", value: "string" });
      const table = app.table("t", { key: "string", value: "string" });
      const stream = app.stream("s", { key: "string", value: "string" });
      assert.throws(() => stream.join(g, "not a function" as never, (v: string) => v), /join \(key mapper\): want a function/);
      assert.throws(() => stream.join(g as never, (v: string) => v), /join: want a function, got undefined/);
      assert.throws(() => stream.leftJoin(table as never, (k: string) => k, (v: string) => v), /leftJoin: a key mapper is for joins with a GlobalKTable/);
      const ok = stream.join(g, (k) => k, (v, o) => `${v}${o}`);
      assert.match((await ok.handle).node, /^KSTREAM-LEFTJOIN-\d{10}$/);
    } finally {
      await app.close();
    }
  });
});
