/**
 * Cogroups (KIP-150) against the real engine: the README's cogroup program
 * run verbatim (the ```ts block under "### Cogroup" in sdk-node/README.md),
 * and a session cogroup through the test driver.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import { SessionWindows, TopologyTestDriver } from "./index.js";
import { useEngine } from "./testing/app.js";
import { runReadmeBlock } from "./testing/readme.js";

useEngine();

test("the README's cogroup program runs verbatim", async () => {
  assert.equal(await runReadmeBlock("### Cogroup"), 'ann={"clicks":1,"spent":0} ann={"clicks":1,"spent":30} bob={"clicks":1,"spent":0}');
});

test("a session cogroup merges the sessions a record of another stream bridges", async () => {
  await using driver = await TopologyTestDriver.create(`cogroup-sessions-${process.pid}`);
  const amounts = driver.stream("amounts", { key: "string", value: "long" }).groupByKey();
  const pings = driver.stream("pings", { key: "string", value: "long" }).groupByKey();
  const table = amounts
    .cogroup((_k, v: bigint, a: bigint) => a + v)
    .cogroup(pings, (_k, _v, a) => a + 1n)
    .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(5))
    .aggregate(() => 0n, (_k, a, b) => a + b, { materialized: { value: "long", retentionMs: 60_000 } });
  table.toStream().to("sessions");
  await driver.pipeInput("amounts", "k", 10n, { timestamp: 0 });
  await driver.pipeInput("amounts", "k", 20n, { timestamp: 10 });
  await driver.pipeInput("pings", "k", 0n, { timestamp: 5 });
  const out = await driver.readOutput("sessions");
  assert.deepEqual(
    out.map((r) => [(r.key as { start: number }).start, (r.key as { end: number }).end, r.value]),
    [[0, 0, 10n], [10, 10, 20n], [0, 0, null], [10, 10, null], [0, 10, 31n]],
  );
});
