/** Built-in joiners ("pair", "this", "other") against the REAL engine binary. */

import assert from "node:assert/strict";
import { test } from "node:test";
import { InvalidArgumentError, JoinWindows, TopologyTestDriver } from "./index.js";
import { useEngine } from "./testing/app.js";

useEngine();

test("pair in a stream-table left join runs in the engine", async () => {
  // KStreamKTableJoinProcessor: a left join calls the joiner with a null
  // table value for a key the table does not hold. No function is passed,
  // so no joiner can cross to this process: the engine makes [order, name].
  await using driver = await TopologyTestDriver.create("node-builtin-join");
  const customers = driver.table("customers", { key: "string", value: "string" });
  const orders = driver.stream("orders", { key: "string", value: "long" });
  const joined = orders.leftJoin(customers, "pair");
  joined.to("out");
  assert.equal((await joined.handle).valueSerde, "json");
  await driver.pipeInput("customers", "c1", "ann", { timestamp: 1 });
  await driver.pipeInput("orders", "c1", 5n, { timestamp: 2 });
  await driver.pipeInput("orders", "c2", 7n, { timestamp: 3 });
  assert.deepEqual((await driver.readOutput("out")).map((r) => [r.key, r.value]), [["c1", [5, "ann"]], ["c2", [7, null]]]);
});

test("this and other in table-table and stream-stream joins", async () => {
  await using driver = await TopologyTestDriver.create("node-builtin-join-kinds");
  const l = driver.table("l", { key: "string", value: "string" });
  const r = driver.table("r", { key: "string", value: "string" });
  l.outerJoin(r, "other").toStream().to("tt");
  const views = driver.stream("views", { key: "string", value: "string" });
  const clicks = driver.stream("clicks", { key: "string", value: "string" });
  views.join(clicks, "this", JoinWindows.ofTimeDifferenceWithNoGrace(100)).to("ss");
  await driver.pipeInput("l", "k", "a", { timestamp: 1 });
  await driver.pipeInput("r", "k", "b", { timestamp: 2 });
  // KTableKTableOuterJoin: the left row alone joins a null right value.
  assert.deepEqual((await driver.readOutput("tt")).map((x) => [x.key, x.value]), [["k", null], ["k", "b"]]);
  await driver.pipeInput("views", "a", "v1", { timestamp: 1000 });
  await driver.pipeInput("clicks", "a", "c1", { timestamp: 1050 });
  assert.deepEqual((await driver.readOutput("ss")).map((x) => [x.key, x.value]), [["a", "v1"]]);
});

test("built-in joiner refusals name the offender", async () => {
  await using driver = await TopologyTestDriver.create("node-builtin-join-refusals");
  const raw = driver.table("raw", { key: "string" });
  const orders = driver.stream("orders", { key: "string", value: "string" });
  await assert.rejects(orders.join(raw, "pair").handle, (e: unknown) => e instanceof InvalidArgumentError && /built-in joiner pair cannot read the other side, handle \d+ .*bytes values/.test(e.message));
  await assert.rejects(orders.join(raw, "this", { value: "json" }).handle, (e: unknown) => e instanceof InvalidArgumentError && /built-in joiner this makes string values, but the value serde is json/.test(e.message));
  assert.throws(() => orders.join(raw, "concat" as "pair"), /join: unknown joiner "concat" \(want a function, or one of pair, this, other\)/);
});
