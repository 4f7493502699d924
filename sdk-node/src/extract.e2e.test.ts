/** A source's TimestampExtractor against the REAL engine binary (TopologyTestDriver). */

import assert from "node:assert/strict";
import { test } from "node:test";
import { InvalidArgumentError, type RecordMetadata, TopologyTestDriver } from "./index.js";
import { useEngine } from "./testing/app.js";
import { runReadmeBlock } from "./testing/readme.js";

useEngine();

test("a timestamp extractor stamps records, drops negative ones and stops on a throw", async () => {
  const seen: [string, number, number, number][] = [];
  const eventTime = async (_key: string, value: bigint, meta: RecordMetadata, partitionTime: number): Promise<bigint> => {
    if (value === 13n) {
      throw new RangeError("unlucky");
    }
    seen.push([meta.topic, meta.offset, meta.timestamp, partitionTime]);
    return value;
  };
  await using driver = await TopologyTestDriver.create("extractor", { config: { statestoreCacheMaxBytes: 0 } });
  driver.stream("in", { key: "string", value: "long", timestampExtractor: eventTime }).to("out");
  for (const v of [500n, -1n, 200n, 900n]) {
    await driver.pipeInput("in", "k", v, { timestamp: 7 });
  }
  const got = (await driver.readOutput("out")).map((r) => [r.value, r.timestamp]);
  assert.deepEqual(got, [[500n, 500], [200n, 200], [900n, 900]]);
  assert.deepEqual(seen, [["in", 0, 7, -1], ["in", 1, 7, 500], ["in", 2, 7, 500], ["in", 3, 7, 500]]);
  await assert.rejects(driver.pipeInput("in", "k", 13n), /record at in\/0@4 failed in node KSTREAM-SOURCE-0000000000: timestamp extractor failed: RangeError: unlucky/);
});

test("a built-in timestamp extractor by class name", async () => {
  await using driver = await TopologyTestDriver.create("extractor-builtin", { config: { statestoreCacheMaxBytes: 0 } });
  driver.table("t", { key: "string", value: "string", timestampExtractor: "UsePartitionTimeOnInvalidTimestamp" }).toStream().to("out");
  await driver.pipeInput("t", "a", "x", { timestamp: 300 });
  await driver.pipeInput("t", "b", "y", { timestamp: 100 });
  assert.deepEqual((await driver.readOutput("out")).map((r) => [r.key, r.timestamp]), [["a", 300], ["b", 100]]);
});

test("an unknown built-in timestamp extractor is refused, named", async () => {
  await using driver = await TopologyTestDriver.create("extractor-unknown");
  const s = driver.stream("in", { timestampExtractor: "EventTime" as "FailOnInvalidTimestamp" });
  await assert.rejects(s.handle, (e: unknown) => e instanceof InvalidArgumentError && /"EventTime" is not a built-in one/.test(e.message));
});

test("the README's timestamp extractor program runs verbatim", async () => {
  assert.equal(await runReadmeBlock("### Timestamp extractors"), '[["o1",1700000000000]]');
});
