/**
 * KTable.transformValues against the real engine, in test driver sessions:
 * a transformer with a store and a materialized result, old values through
 * the transformer for a groupBy, a transformer that forwards or throws, and
 * an unknown store.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import { InvalidArgumentError, ProcessingError, type ProcessorContext, type ProcessorKeyValueStore, Stores, TopologyTestDriver, type ValueTransformerWithKey } from "./index.js";
import { useEngine } from "./testing/app.js";
import { runReadmeBlock } from "./testing/readme.js";

useEngine();

/** Tags each value with how many values its key has had (store "versions"). */
class Versioner implements ValueTransformerWithKey<string, string, string> {
  versions!: ProcessorKeyValueStore<string, bigint>;
  init(ctx: ProcessorContext<string, string>): void {
    this.versions = ctx.getStateStore("versions");
  }
  async transform(key: string, value: string | null): Promise<string> {
    const n = ((await this.versions.get(key)) ?? 0n) + 1n;
    this.versions.put(key, n);
    return value === null ? `${key} deleted (v${n})` : `${value} (v${n})`;
  }
}

test("transformValues: a transformer with a store, materialized and queryable", async () => {
  await using driver = await TopologyTestDriver.create("tv-store");
  await driver.addStateStore(Stores.keyValueStore("versions", { key: "string", value: "long" }));
  const tagged = driver.table("users", { key: "string", value: "string" }).transformValues(() => new Versioner(), { stores: ["versions"], materialized: "tagged" });
  await tagged.toStream().to("tagged-users");
  await driver.pipeInput("users", "ann", "paris", { timestamp: 1 });
  await driver.pipeInput("users", "ann", "rome", { timestamp: 2 });
  await driver.pipeInput("users", "ann", null, { timestamp: 3 });
  assert.deepEqual((await driver.readOutput("tagged-users")).map((r) => [r.key, r.value, r.timestamp]), [
    ["ann", "paris (v1)", 1],
    ["ann", "rome (v2)", 2],
    ["ann", "ann deleted (v3)", 3],
  ]);
  assert.equal(await (await driver.getStore<string, string>("tagged")).get("ann"), "ann deleted (v3)");
});

test("transformValues: old values pass through the transformer for a groupBy", async () => {
  // KTableTransformValuesTest#shouldCalculateCorrectOldValuesIfNotStatefulEvenIfNotMaterialized.
  await using driver = await TopologyTestDriver.create("tv-old");
  const lengths = driver.table("in", { key: "string", value: "string" }).transformValues<bigint>(() => ({ transform: (_k, v) => (v === null ? null : BigInt(v.length)) }), { value: "long" });
  await lengths.groupBy((k, v) => [v, k] as const, { key: "long", value: "string" }).count().toStream().to("out", { key: "long", value: "long" });
  for (const [v, t] of [["a", 5], ["aa", 15], ["aaa", 10]] as const) {
    await driver.pipeInput("in", "A", v, { timestamp: t });
  }
  assert.deepEqual((await driver.readOutput("out")).map((r) => [r.key, r.value]), [[1n, 1n], [1n, 0n], [2n, 1n], [2n, 0n], [3n, 1n]]);
});

test("transformValues: the transformer cannot forward; the failure names the node", async () => {
  await using driver = await TopologyTestDriver.create("tv-forward");
  let ctx: ProcessorContext | undefined;
  const forwarder = (): ValueTransformerWithKey<string, string, string> => ({
    init: (c) => void (ctx = c as ProcessorContext),
    transform: (_k, v) => {
      ctx!.forward(v as never);
      return v;
    },
  });
  await driver.table("in", { key: "string", value: "string" }).transformValues(forwarder, { name: "fwd" }).toStream().to("out");
  await assert.rejects(driver.pipeInput("in", "k", "v"), (e: unknown) => e instanceof ProcessingError && /forward: node fwd is a transform_values node/.test(e.message));
});

test("transformValues: an unknown store is refused naming node and store", async () => {
  await using driver = await TopologyTestDriver.create("tv-unknown");
  const t = driver.table("in", { key: "string", value: "string" }).transformValues(() => ({ transform: (_k, v) => v }), { stores: ["nope"] });
  await assert.rejects(t.handle, (e: unknown) => e instanceof InvalidArgumentError && /node KTABLE-TRANSFORMVALUES-0000000003 names store "nope", which no add_state_store added/.test(e.message));
});

test("the README's transformValues program runs verbatim", async () => {
  assert.deepEqual(JSON.parse(await runReadmeBlock("#### Transforming a table's values with state")), {
    changes: [["ann", "paris (v1)"], ["ann", "rome (v2)"], ["ann", "ann deleted (v3)"]],
    stored: "ann deleted (v3)",
  });
});
