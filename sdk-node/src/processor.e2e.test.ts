/**
 * The Processor API against the real engine: the README's processor
 * program run verbatim (the ```ts block under "### Processors" in
 * sdk-node/README.md, as readme.e2e.test.ts runs the first one), and the
 * test driver through process, processValues, a Topology built without the
 * DSL, stream-time punctuation, read-your-writes across records and the
 * errors that name node, store and call.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import { App, type FixedKeyProcessor, type FixedKeyProcessorContext, type FixedKeyRecord, type Processor, type ProcessorContext, type ProcessorKeyValueStore, type ProcessorVersionedKeyValueStore, type ProcessorWindowStore, InvalidArgumentError, PolystreamsError, ProcessingError, PUT_RETURN_CODE_NOT_PUT, Record, Stores, TopologyTestDriver } from "./index.js";
import { useEngine } from "./testing/app.js";
import { runReadmeBlock } from "./testing/readme.js";

useEngine();

test("the README's suppress-until-a-time-limit program runs verbatim", async () => {
  assert.equal(await runReadmeBlock("#### Suppress until a time limit"), '[["ann","v2",10000]]');
});

test("the README's processor program runs verbatim", async () => {
  assert.equal(await runReadmeBlock("### Processors"), "cat=2 dog=1");
});

test("the build side: process, processValues and a Topology with stores, as Kafka Streams describes them; build errors name node and store", async () => {
  await using app = await App.create(`proc-build-${process.pid}`);
  await app.addStateStore(Stores.keyValueStore("counts", { key: "string", value: "long" }));
  app.stream("in", { key: "string", value: "string" }).process(() => new Counter(), { stores: ["counts"], value: "long" }).to("out");
  app.stream("in2", { key: "string", value: "string" }).processValues(() => ({ process() {} }), { name: "pv" }).to("out2");
  app
    .topology()
    .addSource("src", "in3", { key: "string", value: "string" })
    .addProcessor("route", () => ({ process() {} }), "src")
    .addSink("alerts", "alerts-out", "route")
    .addStateStore(Stores.windowStore("w", { retentionMs: 1000, windowSizeMs: 100 }), "route");
  const text = await app.describe();
  assert.match(text, /Processor: KSTREAM-PROCESSOR-0000000001 \(stores: \[counts\]\)\n\s+--> KSTREAM-SINK-0000000002\n\s+<-- KSTREAM-SOURCE-0000000000/);
  assert.match(text, /Processor: pv \(stores: \[\]\)/);
  assert.match(text, /Source: src \(topics: \[in3\]\)\n\s+--> route\n\s+Processor: route \(stores: \[w\]\)\n\s+--> alerts\n\s+<-- src\n\s+Sink: alerts \(topic: alerts-out\)/);
  const bad = app.stream("in4").process(() => ({ process() {} }), { stores: ["nope"] });
  await assert.rejects(bad.handle, (e: unknown) => e instanceof InvalidArgumentError && /process: node KSTREAM-PROCESSOR-\d+ names store "nope", which no add_state_store added/.test(e.message));
  app.topology().addProcessor("orphan", () => ({ process() {} }), "no-such-parent");
  await assert.rejects(app.built(), (e: unknown) => e instanceof PolystreamsError && /add_processor: node "orphan" names parent "no-such-parent", which does not exist/.test(e.message));
});

/** Forwards (key, running count) and, every 10 ms of stream time, a ("tick", stream time) record to the child "ticks". */
class Counter implements Processor<string, string, string, bigint> {
  ctx!: ProcessorContext<string, bigint>;
  store!: ProcessorKeyValueStore<string, bigint>;
  init(ctx: ProcessorContext<string, bigint>): void {
    this.ctx = ctx;
    this.store = ctx.getStateStore("counts");
  }
  async process(r: Record<string, string>): Promise<void> {
    const n = ((await this.store.get(r.key)) ?? 0n) + 1n;
    this.store.put(r.key, n);
    this.ctx.forward(r.withValue(n).withTimestamp(r.timestamp + 1).withHeaders([["count", Buffer.from(String(n))]]));
  }
}

