/**
 * withMetadata beyond stateless chains: reducers, aggregators, initializers
 * and joiners read the metadata of the record they are called for
 * (docs/design/processor.md, "Metadata, opt-in"), against the REAL engine.
 */

import assert from "node:assert/strict";
import { test } from "node:test";
import { InvalidArgumentError, type RecordMetadata, SessionWindows, TimeWindows, TopologyTestDriver, withMetadata } from "./index.js";
import { useEngine } from "./testing/app.js";

useEngine();

test("a reducer withMetadata sums values and offsets", async () => {
  await using driver = await TopologyTestDriver.create("meta-reduce", { config: { statestoreCacheMaxBytes: 0 } });
  const add = withMetadata((total: bigint, value: bigint, m: RecordMetadata) => total + value + 1000n * BigInt(m.offset));
  driver.stream("in", { key: "string", value: "long" }).groupByKey().reduce(add).toStream().to("out", { value: "long" });
  for (const v of [1n, 2n, 3n]) {
    await driver.pipeInput("in", "k", v);
  }
  // The first value becomes the aggregate without a call; then 2 + 1000*1, 3 + 1000*2.
  assert.deepEqual((await driver.readOutput("out")).map((r) => r.value), [1n, 1003n, 3006n]);
});

test("an aggregator and its initializer withMetadata read topic, offset, timestamp and headers", async () => {
  await using driver = await TopologyTestDriver.create("meta-aggregate", { config: { statestoreCacheMaxBytes: 0 } });
  const zero = withMetadata((m: RecordMetadata) => `from@${m.offset}`);
  const tag = withMetadata((_k: string, v: string, agg: string, m: RecordMetadata) => {
    const trace = m.headers.find(([k]) => k === "trace")?.[1];
    return `${agg}+${v}[${m.topic}:${m.offset}:${m.timestamp}:${trace ? new TextDecoder().decode(trace) : "-"}]`;
  });
  driver.stream("in", { key: "string", value: "string" }).groupByKey().aggregate(zero, tag, { materialized: { value: "string" } }).toStream().to("out");
  await driver.pipeInput("in", "k", "a", { timestamp: 5 });
  await driver.pipeInput("in", "k", "b", { timestamp: 6, headers: { trace: "t1" } });
  assert.deepEqual(
    (await driver.readOutput("out")).map((r) => r.value),
    ["from@0+a[in:0:5:-]", "from@0+a[in:0:5:-]+b[in:1:6:t1]"],
  );
});

test("a stream-table joiner withMetadata reads the stream record's metadata", async () => {
  await using driver = await TopologyTestDriver.create("meta-join");
  const prices = driver.table("prices", { key: "string", value: "string" });
  const join = withMetadata((v: string, price: string, m: RecordMetadata) => `${v}@${price}#${m.offset}`);
  driver.stream("orders", { key: "string", value: "string" }).join(prices, join).to("out");
  await driver.pipeInput("prices", "p", "10");
  await driver.pipeInput("orders", "p", "o1");
  await driver.pipeInput("orders", "p", "o2");
  assert.deepEqual((await driver.readOutput("out")).map((r) => r.value), ["o1@10#0", "o2@10#1"]);
});

test("a reducer withMetadata({ write: true }) is refused, naming the reducer's token and function", async () => {
  await using driver = await TopologyTestDriver.create("meta-reduce-write");
  const keepTotal = withMetadata((total: bigint, value: bigint, _m: RecordMetadata) => total + value, { write: true });
  const table = driver.stream("in", { key: "string", value: "long" }).groupByKey().reduce(keepTotal);
  await assert.rejects(
    table.handle,
    (e: unknown) => e instanceof InvalidArgumentError && /the reducer, token \d+ \(.*\), was registered with METADATA_WRITE/.test(e.message),
  );
});

