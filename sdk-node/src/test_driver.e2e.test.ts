/** TopologyTestDriver against the REAL engine binary (test driver sessions). */

import assert from "node:assert/strict";
import { test } from "node:test";
import { InvalidArgumentError, NotFoundError, ProcessingError, TopologyTestDriver } from "./index.js";
import { useEngine } from "./testing/app.js";

useEngine();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test("close leaves no engine process behind", async () => {
  let pid: number | undefined;
  {
    await using driver = await TopologyTestDriver.create("td-process");
    driver.stream("in", { value: "string" }).to("out");
    await driver.pipeInput("in", null, "x");
    pid = driver.app.enginePid;
    assert.ok(pid !== undefined && alive(pid));
  }
  assert.ok(!alive(pid), `engine ${pid} outlives the await using block`);
});

test("each record is processed completely through a repartition", async () => {
  // TopologyTestDriver processes a piped record through every sub-topology
  // (repartition topics included) before pipeInput returns.
  await using driver = await TopologyTestDriver.create("td-repartition", { config: { statestoreCacheMaxBytes: 0 } });
  driver.stream("lines", { value: "string" })
    .flatMapValues((l) => l.split(" "))
    .groupBy((_k, w) => w, { key: "string" })
    .count()
    .toStream()
    .to("counts");
  await driver.pipeInput("lines", null, "a b a", { timestamp: 10 });
  assert.deepEqual((await driver.readOutput("counts")).map((r) => [r.key, r.value, r.timestamp]), [["a", 1n, 10], ["b", 1n, 10], ["a", 2n, 10]]);
  assert.deepEqual(await driver.readOutput("counts"), []);
});

test("headers, the wall clock and tombstones", async () => {
  await using driver = await TopologyTestDriver.create("td-records");
  driver.stream("in", { key: "string", value: "string" }).mapValues((v) => (v === "del" ? null : v.toUpperCase())).to("out");
  const now = await driver.advanceWallClock(0);
  const later = await driver.advanceWallClock(5_000);
  assert.equal(later, now + 5_000);
  await driver.pipeInput("in", "k", "v", { headers: { h: "1" } });
  await driver.pipeInput("in", "k", "del", { timestamp: new Date(7) });
  assert.deepEqual(await driver.readOutput("out"), [
    { key: "k", value: "V", timestamp: later, headers: [["h", new TextEncoder().encode("1")]] },
    { key: "k", value: null, timestamp: 7, headers: [] },
  ]);
});

test("bad topics and stores are named", async () => {
  await using driver = await TopologyTestDriver.create("td-bad");
  driver.stream("in", { value: "string" }).to("out");
  await assert.rejects(driver.pipeInput("nope", null, "x"), (e: unknown) => e instanceof InvalidArgumentError && /topic "nope" is not read by the topology \(it reads "in"\)/.test(e.message));
  await assert.rejects(driver.readOutput("in"), (e: unknown) => e instanceof InvalidArgumentError && /topic "in" is not written by the topology \(it writes "out"\)/.test(e.message));
  await assert.rejects(driver.getStore("missing"), (e: unknown) => e instanceof NotFoundError && /store "missing" does not exist/.test(e.message));
  await driver.pipeInput("in", null, "still works");
  assert.deepEqual((await driver.readOutput("out")).map((r) => r.value), ["still works"]);
});

test("a throwing function fails pipeInput naming the record", async () => {
  await using driver = await TopologyTestDriver.create("td-fail");
  driver.stream("in", { value: "string" }).mapValues((v) => {
    if (v === "bad") {
      throw new Error("bad value");
    }
    return v;
  }).to("out");
  await driver.pipeInput("in", null, "ok");
  await assert.rejects(driver.pipeInput("in", null, "bad"), (e: unknown) => e instanceof ProcessingError && /bad value/.test(e.message) && e.topic === "in" && e.offset === 1n);
});

test("a global table is updated before pipeInput resolves", async () => {
  // Kafka's TopologyTestDriver#pipeRecord hands a record of a global
  // table's topic to processGlobalRecord (globalStateTask.update, then
  // flushState) before it returns: the next stream record joins with it.
  await using driver = await TopologyTestDriver.create("td-global", { config: { statestoreCacheMaxBytes: 0 } });
  const prices = driver.globalTable("prices", { key: "string", value: "long", materialized: "prices" });
  driver.stream("orders", { key: "string", value: "string" })
    .join(prices, (_k, order) => order.split(" ")[0], (order, price) => `${order}@${price}`)
    .to("priced");
  await assert.rejects(driver.pipeInput("nope", null, "x"), (e: unknown) => e instanceof InvalidArgumentError && /\(it reads "orders", "prices"\)/.test(e.message));
  await assert.rejects(driver.readOutput("prices"), (e: unknown) => e instanceof InvalidArgumentError && /topic "prices" is not written by the topology \(it writes "priced"\)/.test(e.message));
  const store = await driver.getStore<string, bigint>("prices");
  const steps: [bigint | null, string[]][] = [[1n, ["apple x0@1"]], [5n, ["apple x1@5"]], [null, []], [7n, ["apple x3@7"]]];
  for (const [i, [price, want]] of steps.entries()) {
    await driver.pipeInput("prices", "apple", price, { timestamp: i });
    assert.equal(await store.get("apple"), price ?? undefined, `step ${i}: the global store right after pipeInput`);
    await driver.pipeInput("orders", `o${i}`, `apple x${i}`, { timestamp: i });
    assert.deepEqual((await driver.readOutput("priced")).map((r) => r.value), want, `step ${i}`);
  }
});

test("a table's groupBy mapper that returns no pair skips the row (KTableRepartitionMap)", async () => {
  await using driver = await TopologyTestDriver.create("td-no-pair", { config: { statestoreCacheMaxBytes: 0 } });
  driver.table("accounts", { key: "string", value: "json" })
    .groupBy((_k, v: { region?: string }) => (v.region === undefined ? null : ([v.region, v] as const)))
    .count()
    .toStream()
    .to("counts");
  await driver.pipeInput("accounts", "a1", { region: "eu" });
  await driver.pipeInput("accounts", "a2", {});
  await driver.pipeInput("accounts", "a1", {});
  // a2 maps to no pair: nothing; a1 leaves eu for no pair: eu is back to 0.
  assert.deepEqual((await driver.readOutput("counts")).map((r) => [r.key, r.value]), [["eu", 1n], ["eu", 0n]]);
});
