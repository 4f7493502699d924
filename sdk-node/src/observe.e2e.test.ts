// describe({ format }) and metrics() against the real engine.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import type { App, DescribeFormat } from "./index.js";
import { Runner, open, useEngine } from "./testing/app.js";
import { REPO, createTopics, produce, readUntil } from "./testing/kafka.js";

useEngine();

const GOLDENS = join(REPO, "core", "internal", "topology", "testdata", "render");

function wordCount(app: App): void {
  app
    .stream("lines", { value: "string" })
    .flatMapValues((line) => line.split(/\s+/).filter(Boolean))
    .groupBy((_key, word) => word, { key: "string" })
    .count()
    .toStream()
    .to("word-counts");
}

describe("observability against the real engine", { concurrency: false }, () => {
  test("describe({ format }) gives the engine's goldens byte for byte", async () => {
    // The same DSL chain as the engine's golden word count
    // (core/internal/topology/render_test.go).
    const app = await open();
    try {
      wordCount(app);
      for (const format of ["text", "json", "mermaid", "dot", "svg"] as DescribeFormat[]) {
        assert.equal(await app.describe({ format }), readFileSync(join(GOLDENS, `wordcount.${format}`), "utf8"), format);
      }
    } finally {
      await app.close();
    }
  });

  test("metrics() summarises nodes, tasks, lag and stores", async () => {
    const app = await open();
    try {
      assert.equal((await app.metrics()).state, "created");
      assert.ok(app.brokers);
      await createTopics(app.brokers, { lines: 2, "word-counts": 2 });
      await produce(app.brokers, "lines", Array.from({ length: 3000 }, (_, i) => ({ value: `a b c${i % 5}` })));
      wordCount(app);
      const runner = new Runner(app);
      const want = new Map<string, bigint>([["a", 3000n], ["b", 3000n], ...[0, 1, 2, 3, 4].map((i) => [`c${i}`, 600n] as [string, bigint])]);
      await readUntil(
        app.brokers,
        "word-counts",
        (records) => {
          const last = new Map(records.map((r) => [r.key!.toString(), r.value!.readBigInt64BE(0)]));
          return [...want].every(([k, n]) => last.get(k) === n);
        },
        { timeoutMs: 60_000, check: runner.check },
      );
      let m = await app.metrics();
      for (let i = 0; i < 100 && (m.lag !== 0 || m.state !== "running"); i++) {
        await new Promise((r) => setTimeout(r, 200));
        m = await app.metrics();
      }
      await app.stop();
      await runner.done;
      assert.equal(m.state, "running");
      assert.ok(m.metricsEnabled);
      const node = (name: string) => m.nodes.find((n) => n.name === name);
      assert.equal(node("KSTREAM-SOURCE-0000000000")?.records, 3000);
      assert.equal(node("KSTREAM-FLATMAPVALUES-0000000001")?.records, 3000);
      assert.ok((node("KSTREAM-FLATMAPVALUES-0000000001")?.bundles ?? 0) > 0);
      assert.equal(node("KSTREAM-KEY-SELECT-0000000002")?.fusedInto, "KSTREAM-FLATMAPVALUES-0000000001");
      assert.equal(node("KSTREAM-AGGREGATE-0000000004")?.records, 9000);
      assert.deepEqual(m.tasks.map((t) => t.id).sort(), ["0_0", "0_1", "1_0", "1_1"]);
      assert.equal(m.lag, 0);
      assert.equal(m.tasks.flatMap((t) => t.stores).reduce((a, s) => a + s.entries, 0), want.size);
      assert.equal(m.droppedRecords, 0);
      assert.equal(m.failedRecords, 0);
    } finally {
      await app.close();
    }
  });

  test("hostHealth() of a serving host: nothing waits, not stalled", async () => {
    // core/internal/server's TestGetStateReportsAHostThatStopsExchanging
    // covers the stall. The engine takes num.standby.replicas from the
    // typed config.
    const app = await open({ config: { numStandbyReplicas: 1 } });
    try {
      assert.deepEqual(await app.hostHealth(), { bundlesWaiting: 0, idleMs: 0, stalled: false }); // before start
      assert.ok(app.brokers);
      await createTopics(app.brokers, { lines: 2, "word-counts": 2 });
      await produce(app.brokers, "lines", [{ value: "a b" }, { value: "b" }]);
      wordCount(app);
      const runner = new Runner(app);
      await readUntil(
        app.brokers,
        "word-counts",
        (records) => {
          const last = new Map(records.map((r) => [r.key!.toString(), r.value!.readBigInt64BE(0)]));
          return last.get("a") === 1n && last.get("b") === 2n;
        },
        { timeoutMs: 60_000, check: runner.check },
      );
      const h = await app.hostHealth();
      await app.stop();
      await runner.done;
      assert.equal(h.bundlesWaiting, 0);
      assert.equal(h.stalled, false);
      assert.equal(typeof h.idleMs, "number");
    } finally {
      await app.close();
    }
  });
});
