// The App's side of processors against a fake engine: the builder calls
// (addStateStore, process, processValues, Topology) as Build requests, the
// host feature, withMetadata's registration, and run() serving a processor
// bundle whose missing key is a Read of this session, answered by the engine.

import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { afterEach, beforeEach, describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import {
  type BuildRequest,
  BuildResponseSchema,
  BundleEntry_Kind,
  type BundleResult,
  ExchangeResponseSchema,
  Kind,
  Metadata,
  Operation,
  type ReadRequest,
  ReadResponseSchema,
  type RegisterFunctionRequest,
  State,
  StoreType,
} from "./gen/polystreams/v1alpha1/engine_pb.js";
import { App, type Processor, type ProcessorContext, type ProcessorKeyValueStore, type Record, Stores, withMetadata } from "./index.js";
import { FakeEngine } from "./testing/fake_engine.js";

let engine: FakeEngine;
let builds: BuildRequest[];
let registered: RegisterFunctionRequest[];

beforeEach(async () => {
  engine = await FakeEngine.start();
  builds = [];
  registered = [];
  let next = 0n;
  engine.handlers.registerFunction = (req: RegisterFunctionRequest) => {
    registered.push(req);
    return { token: registered.length };
  };
  engine.handlers.build = (req: BuildRequest) => {
    builds.push(req);
    const c = req.operation.case;
    if (c === "stream" || c === "process" || c === "filter" || c === "mapValues") {
      return create(BuildResponseSchema, { handle: { id: ++next, kind: Kind.STREAM } });
    }
    return create(BuildResponseSchema, {});
  };
});

afterEach(async () => {
  await engine.close();
});

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
    this.ctx.forward(r.withValue(n));
  }
}

describe("processors through the App", { timeout: 30_000 }, () => {
  test("builder calls become AddStateStore, Process and Topology ops; withMetadata registers READ or WRITE", async () => {
    let features: string[] = [];
    engine.handlers.openSession = (req) => {
      features = [...req.hostFeatures];
      return { sessionId: "sess-1", config: {} };
    };
    const app = await App.create("p", { engine: engine.url });
    try {
      await app.addStateStore(Stores.windowStore("w", { retentionMs: 1000, windowSizeMs: 100, key: "string", value: "long" }).withCachingEnabled().withLoggingEnabled({ "retention.ms": "5000" }));
      app
        .stream("in", { key: "string", value: "string" })
        .filter(withMetadata((_k, _v, m) => m.partition === 0))
        .mapValues(withMetadata((v, m) => `${v}@${m.offset}`, { write: true }))
        .process(() => new Counter(), { stores: ["w"], name: "count", value: "long" })
        .processValues(() => ({ process() {} }), { value: "long" });
      app.topology().addSource("src", ["a", "b"], { key: "string" }).addProcessor("p", () => new Counter(), "src").addSink("out", "o", "p", { value: "long" }).addStateStore(Stores.keyValueStore("kv").withLoggingDisabled(), "p");
      await app.built();
    } finally {
      await app.close();
    }
    assert.ok(features.includes("processors") && features.includes("metadata"), features.join(", "));
    const ops = builds.map((b) => b.operation);
    assert.deepEqual(
      ops.map((o) => o.case),
      ["addStateStore", "stream", "filter", "mapValues", "process", "process", "addSource", "addProcessor", "addSink", "addStateStore"],
    );
    const w = ops[0]!.value as { name: string; type: StoreType; retentionMs: bigint; windowSizeMs: bigint; keySerde: string; caching: boolean; changelogConfig: { [k: string]: string } };
    assert.deepEqual([w.name, w.type, w.retentionMs, w.windowSizeMs, w.keySerde, w.caching, w.changelogConfig], ["w", StoreType.WINDOW, 1000n, 100n, "string", true, { "retention.ms": "5000" }]);
    const p = ops[4]!.value as { stores: string[]; name: string; valuesOnly: boolean; valueSerde: string };
    assert.deepEqual([p.stores, p.name, p.valuesOnly, p.valueSerde], [["w"], "count", false, "long"]);
    assert.equal((ops[5]!.value as { valuesOnly: boolean }).valuesOnly, true);
    assert.deepEqual((ops[9]!.value as { processors: string[]; loggingDisabled: boolean }).processors, ["p"]);
    assert.equal((ops[9]!.value as { loggingDisabled: boolean }).loggingDisabled, true);
    assert.deepEqual((ops[8]!.value as { parents: string[]; valueSerde: string }).parents, ["p"]);
    assert.deepEqual(registered.map((r) => r.metadata), [Metadata.READ, Metadata.WRITE, Metadata.UNSPECIFIED, Metadata.UNSPECIFIED, Metadata.UNSPECIFIED]);
  });

  test("run() serves a processor bundle: init, a Read of this session for a key the bundle did not bring, the ops as its result", async () => {
    const reads: ReadRequest[] = [];
    engine.handlers.read = (req: ReadRequest) => {
      reads.push(req);
      const v = Buffer.alloc(8);
      v.writeBigInt64BE(41n);
      return create(ReadResponseSchema, { keyLengths: [1], keys: Buffer.from("a"), valueLengths: [8], values: v });
    };
    const results: BundleResult[] = [];
    let sent = false;
    engine.handlers.exchange = async (req) => {
      results.push(...req.results);
      if (results.length > 0) {
        return create(ExchangeResponseSchema, { state: State.STOPPED });
      }
      if (sent) {
        await new Promise((r) => setTimeout(r, 10));
        return create(ExchangeResponseSchema, { state: State.RUNNING });
      }
      sent = true;
      return create(ExchangeResponseSchema, {
        state: State.RUNNING,
        bundles: [
          {
            id: 9n,
            steps: [{ token: 1, operation: Operation.PROCESS, node: "count", stores: ["counts"], children: ["sink"] }],
            keySerde: "string",
            valueSerde: "string",
            outputValueSerde: "long",
            keyLengths: [1, 1],
            keys: Buffer.from("aa"),
            valueLengths: [1, 1],
            values: Buffer.from("xy"),
            topic: "in",
            offsets: [0n, 1n],
            timestamps: [10n, 11n],
            task: "0_0",
            inits: [{ kind: BundleEntry_Kind.INIT, step: 0 }],
            stores: [{ store: "counts", keySerde: "string", valueSerde: "long", type: StoreType.KEY_VALUE }],
          },
        ],
      });
    };
    const app = await App.create("p", { engine: engine.url });
    try {
      await app.addStateStore(Stores.keyValueStore("counts", { key: "string", value: "long" }));
      app.stream("in", { key: "string", value: "string" }).process(() => new Counter(), { stores: ["counts"], value: "long" });
      await app.run({ signals: false });
    } finally {
      await app.close();
    }
    assert.deepEqual(
      reads.map((r) => [r.sessionId, r.bundleId, r.store, r.query.case, Buffer.from(r.query.value as Uint8Array).toString()]),
      [["sess-1", 9n, "counts", "get", "a"]],
      "one Read for key a; record 2 reads it back from the overlay",
    );
    assert.equal(results.length, 1);
    const r = results[0]!;
    assert.deepEqual(r.failures, []);
    assert.deepEqual(r.opCounts, [0, 2, 2]);
    const vals: bigint[] = [];
    for (let i = 0; i < r.opValueLengths.length; i++) {
      vals.push(Buffer.from(r.opValues).readBigInt64BE(i * 8));
    }
    assert.deepEqual(vals, [42n, 42n, 43n, 43n]);
  });
});