test("process: read-your-writes across records, new timestamp and headers, the store queryable", async () => {
  await using driver = await TopologyTestDriver.create("proc-count");
  await driver.addStateStore(Stores.keyValueStore("counts", { key: "string", value: "long" }));
  driver.stream("in", { key: "string", value: "string" }).process(() => new Counter(), { stores: ["counts"], value: "long" }).to("out");
  for (const [k, t] of [["a", 10], ["b", 20], ["a", 30]] as const) {
    await driver.pipeInput("in", k, "x", { timestamp: t });
  }
  const out = await driver.readOutput("out");
  assert.deepEqual(out.map((r) => [r.key, r.value, r.timestamp, r.headers.map(([k, v]) => [k, Buffer.from(v!).toString()])]), [
    ["a", 1n, 11, [["count", "1"]]],
    ["b", 1n, 21, [["count", "1"]]],
    ["a", 2n, 31, [["count", "2"]]],
  ]);
  assert.equal(await (await driver.getStore<string, bigint>("counts")).get("a"), 2n);
});

test("a stream-time punctuator that sweeps the store", async () => {
  class Sum implements Processor<string, string, string, bigint> {
    ctx!: ProcessorContext<string, bigint>;
    store!: ProcessorKeyValueStore<string, bigint>;
    init(ctx: ProcessorContext<string, bigint>): void {
      this.ctx = ctx;
      this.store = ctx.getStateStore("sums");
      ctx.schedule(100, "stream_time", async (t) => {
        for await (const [k, v] of this.store.all()) {
          this.ctx.forward(new Record(k, v, t));
          this.store.delete(k);
        }
      });
    }
    async process(r: Record<string, string>): Promise<void> {
      this.store.put(r.key, ((await this.store.get(r.key)) ?? 0n) + BigInt(r.value.length));
    }
  }
  await using driver = await TopologyTestDriver.create("proc-sum");
  await driver.addStateStore(Stores.keyValueStore("sums", { key: "string", value: "long" }));
  driver.stream("in", { key: "string", value: "string" }).process(() => new Sum(), { stores: ["sums"], value: "long" }).to("out");
  await driver.pipeInput("in", "a", "xx", { timestamp: 150 });
  await driver.pipeInput("in", "b", "yyy", { timestamp: 160 });
  await driver.pipeInput("in", "a", "z", { timestamp: 210 });
  // Kafka Streams aligns stream-time schedules to 0: the first punctuation
  // runs at the first record's stream time (150), the next once stream time
  // reaches 200 (at 210), then 300.
  assert.deepEqual((await driver.readOutput("out")).map((r) => [r.key, r.value, r.timestamp]), [["a", 2n, 150], ["a", 1n, 210], ["b", 3n, 210]]);
  await driver.pipeInput("in", "c", "w", { timestamp: 260 });
  assert.deepEqual(await driver.readOutput("out"), []);
  await driver.pipeInput("in", "c", "w", { timestamp: 300 });
  assert.deepEqual((await driver.readOutput("out")).map((r) => [r.key, r.value, r.timestamp]), [["c", 2n, 300]]);
});

test("processValues forwards keep the input's key", async () => {
  class Len implements FixedKeyProcessor<string, string, number> {
    ctx!: FixedKeyProcessorContext<string, number>;
    init(ctx: FixedKeyProcessorContext<string, number>): void {
      this.ctx = ctx;
    }
    process(r: FixedKeyRecord<string, string>): void {
      this.ctx.forward(r.withValue(r.value.length));
      this.ctx.forward(r.withValue(-1));
    }
  }
  await using driver = await TopologyTestDriver.create("proc-values");
  driver.stream("in", { key: "string", value: "string" }).processValues(() => new Len(), { value: "integer" }).to("out");
  await driver.pipeInput("in", "k", "abc");
  assert.deepEqual((await driver.readOutput("out")).map((r) => [r.key, r.value]), [["k", 3], ["k", -1]]);
});

