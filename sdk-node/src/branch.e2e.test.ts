/**
 * merge, split and repartition against the REAL engine binary and its
 * embedded Kafka broker, checked with an independent Kafka client
 * (confluent-kafka).
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { InvalidArgumentError } from "./index.js";
import { Runner, open, useEngine } from "./testing/app.js";
import { type Consumed, createTopics, partitionCount, produce, readUntil } from "./testing/kafka.js";

useEngine();

/** key -> value of JSON records. */
function decoded(records: readonly Consumed[]): Record<string, unknown> {
  return Object.fromEntries(records.map((r) => [r.key!.toString("utf8"), JSON.parse(r.value!.toString("utf8")) as unknown]));
}

function only(records: Record<string, number>, keep: (v: number) => boolean): Record<string, number> {
  return Object.fromEntries(Object.entries(records).filter(([, v]) => keep(v)));
}

describe("merge, split and repartition against the real engine", { concurrency: false }, () => {
  test("two topics merged, split into big/odd/default, the default branch repartitioned into 3 partitions", async () => {
    const a = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`a-${i}`, i]));
    const b = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`b-${i}`, 1000 + i]));
    const oddSaw: number[] = [];
    const app = await open();
    try {
      assert.ok(app.brokers);
      await createTopics(app.brokers, { a: 2, b: 2, big: 2, odd: 2, rest: 2 });
      await produce(app.brokers, "a", Object.entries(a).map(([key, v]) => ({ key, value: JSON.stringify(v) })));
      await produce(app.brokers, "b", Object.entries(b).map(([key, v]) => ({ key, value: JSON.stringify(v) })));

      const merged = app.stream("a", { key: "string", value: "json" }).merge(app.stream("b", { key: "string", value: "json" }));
      assert.equal((await merged.handle).node, "KSTREAM-MERGE-0000000002");
      const branches = await merged
        .split({ name: "size-" })
        .branch((_k, v) => (v as number) >= 100, { name: "big" })
        .branch(function odd(_k, v) {
          oddSaw.push(v as number);
          return (v as number) % 2 === 1;
        })
        .defaultBranch({ name: "rest" });
      assert.deepEqual([...branches.keys()].sort(), ["size-2", "size-big", "size-rest"]);
      for (const [name, stream] of branches) {
        assert.equal((await stream.handle).node, name);
        assert.equal((await stream.handle).kind, "stream");
      }
      branches.get("size-big")!.to("big");
      branches.get("size-2")!.to("odd");
      const byKey = branches.get("size-rest")!.repartition({ name: "by-key", partitions: 3 });
      assert.equal((await byKey.handle).valueSerde, "json");
      byKey.to("rest");

      const runner = new Runner(app);
      const want: Record<string, Record<string, number>> = {
        big: only({ ...a, ...b }, (v) => v >= 100),
        odd: only(a, (v) => v < 100 && v % 2 === 1),
        rest: only(a, (v) => v < 100 && v % 2 === 0),
      };
      for (const [topic, expected] of Object.entries(want)) {
        const n = Object.keys(expected).length;
        const got = await readUntil(app.brokers, topic, (rs) => rs.length >= n, { timeoutMs: 60_000, check: runner.check });
        assert.deepEqual(decoded(got), expected, topic);
        assert.equal(got.length, n, `${topic}: each record once`);
      }
      assert.equal(await partitionCount(app.brokers, `${app.applicationId}-by-key-repartition`), 3);
      await app.stop();
      await runner.done;
      assert.equal(runner.error, undefined);
    } finally {
      await app.close();
    }
    assert.ok(oddSaw.length > 0);
    assert.ok(Math.max(...oddSaw) < 100, "the second predicate saw a record the first one took");
  });

  test("refusals carry the engine's message and the session goes on", async () => {
    const app = await open();
    try {
      const strings = app.stream("a", { key: "string", value: "string" });
      const longs = app.stream("b", { key: "string", value: "long" });
      await assert.rejects(
        strings.merge(longs as never).handle,
        (e: unknown) => e instanceof InvalidArgumentError && /\(string, string\).*\(string, long\)/.test(e.message),
      );
      let called = false;
      await assert.rejects(
        strings
          .split({ name: "s-" })
          .branch(() => (called = true), { name: "x" })
          .branch(() => false, { name: "x" })
          .noDefaultBranch(),
        (e: unknown) => e instanceof InvalidArgumentError && /node "s-x", which exists already/.test(e.message),
      );
      assert.throws(() => strings.repartition({ partitions: -1 }), TypeError);
      assert.throws(() => strings.repartition({ partitions: 1.5 }), TypeError);
      const branched = strings.split();
      const done = await branched.branch(() => true).noDefaultBranch();
      assert.equal(done.size, 1);
      assert.match([...done.keys()][0]!, /^KSTREAM-BRANCH-\d{10}1$/);
      assert.throws(() => branched.branch(() => true), /built already/);
      await app.built(); // every refusal was seen where it happened
      assert.equal(called, false);
      // A refused split nobody awaited is reported by the next built().
      void strings.split({ name: "t-" }).branch(() => true, { name: "y" }).defaultBranch({ name: "y" });
      await assert.rejects(app.built(), (e: unknown) => e instanceof InvalidArgumentError && /node "t-y", which exists already/.test(e.message));
      await app.built();
    } finally {
      await app.close();
    }
  });
});
