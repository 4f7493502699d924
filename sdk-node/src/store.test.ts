/**
 * Interactive queries and state listeners against a fake engine (the real
 * engine's side is in app.e2e.test.ts): paging, decoding, errors, restore
 * progress, and queries beside a long Exchange.
 */

import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { afterEach, beforeEach, describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { type ExchangeResponse, ExchangeResponseSchema, type QueryRequest, QueryResponseSchema, State } from "./gen/polystreams/v1alpha1/engine_pb.js";
import {
  App,
  Entries,
  FailedPreconditionError,
  KeyValueStore,
  NotFoundError,
  PolystreamsError,
  ProcessingError,
  type RestoreProgress,
} from "./index.js";
import { encodeColumn } from "./serde.js";
import { FakeEngine } from "./testing/fake_engine.js";

let engine: FakeEngine;
let app: App | undefined;

beforeEach(async () => {
  engine = await FakeEngine.start();
});

afterEach(async () => {
  await app?.close();
  app = undefined;
  await engine.close();
});

async function open(): Promise<App> {
  app = await App.create("x", { engine: engine.url });
  return app;
}

/** A fake store behind Query: string keys, long values, sorted by UTF-8 bytes as the engine does. */
class FakeStore {
  readonly requests: QueryRequest[] = [];
  running = true;
  constructor(
    readonly data: Record<string, number>,
    readonly name = "counts",
  ) {
    engine.handlers.query = (req) => this.query(req);
  }

  query(req: QueryRequest) {
    this.requests.push(req);
    if (req.store !== this.name) {
      throw new ConnectError(`Query: store "${req.store}" does not exist (stores: ${this.name})`, Code.NotFound);
    }
    if (!this.running) {
      throw new ConnectError(`Query: store "${req.store}" is not queryable before Start: the topology is not running`, Code.FailedPrecondition);
    }
    let items = Object.entries(this.data)
      .map(([k, v]) => [Buffer.from(k), v] as const)
      .sort(([a], [b]) => Buffer.compare(a, b));
    const q = req.query;
    if (q.case === "get") {
      items = items.filter(([k]) => k.equals(q.value));
    } else if (q.case === "range") {
      const { from, to } = q.value;
      items = items.filter(([k]) => (from === undefined || Buffer.compare(k, from) >= 0) && (to === undefined || Buffer.compare(k, to) <= 0));
    } else if (q.case === "prefix") {
      items = items.filter(([k]) => k.subarray(0, q.value.length).equals(q.value));
    }
    const limit = req.limit || 100_000;
    const truncated = items.length > limit;
    items = items.slice(0, limit);
    const keys = encodeColumn("bytes", items.map(([k]) => k));
    const values = encodeColumn("long", items.map(([, v]) => BigInt(v)));
    return create(QueryResponseSchema, {
      keyLengths: keys.lengths,
      keys: keys.data,
      valueLengths: values.lengths,
      values: values.data,
      keySerde: "string",
      valueSerde: "long",
      truncated,
    });
  }
}

describe("queries", { timeout: 30_000 }, () => {
  test("get, range, prefix, all: decoded with the store's serdes, in serialized key order", async () => {
    const fake = new FakeStore({ b: 2, a: 1, ab: 12, c: 3, é: 5 });
    const s = (await open()).store<string, bigint>("counts");
    assert.ok(s instanceof KeyValueStore);
    assert.equal(s.name, "counts");
    assert.equal(await s.get("a"), 1n); // learns the key serde first
    assert.deepEqual(fake.requests.map((r) => r.query.case), ["all", "get"]);
    assert.equal(fake.requests[0]!.limit, 1);
    assert.equal(fake.requests[1]!.sessionId, "sess-1");
    assert.equal(await s.get("zz"), undefined);
    const all = s.all();
    assert.ok(all instanceof Entries);
    assert.deepEqual(await all.toArray(), [["a", 1n], ["ab", 12n], ["b", 2n], ["c", 3n], ["é", 5n]]);
    assert.deepEqual(await s.range({ from: "ab", to: "c" }).toArray(), [["ab", 12n], ["b", 2n], ["c", 3n]]);
    assert.deepEqual(await s.range({ to: "ab" }).toArray(), [["a", 1n], ["ab", 12n]]);
    assert.deepEqual(await s.range({ from: "c" }).toArray(), [["c", 3n], ["é", 5n]]);
    const last = fake.requests.at(-1)!.query;
    assert.ok(last.case === "range" && last.value.to === undefined && Buffer.from(last.value.from!).toString() === "c");
    assert.deepEqual(await s.prefix("a").toArray(), [["a", 1n], ["ab", 12n]]);
    const p = fake.requests.at(-1)!.query;
    assert.ok(p.case === "prefix" && Buffer.from(p.value).toString() === "a");
    assert.deepEqual(await s.prefix(Uint8Array.of(0xc3)).toArray(), [["é", 5n]]);
    assert.equal(await s.approximateNumEntries(), 5);
    const seen: string[] = [];
    for await (const [k] of s.all()) {
      seen.push(k);
    }
    assert.deepEqual(seen, ["a", "ab", "b", "c", "é"]);
  });

  test("a truncated answer is continued page by page from just after its last key", async () => {
    const data = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${String(i).padStart(2, "0")}`, i]));
    const fake = new FakeStore(data);
    const s = (await open()).store<string, bigint>("counts", { pageSize: 3 });
    const want = Object.entries(data).map(([k, v]) => [k, BigInt(v)]);
    assert.deepEqual(await s.all().toArray(), want);
    assert.equal(fake.requests.length, 4); // 3 + 3 + 3 + 1
    assert.ok(fake.requests.every((r) => r.limit === 3));
    const second = fake.requests[1]!.query;
    assert.ok(second.case === "range");
    assert.deepEqual(Buffer.from(second.value.from!), Buffer.from("k02\0"));
    fake.requests.length = 0;
    assert.deepEqual(await s.range({ from: "k03", to: "k07" }).toArray(), want.slice(3, 8));
    for (const r of fake.requests.slice(1)) {
      assert.ok(r.query.case === "range" && Buffer.from(r.query.value.to!).toString() === "k07", "every page keeps the upper bound");
    }
    // A prefix continues as a range and stops at the first key past the prefix.
    data["l00"] = 100;
    data["k1"] = 1;
    assert.deepEqual(await s.prefix("k0").toArray(), want);
    assert.deepEqual(await s.prefix("k1").toArray(), [["k1", 1n]]);
  });

  test("unknown store, before start, closed app: named errors", async () => {
    const fake = new FakeStore({ a: 1 });
    const a = await open();
    await assert.rejects(a.store("nope").get("a"), (e: unknown) => {
      assert.ok(e instanceof NotFoundError, String(e));
      assert.match(e.message, /"nope"/);
      assert.match(e.message, /counts/);
      return true;
    });
    await assert.rejects(a.store("nope").all().toArray(), NotFoundError);
    fake.running = false;
    await assert.rejects(a.store("counts").range({ from: "a" }).toArray(), (e: unknown) => {
      assert.ok(e instanceof FailedPreconditionError && e.code === "failed_precondition", String(e));
      assert.match(e.message, /"counts" is not queryable before Start/);
      return true;
    });
    assert.throws(() => a.store(""), TypeError);
    assert.throws(() => a.store("counts", { pageSize: 0 }), /pageSize 0 is out of range \(1\.\.100000\)/);
    assert.throws(() => a.store("counts", { pageSize: 100_001 }), RangeError);
    fake.running = true;
    await assert.rejects(a.store("counts").get(null as never), /store "counts": get: a key must not be null/);
    await assert.rejects(a.store("counts").get({ x: 1n } as never), /store "counts": get: cannot encode key .* with key serde "string"/);
    await a.close();
    await assert.rejects(a.store("counts").get("a"), (e: unknown) => e instanceof FailedPreconditionError && /app "x" is closed/.test(e.message));
  });

  test("an answer that does not decode is an error naming the store", async () => {
    engine.handlers.query = () => create(QueryResponseSchema, { keyLengths: [1], keys: Buffer.from("a"), valueLengths: [3], values: Buffer.from("abc"), keySerde: "string", valueSerde: "long" });
    const a = await open();
    await assert.rejects(a.store("counts").all().toArray(), (e: unknown) => {
      assert.ok(e instanceof PolystreamsError && e.code === "internal", String(e));
      assert.match(e.message, /Query "counts": the engine's answer does not decode/);
      return true;
    });
  });

  test("queries do not wait for run()'s long Exchange", async () => {
    new FakeStore({ a: 1 });
    let inExchange!: () => void;
    const exchanging = new Promise<void>((r) => (inExchange = r));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let exchangeReturned = false;
    engine.handlers.exchange = async () => {
      inExchange();
      // A long poll holding its stream open until the queries are answered
      // (or 10 s, so a regression fails the assertion below, not the run).
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([released, new Promise((r) => (timer = setTimeout(r, 10_000)))]);
      clearTimeout(timer);
      exchangeReturned = true;
      return create(ExchangeResponseSchema, { state: State.STOPPED });
    };
    const a = await open();
    const s = a.store<string, bigint>("counts");
    const run = a.run({ signals: false });
    await exchanging;
    const answers = await Promise.all(Array.from({ length: 10 }, () => s.get("a")));
    assert.equal(exchangeReturned, false, "the queries were answered only after the Exchange returned");
    assert.deepEqual(answers, Array(10).fill(1n));
    release();
    await run;
  });
});

function exchange(state: State, restore?: Partial<Record<"restoredRecords" | "totalRecords", bigint> & Record<"restoringPartitions" | "totalPartitions", number>>): ExchangeResponse {
  return create(ExchangeResponseSchema, { state, ...(restore ? { restore } : {}) });
}

describe("state", { timeout: 30_000 }, () => {
  test("onStateChange sees each change once, restoring included; onRestoreProgress each new figure", async () => {
    engine.exchanges.push(
      exchange(State.REBALANCING),
      exchange(State.REBALANCING),
      exchange(State.RESTORING, { restoredRecords: 0n, totalRecords: 1000n, restoringPartitions: 2, totalPartitions: 2 }),
      exchange(State.RESTORING, { restoredRecords: 400n, totalRecords: 1000n, restoringPartitions: 1, totalPartitions: 2 }),
      exchange(State.RESTORING, { restoredRecords: 400n, totalRecords: 1000n, restoringPartitions: 1, totalPartitions: 2 }),
      exchange(State.RUNNING, { restoredRecords: 1000n, totalRecords: 1000n, restoringPartitions: 0, totalPartitions: 2 }),
      exchange(State.RUNNING, { restoredRecords: 1000n, totalRecords: 1000n, restoringPartitions: 0, totalPartitions: 2 }),
    );
    const a = await open();
    assert.equal(a.restoreProgress, undefined);
    const seen: [string, string][] = [];
    const progress: RestoreProgress[] = [];
    const listener = a.onStateChange((next, old) => {
      seen.push([next, old]);
      if (next === "running") {
        void a.stop();
      }
    });
    assert.equal(typeof listener, "function");
    a.onStateChange(() => {
      throw new Error("listener bug"); // reported as a warning, ignored
    });
    a.onRestoreProgress((p) => progress.push(p));
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(w.message);
    process.on("warning", onWarning);
    try {
      await a.run({ signals: false });
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off("warning", onWarning);
    }
    assert.deepEqual(seen, [
      ["rebalancing", "created"],
      ["restoring", "rebalancing"],
      ["running", "restoring"],
      ["stopped", "running"],
    ]);
    assert.deepEqual(
      progress.map((p) => [p.restoredRecords, p.totalRecords, p.restoringPartitions, p.totalPartitions]),
      [
        [0, 1000, 2, 2],
        [400, 1000, 1, 2],
        [1000, 1000, 0, 2],
      ],
    );
    assert.deepEqual(a.restoreProgress, { restoredRecords: 1000, totalRecords: 1000, restoringPartitions: 0, totalPartitions: 2 });
    assert.ok(warnings.some((w) => /state listener .* on created -> rebalancing failed: Error: listener bug/.test(w)), warnings.join("\n"));
    assert.throws(() => a.onStateChange(42 as never), /onStateChange: want a function, got number/);
    assert.throws(() => a.onRestoreProgress(null as never), /onRestoreProgress: want a function, got null/);
  });

  test("the error state reaches the listeners before run() rejects", async () => {
    engine.exchanges.push(exchange(State.RUNNING), create(ExchangeResponseSchema, { state: State.ERROR, error: "boom" }));
    const a = await open();
    const seen: [string, string][] = [];
    a.onStateChange((next, old) => void seen.push([next, old]));
    await assert.rejects(a.run({ signals: false }), ProcessingError);
    assert.deepEqual(seen, [
      ["running", "created"],
      ["error", "running"],
    ]);
  });

  test("state() answers the engine's state, restoring included, and its restore progress", async () => {
    engine.handlers.getState = () => ({
      state: State.RESTORING,
      restore: { restoredRecords: 5n, totalRecords: 9n, restoringPartitions: 1, totalPartitions: 3 },
    });
    const a = await open();
    assert.equal(await a.state(), "restoring");
    assert.deepEqual(a.restoreProgress, { restoredRecords: 5, totalRecords: 9, restoringPartitions: 1, totalPartitions: 3 });
  });
});

describe("interactive queries across instances", () => {
  test("query() carries timestamp, partition and standby; enableStaleStores reaches the engine; metadata decodes", async () => {
    const seen: QueryRequest[] = [];
    engine.handlers.query = (req) => {
      seen.push(req);
      if (req.query.case === "all") {
        return create(QueryResponseSchema, { keySerde: "string", valueSerde: "long" });
      }
      if (req.query.case === "get" && Buffer.from(req.query.value).toString() === "gone") {
        throw new ConnectError('Query: store "counts" key "gone" (partition 2) is not queryable here now: retry', Code.Unavailable);
      }
      const k = encodeColumn("string", ["k"]);
      const v = encodeColumn("long", [7n]);
      return create(QueryResponseSchema, {
        keys: k.data, keyLengths: k.lengths, values: v.data, valueLengths: v.lengths, keySerde: "string", valueSerde: "long",
        timestamps: [1234n], partition: 3, fromStandby: req.enableStaleStores, servedBy: ["h2:7001"],
      });
    };
    engine.handlers.queryMetadataForKey = (req) => {
      assert.equal(Buffer.from(req.key).toString(), "k");
      return { activeHost: { host: "h2", port: 7001 }, standbyHosts: [{ host: "h3", port: 7002 }], partition: 3 };
    };
    engine.handlers.streamsMetadata = () => ({
      metadata: [{ hostInfo: { host: "h2", port: 7001 }, stateStoreNames: ["counts"], topicPartitions: [{ topic: "events", partition: 3 }],
        standbyStateStoreNames: ["counts"], standbyTopicPartitions: [{ topic: "events", partition: 1 }] }],
      localHost: "h1:7000",
    });
    const a = await open();
    const r = await a.store<string, bigint>("counts").query("k");
    assert.deepEqual(r, { value: 7n, timestamp: 1234n, partition: 3, fromStandby: false, servedBy: ["h2:7001"] });
    assert.equal(seen.at(-1)!.enableStaleStores, false);
    const stale = a.store<string, bigint>("counts", { enableStaleStores: true });
    assert.equal((await stale.query("k")).fromStandby, true);
    assert.equal(await stale.get("k"), 7n);
    assert.equal(seen.at(-1)!.enableStaleStores, true);
    await assert.rejects(a.store<string, bigint>("counts").get("gone"), /key "gone" \(partition 2\)/);
    assert.deepEqual(await a.queryMetadataForKey("counts", "k"), {
      activeHost: { host: "h2", port: 7001 }, standbyHosts: [{ host: "h3", port: 7002 }], partition: 3,
    });
    const all = await a.metadataForAllStreamsClients();
    assert.deepEqual(all, [{ hostInfo: { host: "h2", port: 7001 }, stateStoreNames: ["counts"], topicPartitions: [["events", 3]],
      standbyStateStoreNames: ["counts"], standbyTopicPartitions: [["events", 1]] }]);
    assert.deepEqual(await a.streamsMetadataForStore("counts"), all);
  });
});