test("a groupBy key selector and a table filter withMetadata read the record's offset", async () => {
  await using driver = await TopologyTestDriver.create("meta-group-by", { config: { statestoreCacheMaxBytes: 0 } });
  driver
    .stream("in", { key: "string", value: "string" })
    .groupBy(withMetadata((_k: string, v: string, m: RecordMetadata) => `${v}${m.offset % 2}`), { key: "string" })
    .count()
    .toStream()
    .to("out");
  for (const v of ["a", "a", "a"]) {
    await driver.pipeInput("in", "k", v);
  }
  assert.deepEqual((await driver.readOutput("out")).map((r) => [r.key, r.value]), [["a0", 1n], ["a1", 1n], ["a0", 2n]]);
  await using tables = await TopologyTestDriver.create("meta-table-filter", { config: { statestoreCacheMaxBytes: 0 } });
  tables
    .table("t", { key: "string", value: "string" })
    .filter(withMetadata((_k: string, _v: string, m: RecordMetadata) => m.offset !== 1))
    .toStream()
    .to("out");
  for (const v of ["a", "b", "c"]) {
    await tables.pipeInput("t", `k${v}`, v);
  }
  assert.deepEqual((await tables.readOutput("out")).map((r) => [r.key, r.value]), [["ka", "a"], ["kb", null], ["kc", "c"]]);
});

test("a table groupBy mapper withMetadata reads the update's offset", async () => {
  await using driver = await TopologyTestDriver.create("meta-table-group-by", { config: { statestoreCacheMaxBytes: 0 } });
  driver
    .table("t", { key: "string", value: "long" })
    .groupBy(withMetadata((_k: string, v: bigint, m: RecordMetadata) => [`g${m.offset % 2}`, v] as const), { key: "string", value: "long" })
    .reduce(
      (a: bigint, v: bigint) => a + v,
      (a: bigint, v: bigint) => a - v,
    )
    .toStream()
    .to("out");
  await driver.pipeInput("t", "a", 1n);
  await driver.pipeInput("t", "b", 2n);
  await driver.pipeInput("t", "a", 5n); // offset 2: old and new value both map to g0
  assert.deepEqual((await driver.readOutput("out")).map((r) => [r.key, r.value]), [["g0", 1n], ["g1", 2n], ["g0", 5n]]);
});

test("windowed reducers withMetadata read metadata in hopping windows (value refs) and session windows (fold programs)", async () => {
  const add = withMetadata((total: string, v: string, m: RecordMetadata) => `${total}+${v}@${m.offset}`);
  await using hopping = await TopologyTestDriver.create("meta-hopping", { config: { statestoreCacheMaxBytes: 0 } });
  hopping
    .stream("in", { key: "string", value: "string" })
    .groupByKey()
    .windowedBy(TimeWindows.ofSizeWithNoGrace(10).advanceBy(5))
    .reduce(add)
    .toStream()
    .map((k, v) => [`${k.key}@${k.start}`, v] as const, { key: "string" })
    .to("out");
  await hopping.pipeInput("in", "k", "a", { timestamp: 7 });
  await hopping.pipeInput("in", "k", "b", { timestamp: 8 });
  const got = (await hopping.readOutput("out")).map((r) => `${String(r.key)}=${String(r.value)}`).sort();
  assert.deepEqual(got, ["k@0=a", "k@0=a+b@1", "k@5=a", "k@5=a+b@1"]);

  await using sessions = await TopologyTestDriver.create("meta-session", { config: { statestoreCacheMaxBytes: 0 } });
  sessions
    .stream("in", { key: "string", value: "string" })
    .groupByKey()
    .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(10))
    .reduce(add)
    .toStream()
    .filter((_k, v) => v !== null)
    .map((k, v) => [k.key, v] as const, { key: "string" })
    .to("out");
  await sessions.pipeInput("in", "k", "a", { timestamp: 1 });
  await sessions.pipeInput("in", "k", "b", { timestamp: 5 });
  assert.deepEqual((await sessions.readOutput("out")).map((r) => r.value), ["a", "a+b@1"]);
});
