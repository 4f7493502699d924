/** Versioned stores (KIP-889) and the stream-table join that reads them (KIP-914), against the REAL engine binary. */

import assert from "node:assert/strict";
import { test } from "node:test";
import { InvalidArgumentError, TopologyTestDriver } from "./index.js";
import { useEngine } from "./testing/app.js";
import { runReadmeBlock } from "./testing/readme.js";

useEngine();

test("a stream record joins the table version valid at its timestamp", async () => {
  await using driver = await TopologyTestDriver.create("node-versioned-join");
  const prices = driver.table("prices", { key: "string", value: "string", materialized: { storeName: "prices", versionedMs: 100 } });
  const orders = driver.stream("orders", { key: "string", value: "string" });
  orders.leftJoin(prices, (order, price) => `${String(order)}@${String(price)}`).to("priced");
  await driver.pipeInput("prices", "apple", "3", { timestamp: 10 });
  await driver.pipeInput("prices", "apple", "4", { timestamp: 20 });
  await driver.pipeInput("orders", "apple", "o1", { timestamp: 15 });
  await driver.pipeInput("prices", "apple", "2", { timestamp: 12 }); // out of order: a version of the past
  await driver.pipeInput("orders", "apple", "o2", { timestamp: 15 });
  await driver.pipeInput("orders", "apple", "o3", { timestamp: 25 });
  await driver.pipeInput("orders", "apple", "o4", { timestamp: 5 });
  assert.deepEqual((await driver.readOutput("priced")).map((r) => [r.key, r.value, r.timestamp]), [
    ["apple", "o1@3", 15],
    ["apple", "o2@2", 15],
    ["apple", "o3@4", 25],
    ["apple", "o4@null", 5],
  ]);
  const store = await driver.getVersionedStore<string, string>("prices");
  assert.deepEqual(await store.get("apple"), { value: "4", timestamp: 20, validTo: undefined });
  assert.deepEqual(await store.get("apple", { asOf: 13 }), { value: "2", timestamp: 12, validTo: 20 });
  assert.equal(await store.get("apple", { asOf: 9 }), undefined);
  // Stream time 1000: a read older than the history retention finds only
  // a latest version older still; a write that old is dropped.
  await driver.pipeInput("prices", "pear", "9", { timestamp: 1000 });
  await driver.pipeInput("prices", "apple", "7", { timestamp: 50 });
  assert.equal(await store.get("apple", { asOf: 13 }), undefined);
  assert.deepEqual(await store.get("apple", { asOf: 60 }), { value: "4", timestamp: 20, validTo: undefined });
  await assert.rejects(driver.getStore("prices"), (e: unknown) => e instanceof InvalidArgumentError && /is a versioned store/.test(e.message));
});

test("versioned needs a named table store", async () => {
  await using driver = await TopologyTestDriver.create("node-versioned-refused");
  await assert.rejects(
    driver.table("t", { key: "string", materialized: { versionedMs: 60_000 } }).handle,
    (e: unknown) => e instanceof InvalidArgumentError && /needs a store name/.test(e.message),
  );
});

test("the README's versioned store program runs verbatim", async () => {
  const out = await runReadmeBlock("#### Versioned stores");
  assert.deepEqual(JSON.parse(out), { priced: ["o1 at 3"], version: { value: "3", timestamp: 1000, validTo: 5000 } });
});
