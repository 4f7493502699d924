/**
 * Sink routing against the REAL engine binary: a stream partitioner
 * (`Produced.streamPartitioner`, `Repartitioned.withStreamPartitioner`) and
 * a topic name extractor, read back with an independent Kafka client, which
 * sees the partitions.
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { RecordMetadata } from "./index.js";
import { Runner, open, useEngine } from "./testing/app.js";
import { createTopics, produce, readUntil } from "./testing/kafka.js";

useEngine();

describe("sink routing against the real engine", { concurrency: false }, () => {
  test("a partitioner picks one partition, several, none or the default; an extractor names topics", async () => {
    const seen: Array<[string, number]> = [];
    const app = await open();
    try {
      assert.ok(app.brokers);
      await createTopics(app.brokers, { in: 1, out: 4, "dyn-x": 4, "dyn-y": 4 });
      const s = app.stream("in", { key: "string", value: "string" }).selectKey((_k, v) => v);
      void s.to("out", {
        partitioner: async (topic, _key, value: string, n) => {
          seen.push([topic, n]);
          if (value === "all") return new Set([0, 2, 3]);
          if (value === "drop") return [];
          if (value === "default") return null;
          if (value === "x" || value === "y") return 0;
          return Number(value.slice(1));
        },
      });
      function byValue(_key: string, value: string, rc: RecordMetadata): string {
        assert.ok(rc.topic.endsWith("-re-repartition") && rc.partition === 1, JSON.stringify(rc));
        return `dyn-${value}`;
      }
      void s
        .filter((_k, v) => v === "x" || v === "y")
        .repartition({ name: "re", partitions: 2, partitioner: () => 1 })
        .to(byValue);
      assert.match(await app.describe(), /\(extractor class: byValue\)/);
      await produce(app.brokers, "in", ["p1", "all", "drop", "default", "p3", "x", "y"].map((value) => ({ key: "k", value })));
      const runner = new Runner(app);
      const out = await readUntil(app.brokers, "out", (rs) => rs.length >= 8, { timeoutMs: 60_000, check: runner.check });
      const parts: Record<string, number[]> = {};
      for (const r of out) {
        (parts[r.value!.toString("utf8")] ??= []).push(r.partition);
      }
      assert.deepEqual(parts["all"]!.sort(), [0, 2, 3]);
      assert.deepEqual([parts["p1"], parts["p3"], parts["x"], parts["y"]], [[1], [3], [0], [0]]);
      assert.equal(parts["drop"], undefined);
      assert.equal(parts["default"]!.length, 1);
      assert.ok(seen.every(([t, n]) => t === "out" && n === 4));
      for (const v of ["x", "y"]) {
        const got = await readUntil(app.brokers, `dyn-${v}`, (rs) => rs.length >= 1, { timeoutMs: 60_000, check: runner.check });
        assert.deepEqual(got.map((r) => r.value!.toString("utf8")), [v]);
      }
      await app.stop();
      await runner.done;
      assert.equal(runner.error, undefined);
    } finally {
      await app.close();
    }
  });
});
