/**
 * Stream-stream joins (join / leftJoin / outerJoin with JoinWindows) against
 * the REAL engine binary and its embedded Kafka broker, checked with an
 * independent Kafka client (confluent-kafka).
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { InvalidArgumentError, JoinWindows } from "./index.js";
import { Runner, open, useEngine } from "./testing/app.js";
import { createTopics, produce, readUntil } from "./testing/kafka.js";

useEngine();

const text = (rs: readonly { key: Buffer | null; value: Buffer | null }[]): string[] =>
  rs.map((r) => `${r.key?.toString("utf8")}:${r.value?.toString("utf8")}`).sort();

describe("stream-stream joins against the real engine", { concurrency: false }, () => {
  test("a left join emits a view no click joined once its window closed, never before", async () => {
    const app = await open();
    try {
      assert.ok(app.brokers);
      await createTopics(app.brokers, { views: 1, clicks: 1, joined: 1 });
      const views = app.stream("views", { key: "string", value: "string" });
      const clicks = app.stream("clicks", { key: "string", value: "string" });
      const joined = views.leftJoin(clicks, async (v: unknown, c: unknown) => `${String(v)}+${String(c)}`, JoinWindows.ofTimeDifferenceAndGrace(100, 0));
      assert.equal((await joined.handle).node, "KSTREAM-MERGE-0000000006");
      joined.to("joined");
      assert.match(
        await app.describe(),
        /Processor: KSTREAM-JOINTHIS-0000000004 \(stores: \[KSTREAM-OUTEROTHER-0000000005-store, KSTREAM-OUTERSHARED-0000000004-store\]\)/,
      );
      const runner = new Runner(app);
      const wait = (n: number) => readUntil(app.brokers!, "joined", (rs) => rs.length >= n, { timeoutMs: 60_000, check: runner.check });
      await produce(app.brokers, "views", [{ key: "k", value: "v1", timestamp: 1000 }]);
      await produce(app.brokers, "clicks", [{ key: "k", value: "c1", timestamp: 1050 }]);
      assert.deepEqual(text(await wait(1)), ["k:v1+c1"]);
      await produce(app.brokers, "views", [
        { key: "k", value: "v2", timestamp: 2000 },
        { key: "k", value: "v3", timestamp: 2101 }, // stream time past v2's window
      ]);
      assert.deepEqual(text(await wait(2)), ["k:v1+c1", "k:v2+null"]);
      await app.stop();
      await runner.done;
    } finally {
      await app.close();
    }
  });

  test("bad stream-stream joins are refused, naming what is wrong", async () => {
    const app = await open();
    try {
      const l = app.stream("l", { key: "string", value: "string" });
      const r = app.stream("r", { key: "string", value: "string" });
      const bad = l.join(r, (a: unknown) => a, JoinWindows.ofTimeDifferenceAndGrace(10, -1));
      await assert.rejects(bad.handle, (e: unknown) => e instanceof InvalidArgumentError && /grace_ms -1/.test(e.message));
      assert.throws(() => l.join(r, (a: unknown) => a, 10 as unknown as JoinWindows), /joining two streams takes JoinWindows/);
      const outer = l.outerJoin(r, (a, b) => `${String(a)}|${String(b)}`, JoinWindows.ofTimeDifferenceWithNoGrace(10).before(0), {
        name: "pair",
        storeName: "ab",
      });
      assert.equal((await outer.handle).node, "pair-merge");
      assert.match(await app.describe(), /ab-outer-shared-join-store/);
    } finally {
      await app.close();
    }
  });
});