test("a Topology built without the DSL: source, processor forwarding to a named child, sinks", async () => {
  class Route implements Processor<string, string, string, string> {
    ctx!: ProcessorContext<string, string>;
    init(ctx: ProcessorContext<string, string>): void {
      this.ctx = ctx;
    }
    process(r: Record<string, string>): void {
      this.ctx.forward(r.withKey(r.value), r.value.startsWith("!") ? "alerts" : "normal");
    }
  }
  await using driver = await TopologyTestDriver.create("proc-topology");
  driver
    .topology()
    .addSource("src", "in", { key: "string", value: "string" })
    .addProcessor("route", () => new Route(), "src")
    .addSink("alerts", "alerts-out", "route")
    .addSink("normal", "normal-out", "route");
  const text = await driver.app.describe();
  assert.match(text, /Processor: route \(stores: \[\]\)\n\s+--> alerts, normal/);
  await driver.pipeInput("in", "k", "!fire");
  await driver.pipeInput("in", "k", "ok");
  assert.deepEqual((await driver.readOutput("alerts-out")).map((r) => [r.key, r.value]), [["!fire", "!fire"]]);
  assert.deepEqual((await driver.readOutput("normal-out")).map((r) => [r.key, r.value]), [["ok", "ok"]]);
});

test("a processor that forwards to an unknown child fails its record naming node and child", async () => {
  class Bad implements Processor {
    ctx!: ProcessorContext;
    init(ctx: ProcessorContext): void {
      this.ctx = ctx;
    }
    process(r: Record): void {
      this.ctx.forward(r, "nowhere");
    }
  }
  await using driver = await TopologyTestDriver.create("proc-bad");
  driver.stream("in", { key: "string", value: "string" }).process(() => new Bad(), { name: "bad" }).to("out");
  await assert.rejects(driver.pipeInput("in", "k", "v"), (e: unknown) => e instanceof ProcessingError && /forward: node bad has no child "nowhere"/.test(e.message));
});

test("a key the bundle did not bring is read from the engine (Read); a record that throws keeps what it forwarded before, under log_and_continue", async () => {
  class Total implements Processor<string, string, string, bigint> {
    ctx!: ProcessorContext<string, bigint>;
    store!: ProcessorKeyValueStore<string, bigint>;
    init(ctx: ProcessorContext<string, bigint>): void {
      this.ctx = ctx;
      this.store = ctx.getStateStore("totals");
    }
    async process(r: Record<string, string>): Promise<void> {
      // "all" is no record's key: never prefetched, so each bundle's first get of it is a Read.
      const n = ((await this.store.get("all")) ?? 0n) + 1n;
      this.store.put("all", n);
      this.ctx.forward(r.withValue(n));
      if (r.value === "bad") {
        throw new Error(`bad record ${r.key}`);
      }
    }
  }
  await using driver = await TopologyTestDriver.create("proc-total", { config: { extra: { "processing.exception.handler": "log_and_continue" } } });
  await driver.addStateStore(Stores.keyValueStore("totals", { key: "string", value: "long" }));
  driver.stream("in", { key: "string", value: "string" }).process(() => new Total(), { stores: ["totals"], value: "long" }).to("out");
  await driver.pipeInput("in", "a", "ok");
  await driver.pipeInput("in", "b", "bad");
  await driver.pipeInput("in", "c", "ok");
  // Kafka Streams' ProcessorNode: the failed record's put and forward stand (nothing is undone).
  assert.deepEqual((await driver.readOutput("out")).map((r) => [r.key, r.value]), [["a", 1n], ["b", 2n], ["c", 3n]]);
  assert.equal(await (await driver.getStore<string, bigint>("totals")).get("all"), 3n);
});

test("a window store: put with a window start, fetch and fetchRange read it back through the engine", async () => {
  const fetched: unknown[] = [];
  class Windows implements Processor<string, string, string, bigint> {
    store!: ProcessorWindowStore<string, bigint>;
    init(ctx: ProcessorContext<string, bigint>): void {
      this.store = ctx.getStateStore("w");
    }
    async process(r: Record<string, string>): Promise<void> {
      const start = r.timestamp - (r.timestamp % 100);
      const n = ((await this.store.fetch(r.key, start)) ?? 0n) + 1n;
      this.store.put(r.key, n, start);
      const rows: [number, bigint][] = [];
      for await (const row of this.store.fetchRange(r.key, 0, 1000)) {
        rows.push(row);
      }
      fetched.push(rows);
    }
  }
  await using driver = await TopologyTestDriver.create("proc-window");
  await driver.addStateStore(Stores.windowStore("w", { key: "string", value: "long", retentionMs: 10_000, windowSizeMs: 100 }));
  driver.stream("in", { key: "string", value: "string" }).process(() => new Windows(), { stores: ["w"] });
  await driver.pipeInput("in", "k", "x", { timestamp: 110 });
  await driver.pipeInput("in", "k", "x", { timestamp: 150 });
  await driver.pipeInput("in", "k", "x", { timestamp: 250 });
  assert.deepEqual(fetched, [[[100, 1n]], [[100, 2n]], [[100, 2n], [200, 1n]]]);
});

