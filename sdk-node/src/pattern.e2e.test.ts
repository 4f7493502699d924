/** stream(Pattern) against the REAL engine binary (TopologyTestDriver). */

import assert from "node:assert/strict";
import { test } from "node:test";
import { InvalidArgumentError, TopologyTestDriver } from "./index.js";
import { useEngine } from "./testing/app.js";
import { runReadmeBlock } from "./testing/readme.js";

useEngine();

test("a pattern source reads every topic it matches whole", async () => {
  await using driver = await TopologyTestDriver.create("pattern", { config: { statestoreCacheMaxBytes: 0 } });
  driver.stream(/orders-[a-z]{2}/, { key: "string", value: "string" }).groupByKey().count().toStream().to("counts", { value: "long" });
  driver.stream("orders-eu-archive", { key: "string", value: "string" }).to("archived");
  assert.match(await driver.app.describe(), /Source: KSTREAM-SOURCE-0000000000 \(topics: orders-\[a-z\]\{2\}\)/);
  await driver.pipeInput("orders-eu", "a", "x");
  await driver.pipeInput("orders-us", "a", "y");
  await driver.pipeInput("orders-eu-archive", "a", "old"); // matches only in part: the other source's
  assert.deepEqual((await driver.readOutput("counts")).map((r) => [r.key, r.value]), [["a", 1n], ["a", 2n]]);
  assert.deepEqual((await driver.readOutput("archived")).map((r) => r.value), ["old"]);
  await assert.rejects(driver.pipeInput("orders", "a", "z"), /topic "orders" is not read by the topology/);
});

test("a pattern RE2 cannot read, or with flags other than i and s, is refused", async () => {
  await using driver = await TopologyTestDriver.create("pattern-refused");
  await assert.rejects(driver.stream(/orders-(?!eu).*/).handle, (err: unknown) => err instanceof InvalidArgumentError && /pattern "orders-\(\?!eu\)\.\*" is not a regular expression Go's RE2 reads/.test(err.message));
  assert.throws(() => driver.stream(/orders-.*/m), /has flags "m"; a topic pattern takes only i and s/);
});

test("the README pattern example runs", async () => {
  assert.equal(await runReadmeBlock("### Topic patterns"), '[["a",1],["a",2],["b",1]]');
});

test("a topology source reads a pattern", async () => {
  await using driver = await TopologyTestDriver.create("pattern-topology");
  driver.topology().addSource("orders", /orders-[a-z]{2}/, { key: "string", value: "string" }).addSink("all", "all-orders", "orders");
  assert.match(await driver.app.describe(), /Source: orders \(topics: orders-\[a-z\]\{2\}\)/);
  await driver.pipeInput("orders-eu", "o1", "eu");
  await driver.pipeInput("orders-us", "o2", "us");
  assert.deepEqual((await driver.readOutput("all-orders")).map((r) => [r.key, r.value]), [["o1", "eu"], ["o2", "us"]]);
});
