// The example of docs/testing.md (Node.js), run as it is printed there.
import assert from "node:assert/strict";
import { test } from "node:test";
import { TopologyTestDriver } from "./index.js";
import { useEngine } from "./testing/app.js";

useEngine(); // the engine binary of this repository (make build)

function buildWordCount(driver: TopologyTestDriver): void {
  driver.stream("lines", { value: "string" })
    .flatMapValues((line) => line.split(/\s+/).filter(Boolean))
    .groupBy((_key, word) => word, { key: "string" })
    .count({ materialized: "counts" })
    .toStream()
    .to("word-counts");
}

test("word count", async () => {
  await using driver = await TopologyTestDriver.create("wordcount", { config: { statestoreCacheMaxBytes: 0 } });
  buildWordCount(driver);
  await driver.pipeInput("lines", null, "the cat", { timestamp: 1_000 });
  await driver.pipeInput("lines", null, "the dog", { timestamp: 2_000 });
  const out = await driver.readOutput("word-counts");
  assert.deepEqual(out.map((r) => [r.key, r.value]), [["the", 1n], ["cat", 1n], ["the", 2n], ["dog", 1n]]);
  const counts = await driver.getStore("counts");
  assert.equal(await counts.get("the"), 2n);
});

test("word count with the record cache", async () => {
  // The cache (on by default) is flushed after each piped record, so each
  // line yields the latest count of each of its words once.
  await using driver = await TopologyTestDriver.create("wordcount");
  buildWordCount(driver);
  await driver.pipeInput("lines", null, "b a b");
  assert.deepEqual(await driver.readKeyValuesToMap("word-counts"), new Map([["a", 1n], ["b", 2n]]));
});