test("the README's routing program runs verbatim", async () => {
  assert.equal(await runReadmeBlock("### Routing: stream partitioners and topic name extractors"), '["eu:book","us:pen"]');
});

test("a processor's versioned store: put answers validTo or NOT_PUT, as-of reads, a Read for a key the bundle lacks, delete; the engine's store answers the same", async () => {
  class PriceHistory implements Processor<string, string, string, string> {
    private ctx!: ProcessorContext<string, string>;
    private prices!: ProcessorVersionedKeyValueStore<string, bigint>;
    init(ctx: ProcessorContext<string, string>): void {
      this.ctx = ctx;
      this.prices = ctx.getStateStore("prices");
    }
    async process(r: Record<string, string>): Promise<void> {
      const show = (v: { value: bigint; timestamp: number; validTo: number | undefined } | undefined): string =>
        v === undefined ? "none" : `${v.value}@${v.timestamp}${v.validTo === undefined ? "" : `<${v.validTo}`}`;
      const ts = r.timestamp;
      let out: string;
      if (r.value === "del") {
        out = `deleted ${show(await this.prices.delete(r.key, ts))} latest ${show(await this.prices.get(r.key))}`;
      } else {
        // Not awaited: the store runs its calls in call order all the same.
        const put = this.prices.put(r.key, BigInt(r.value), ts);
        const latest = this.prices.get(r.key);
        const before = this.prices.get(r.key, { asOf: ts - 1 });
        out = `put ${BigInt(await put)} latest ${show(await latest)} before ${show(await before)}`;
        if (r.key === "pear") {
          out += ` apple ${show(await this.prices.get("apple", { asOf: ts }))}`;
        }
      }
      this.ctx.forward(r.withValue(out));
    }
  }
  await using driver = await TopologyTestDriver.create("proc-versioned");
  await driver.addStateStore(Stores.versionedKeyValueStore("prices", { key: "string", value: "long", historyRetentionMs: 1000 }));
  driver.stream("in", { key: "string", value: "string" }).process(() => new PriceHistory(), { stores: ["prices"] }).to("out");
  for (const [k, v, t] of [["apple", "10", 1000], ["apple", "12", 3000], ["apple", "11", 2000], ["pear", "5", 2500], ["apple", "9", 100], ["apple", "del", 3500]] as const) {
    await driver.pipeInput("in", k, v, { timestamp: t });
  }
  const out = await driver.readOutput("out");
  assert.deepEqual(
    out.map((r) => r.value),
    [
      "put -1 latest 10@1000 before none",
      "put -1 latest 12@3000 before 10@1000",
      "put 3000 latest 12@3000 before none", // in the past; as of 1999 (< 3000 - 1000) only a latest version is found
      "put -1 latest 5@2500 before none apple 11@2000",
      `put ${BigInt(PUT_RETURN_CODE_NOT_PUT)} latest 12@3000 before none`, // older than the history retention
      "deleted 12@3000 latest none",
    ],
  );
  const prices = await driver.getVersionedStore<string, bigint>("prices");
  assert.deepEqual(await prices.get("apple", { asOf: 2500 }), { value: 11n, timestamp: 2000, validTo: 3000 });
  assert.equal(await prices.get("apple"), undefined);
  assert.throws(() => Stores.versionedKeyValueStore("p", { historyRetentionMs: -1 }), /historyRetentionMs must be a non-negative integer/);
});

test("the README's versioned store program runs verbatim", async () => {
  assert.equal(await runReadmeBlock("#### A processor's versioned store"), '["was none, valid to -1","was 10, valid to -1","was 10, valid to 200000","too late"]');
});
