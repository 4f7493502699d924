/**
 * Windowed aggregations against a fake engine: window specs, windowed keys
 * (Kafka's bytes), the Build calls of windowedBy / suppress, fold programs
 * (session and sliding windows) in the fold executor, window store queries and dropped records.
 */

import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { afterEach, beforeEach, describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { Executor } from "./bundle.js";
import type { AnyFunction } from "./outcomes.js";
import {
  type BuildRequest,
  BuildResponseSchema,
  BundleSchema,
  EmitStrategy as EmitStrategyEnum,
  GetStateResponseSchema,
  Kind,
  Operation,
  type OpenSessionRequest,
  type QueryRequest,
  QueryResponseSchema,
  RecordFailure_Kind,
  Reducer,
  State,
} from "./gen/polystreams/v1alpha1/engine_pb.js";
import {
  App,
  EmitStrategy,
  InvalidArgumentError,
  PolystreamsError,
  SessionWindowedKStream,
  SessionWindows,
  SlidingWindows,
  Suppressed,
  TimeWindowedKStream,
  TimeWindows,
  WindowStore,
  Windowed,
  decode,
  encode,
} from "./index.js";
import { decodeColumn, encodeColumn } from "./serde.js";
import { FakeEngine } from "./testing/fake_engine.js";

const be = (...ns: number[]): Buffer => {
  const b = Buffer.alloc(8 * ns.length);
  ns.forEach((n, i) => b.writeBigInt64BE(BigInt(n), 8 * i));
  return b;
};

describe("window specs", () => {
  test("time, sliding and session windows in milliseconds", () => {
    const t = TimeWindows.ofSizeAndGrace(60_000, 5_000).advanceBy(10_000);
    assert.deepEqual([t.sizeMs, t.advanceMs, t.graceMs], [60_000, 10_000, 5_000]);
    const tumbling = TimeWindows.ofSizeWithNoGrace(60_000);
    assert.deepEqual([tumbling.sizeMs, tumbling.advanceMs, tumbling.graceMs], [60_000, 60_000, 0]);
    assert.deepEqual(tumbling.toWindows(), { case: "time", value: { sizeMs: 60_000n, advanceMs: 60_000n, graceMs: 0n } });
    assert.deepEqual(SlidingWindows.ofTimeDifferenceAndGrace(10, 2).toWindows(), { case: "sliding", value: { timeDifferenceMs: 10n, graceMs: 2n } });
    assert.equal(SlidingWindows.ofTimeDifferenceWithNoGrace(10).graceMs, 0);
    assert.deepEqual(SessionWindows.ofInactivityGapAndGrace(5, 1).toWindows(), { case: "session", value: { inactivityGapMs: 5n, graceMs: 1n } });
    assert.equal(SessionWindows.ofInactivityGapWithNoGrace(5).inactivityGapMs, 5);
    // Values are the engine's to check; types are checked here.
    assert.equal(TimeWindows.ofSizeWithNoGrace(0).sizeMs, 0);
    assert.throws(() => TimeWindows.ofSizeWithNoGrace(1.5), /TimeWindows.ofSizeWithNoGrace: size: want an integer number of milliseconds, got 1.5/);
    assert.throws(() => TimeWindows.ofSizeWithNoGrace("1m" as unknown as number), /got string/);
    assert.equal(Suppressed.untilWindowCloses().name, "");
    assert.equal(Suppressed.untilWindowCloses({ name: "final" }).name, "final");
  });

  test("Suppressed.untilTimeLimit and BufferConfig become the SuppressOp's fields", () => {
    const s = Suppressed.untilTimeLimit(2_000, { name: "held", buffer: { maxRecords: 10, maxBytes: 1 << 20 } });
    assert.equal(s.name, "held");
    assert.deepEqual(s.toOp(), { timeLimitMs: 2_000n, buffer: { maxRecords: 10n, maxBytes: BigInt(1 << 20), whenFull: 1 } });
    assert.deepEqual(Suppressed.untilWindowCloses({ buffer: { maxBytes: 100, whenFull: "shut_down" } }).toOp(), {
      buffer: { maxRecords: undefined, maxBytes: 100n, whenFull: 2 },
    });
    assert.deepEqual(Suppressed.untilTimeLimit(0, { buffer: {} }).toOp(), { timeLimitMs: 0n }); // unbounded: no buffer
    assert.throws(() => Suppressed.untilTimeLimit(1.5), TypeError);
    assert.throws(() => Suppressed.untilTimeLimit(5, { buffer: { whenFull: "drop" as "shut_down" } }), /whenFull/);
    assert.throws(() => Suppressed.untilWindowCloses({ buffer: { maxRecords: "1" as unknown as number } }), /maxRecords/);
  });
});

describe("windowed keys, as Kafka Streams' windowed serdes write them", () => {
  test("time-windowed: inner key, then the start (8 bytes big-endian); the end is start + size", () => {
    const name = "windowed(string,60000)";
    const w = new Windowed("a", 120_000, 180_000);
    const b = encode(name, w)!;
    assert.deepEqual(Buffer.from(b), Buffer.concat([Buffer.from("a"), be(120_000)]));
    assert.deepEqual(decode(name, b), w);
    assert.deepEqual(decode("windowed(long,10)", be(7, 20)), new Windowed(7n, 20, 30));
  });

  test("session-windowed: inner key, then the end, then the start", () => {
    const name = "session-windowed(string)";
    const w = new Windowed("user", 1_000, 5_000);
    const b = encode(name, w)!;
    assert.deepEqual(Buffer.from(b), Buffer.concat([Buffer.from("user"), be(5_000, 1_000)]));
    assert.deepEqual(decode(name, b), w);
  });

  test("columns, and errors naming the serde", () => {
    const name = "windowed(string,10)";
    const keys = [new Windowed("a", 0, 10), null, new Windowed("bé", 20, 30)];
    const c = encodeColumn(name, keys);
    assert.equal(c.failures.size, 0);
    assert.deepEqual(c.lengths, [9, -1, 11]);
    assert.deepEqual(decodeColumn(name, c.data, c.lengths).items, keys);
    assert.deepEqual([...encodeColumn(name, ["a"]).failures], [[0, "TypeError: windowed(string,10) serde: want a Windowed key, got string"]]);
    assert.deepEqual([...decodeColumn(name, Buffer.from("abc"), [3]).failures], [[0, "RangeError: windowed(string,10) serde: want at least 8 bytes, got 3"]]);
    assert.throws(() => decode("windowed(string)", Buffer.alloc(0)), /unknown serde/);
  });
});

describe("chains after a windowed table's toStream()", () => {
  test("functions see Windowed keys, and a map may make them (encoded as Kafka's bytes)", async () => {
    const name = "windowed(string,10)";
    const keys = encodeColumn(name, [new Windowed("a", 0, 10), new Windowed("a", 10, 20), new Windowed("b", 20, 30)]);
    const values = encodeColumn("long", [1n, 2n, 3n]);
    const seen: unknown[] = [];
    const fns = new Map<number, AnyFunction>([
      [1, (k: Windowed<string>, v: bigint) => (seen.push([k, v]), k.start >= 10)],
      [2, (k: Windowed<string>, v: bigint) => [new Windowed(k.key.toUpperCase(), k.start + 10, k.end + 10), v]],
    ]);
    const r = await new Executor(fns).process(
      create(BundleSchema, {
        id: 5n,
        steps: [
          { token: 1, operation: Operation.FILTER, node: "KSTREAM-FILTER-0000000004" },
          { token: 2, operation: Operation.MAP, node: "KSTREAM-MAP-0000000005" },
        ],
        keySerde: name,
        valueSerde: "long",
        outputKeySerde: name,
        outputValueSerde: "long",
        keyLengths: keys.lengths,
        keys: keys.data,
        valueLengths: values.lengths,
        values: values.data,
      }),
    );
    assert.deepEqual(r.failures, []);
    assert.deepEqual(r.outputCounts, [0, 1, 1]);
    assert.deepEqual(seen, [[new Windowed("a", 0, 10), 1n], [new Windowed("a", 10, 20), 2n], [new Windowed("b", 20, 30), 3n]]);
    assert.deepEqual(decodeColumn(name, r.keys, r.keyLengths).items, [new Windowed("A", 20, 30), new Windowed("B", 30, 40)]);
    assert.deepEqual(Buffer.from(r.keys.subarray(0, 9)), Buffer.concat([Buffer.from("A"), be(20)]));
  });
});

describe("fold_value_refs", () => {
  test("each record is decoded once and folded into every window that refers to it; outputs and failures index fold values", async () => {
    const keys = encodeColumn("string", ["a", "a"]);
    const aggs = encodeColumn("long", [null, 100n]);
    const values = encodeColumn("long", [5n, 7n, 1n]);
    const bundle = (refs: number[]) =>
      create(BundleSchema, {
        id: 7n,
        steps: [{ token: 1, operation: Operation.AGGREGATE, node: "KSTREAM-AGGREGATE-0000000002", initializerToken: 2 }],
        keySerde: "string",
        valueSerde: "long",
        outputValueSerde: "long",
        aggregateSerde: "long",
        keyLengths: keys.lengths,
        keys: keys.data,
        groupSizes: [2, 3],
        aggregateLengths: aggs.lengths,
        aggregates: aggs.data,
        valueLengths: values.lengths,
        values: values.data,
        valueRefs: refs,
      });
    const fns = new Map<number, AnyFunction>([
      [
        1,
        (_k: string, v: bigint, a: bigint) => {
          if (v === 7n) throw new RangeError("seven");
          return a + v;
        },
      ],
      [2, () => 0n],
    ]);
    const r = await new Executor(fns).process(bundle([0, 1, 0, 1, 2]));
    assert.deepEqual(r.outputCounts, [1, 0, 1, 0, 1]);
    assert.deepEqual(decodeColumn("long", r.values, r.valueLengths).items, [5n, 105n, 106n]);
    assert.deepEqual(r.failures.map((f) => [f.index, f.message]), [[1, "RangeError: seven"], [3, "RangeError: seven"]]);
    const bad = await new Executor(fns).process(bundle([0, 1, 0, 1, 3]));
    assert.deepEqual(bad.outputCounts, [0, 0, 0, 0, 0]);
    assert.match(bad.failures[0]!.message, /value refs from 0 to 3 for 3 records/);
  });
});

describe("fold programs (session and sliding windows)", () => {
  interface Program {
    op?: Operation;
    serde?: string;
    groups: { key: string; size: number }[];
    pool: unknown[];
    records: unknown[];
    refs: number[];
    bases: number[];
    counts?: number[];
    merges?: number[];
    mergerToken?: number;
    /** The pool as bytes, instead of pool encoded. */
    rawPool?: { lengths: number[]; data: Uint8Array };
  }

  function program(fns: Map<number, AnyFunction>, p: Program) {
    const serde = p.serde ?? "json";
    const keys = encodeColumn("string", p.groups.map((g) => g.key));
    const pool = p.rawPool ?? encodeColumn(serde, p.pool);
    const values = encodeColumn(serde, p.records);
    const op = p.op ?? Operation.AGGREGATE;
    return new Executor(fns).process(
      create(BundleSchema, {
        id: 9n,
        steps: [
          op === Operation.AGGREGATE
            ? { token: 1, operation: op, node: "KSTREAM-AGGREGATE-0000000003", initializerToken: 2, mergerToken: p.mergerToken ?? 3 }
            : { token: 1, operation: op, node: "KSTREAM-REDUCE-0000000003" },
        ],
        keySerde: "string",
        valueSerde: serde,
        outputValueSerde: serde,
        aggregateSerde: serde,
        keyLengths: keys.lengths,
        keys: keys.data,
        groupSizes: p.groups.map((g) => g.size),
        aggregateLengths: pool.lengths,
        aggregates: pool.data,
        valueLengths: values.lengths,
        values: values.data,
        valueRefs: p.refs,
        foldBases: p.bases,
        mergeCounts: p.counts ?? p.bases.map(() => 0),
        mergeRefs: p.merges ?? [],
      }),
    );
  }

  const outputs = (r: { values: Uint8Array; valueLengths: number[] }, serde = "json") => decodeColumn(serde, r.values, r.valueLengths).items;

  test("a record bridging two stored sessions: the merger folds both into initializer()'s aggregate, then the aggregator adds the record", async () => {
    const calls: unknown[] = [];
    const fns = new Map<number, AnyFunction>([
      [1, (k: string, v: number, a: number) => (calls.push(["agg", k, v, a]), a + v)],
      [2, () => (calls.push(["init"]), 0)],
      [3, (k: string, a: number, b: number) => (calls.push(["merge", k, a, b]), a + b)],
    ]);
    // Pool: a's sessions [0,0] = 1 and [10,10] = 10; the record (100 at 5)
    // bridges them. Then another record (7) extends the merged session: it
    // starts from value 0's output.
    const r = await program(fns, {
      groups: [{ key: "a", size: 2 }],
      pool: [1, 10],
      records: [100, 7],
      refs: [0, 1],
      bases: [-1, 2],
      counts: [2, 0],
      merges: [0, 1],
    });
    assert.deepEqual(r.failures, []);
    assert.deepEqual(r.outputCounts, [1, 1]);
    assert.deepEqual(outputs(r), [111, 118]);
    assert.deepEqual(calls, [["init"], ["merge", "a", 0, 1], ["merge", "a", 1, 10], ["agg", "a", 100, 11], ["agg", "a", 7, 111]]);
  });

  test("reduce: a base of -1 is no aggregate, the first merge operand becomes it, the reducer merges the rest", async () => {
    const calls: unknown[] = [];
    const fns = new Map<number, AnyFunction>([[1, (a: number, v: number) => (calls.push([a, v]), a + v)]]);
    const r = await program(fns, {
      op: Operation.REDUCE,
      groups: [{ key: "a", size: 2 }],
      pool: [1, 10],
      records: [100, 5],
      refs: [0, 1],
      bases: [-1, -1],
      counts: [2, 0],
      merges: [0, 1],
    });
    assert.deepEqual(outputs(r), [111, 5]);
    assert.deepEqual(calls, [[1, 10], [11, 100]]);
  });

  test("sliding: a base that names an earlier output starts from a fresh copy, however a function changed it in place", async () => {
    const fns = new Map<number, AnyFunction>([
      [1, (_k: string, v: number, a: number[]) => (a.push(v), a)],
      [2, () => []],
    ]);
    // Value 0 makes window [0,10] from a stored window; values 1 and 2 both
    // start from value 0's output (refs 1 + 0); value 3 from value 1's.
    const r = await program(fns, {
      groups: [{ key: "a", size: 4 }],
      pool: [[9]],
      records: [1, 2, 3],
      refs: [0, 1, 2, 2],
      bases: [0, 1, 1, 2],
    });
    assert.deepEqual(r.failures, []);
    assert.deepEqual(outputs(r), [[9, 1], [9, 1, 2], [9, 1, 3], [9, 1, 2, 3]]);
  });

  test("a failure fails the values that refer to its output, and no others; async functions keep each group's order", async () => {
    const fns = new Map<number, AnyFunction>([
      [
        1,
        async (_k: string, v: number, a: number) => {
          await new Promise((r) => setTimeout(r, v === 13 ? 5 : 0));
          if (v === 13) {
            throw new RangeError("unlucky");
          }
          return a + v;
        },
      ],
      [2, async () => 0],
      [3, (_k: string, a: number, b: number) => a + b],
    ]);
    // Group a: value 0 fails; value 1 starts from it, value 2 merges it in,
    // value 3 starts from the initializer. Group b: value 4 starts from
    // value 3 of group a (another group, still in flight).
    const r = await program(fns, {
      groups: [{ key: "a", size: 4 }, { key: "b", size: 1 }],
      pool: [],
      records: [13, 1],
      refs: [0, 1, 1, 1, 1],
      bases: [-1, 0, -1, -1, 3],
      counts: [0, 0, 1, 0, 0],
      merges: [0],
    });
    assert.deepEqual(r.outputCounts, [0, 0, 0, 1, 1]);
    assert.deepEqual(outputs(r), [1, 2]);
    assert.deepEqual(r.failures.map((f) => [f.index, f.step, f.message, f.kind]), [
      [0, 0, "RangeError: unlucky", RecordFailure_Kind.PROCESSING],
      [1, 0, "depends on fold value 0, which failed", RecordFailure_Kind.PROCESSING],
      [2, 0, "depends on fold value 0, which failed", RecordFailure_Kind.PROCESSING],
    ]);
    // A stored aggregate that does not decode is a deserialization failure.
    const undecodable = await program(fns, {
      groups: [{ key: "a", size: 2 }],
      pool: [],
      rawPool: { lengths: [1], data: Buffer.from("{") },
      records: [1],
      refs: [0, 0],
      bases: [0, -1],
    });
    assert.deepEqual(undecodable.outputCounts, [0, 1]);
    assert.equal(undecodable.failures.length, 1);
    assert.match(undecodable.failures[0]!.message, /^the stored aggregate 0 does not decode: SyntaxError/);
    assert.equal(undecodable.failures[0]!.kind, RecordFailure_Kind.DESERIALIZATION);
    const nulls = await program(new Map<number, AnyFunction>([[1, () => null], [2, () => 0], [3, () => 0]]), {
      groups: [{ key: "a", size: 1 }],
      pool: [],
      records: [1],
      refs: [0],
      bases: [-1],
    });
    assert.deepEqual(nulls.failures.map((f) => f.message), ["TypeError: aggregate aggregator returned null; an aggregate cannot be null"]);
  });

  test("a malformed program fails every value, naming the problem", async () => {
    const fns = new Map<number, AnyFunction>([
      [1, (_k: string, v: number, a: number) => a + v],
      [2, () => 0],
      [3, (_k: string, a: number, b: number) => a + b],
    ]);
    const base = { groups: [{ key: "a", size: 2 }], pool: [1], records: [5], refs: [0, 0] };
    const failuresOf = async (p: Program) => {
      const r = await program(fns, p);
      assert.deepEqual(r.outputCounts, [0, 0]);
      assert.equal(new Set(r.failures.map((f) => f.message)).size, 1);
      return r.failures[0]!.message;
    };
    // Value 0 refers to its own output (ref 1 + 0): not an earlier value.
    assert.match(await failuresOf({ ...base, bases: [1, -1] }), /malformed fold program: fold value 0's base 1 names neither .* nor one of the 0 earlier values/);
    assert.match(await failuresOf({ ...base, bases: [-1, -1], counts: [0, 1], merges: [-1] }), /fold value 1's merge operand is -1/);
    assert.match(await failuresOf({ ...base, bases: [-1, -1], counts: [0, 1], merges: [] }), /merge counts adding up to 1 for 0 merge refs/);
    assert.match(await failuresOf({ ...base, bases: [-1] }), /2 value refs, 1 fold bases and 1 merge counts/);
    assert.match(
      await failuresOf({ ...base, bases: [-1, -1], counts: [0, 1], merges: [0], mergerToken: 4 }),
      /^ReferenceError: aggregate step \(KSTREAM-AGGREGATE-0000000003\) names merger token 4, which is not registered in this host \(fold value 1 merges aggregates\)$/,
    );
    // Without merges, no merger is needed.
    const r = await program(fns, { ...base, bases: [0, 1], mergerToken: 4 });
    assert.deepEqual(outputs(r), [6, 11]);
  });
});

describe("windowed builds, queries and dropped records against a fake engine", { timeout: 30_000 }, () => {
  let engine: FakeEngine;
  let app: App | undefined;
  let builds: BuildRequest[];

  beforeEach(async () => {
    engine = await FakeEngine.start();
    builds = [];
    let next = 0n;
    let token = 0;
    const windowedKinds = new Map<bigint, Kind>();
    engine.handlers.registerFunction = () => ({ token: ++token });
    engine.handlers.build = (req: BuildRequest) => {
      builds.push(req);
      const op = req.operation;
      if (op.case === "to") {
        return create(BuildResponseSchema, {});
      }
      if (op.case === "windowedBy" && op.value.windows.case === "time" && op.value.windows.value.sizeMs <= 0n) {
        throw new ConnectError(`topology: windowed_by: size_ms ${op.value.windows.value.sizeMs} must be > 0`, Code.InvalidArgument);
      }
      const kind =
        op.case === "stream" || op.case === "toStream"
          ? Kind.STREAM
          : op.case === "groupByKey"
            ? Kind.GROUPED_STREAM
            : op.case === "windowedBy"
              ? op.value.windows.case === "session"
                ? Kind.SESSION_WINDOWED_STREAM
                : Kind.WINDOWED_STREAM
              : op.case === "emitStrategy"
                ? (windowedKinds.get(op.value.input) ?? Kind.WINDOWED_STREAM)
                : Kind.TABLE;
      if (op.case === "windowedBy") {
        windowedKinds.set(next + 1n, kind);
      }
      const table = kind === Kind.TABLE;
      return create(BuildResponseSchema, {
        handle: { id: ++next, kind, keySerde: table ? "windowed(string,60000)" : "string", valueSerde: "long", node: `N-${op.case}`, store: table ? "wcounts" : "" },
      });
    };
  });

  afterEach(async () => {
    await app?.close();
    app = undefined;
    await engine.close();
  });

  test("windowedBy, windowed count/reduce/aggregate and suppress on the wire", async () => {
    app = await App.create("w", { engine: engine.url });
    const g = app.stream("in", { key: "string", value: "long" }).groupByKey();
    const tw = g.windowedBy(TimeWindows.ofSizeAndGrace(60_000, 5_000).advanceBy(10_000));
    const sw = g.windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(30_000));
    const ss = g.windowedBy(SessionWindows.ofInactivityGapAndGrace(60_000, 0));
    assert.ok(tw instanceof TimeWindowedKStream && sw instanceof TimeWindowedKStream && ss instanceof SessionWindowedKStream);
    const c = tw.count({ materialized: { storeName: "wcounts", retentionMs: 3_600_000 } });
    sw.reduce("sum", { name: "sums" });
    ss.aggregate(
      () => 0n,
      (_k, v, a) => a + v,
      (_k, a, b) => a + b,
      { materialized: { value: "long" } },
    );
    const s = c.suppress(Suppressed.untilWindowCloses({ name: "final" }));
    s.toStream().to("out");
    await app.built();
    assert.equal((await tw.handle).kind, "windowed_stream");
    assert.equal((await ss.handle).kind, "session_windowed_stream");
    assert.equal((await c.handle).keySerde, "windowed(string,60000)");
    const ops = builds.map((b) => b.operation.case);
    assert.deepEqual(ops, ["stream", "groupByKey", "windowedBy", "windowedBy", "windowedBy", "count", "reduce", "aggregate", "suppress", "toStream", "to"]);
    const w = builds[2]!.operation;
    assert.ok(w.case === "windowedBy" && w.value.windows.case === "time");
    assert.deepEqual([w.value.windows.value.sizeMs, w.value.windows.value.advanceMs, w.value.windows.value.graceMs], [60_000n, 10_000n, 5_000n]);
    const count = builds[5]!.operation;
    assert.ok(count.case === "count");
    assert.equal(count.value.input, (await tw.handle).id);
    assert.equal(count.value.materialized?.retentionMs, 3_600_000n);
    const reduce = builds[6]!.operation;
    assert.ok(reduce.case === "reduce" && reduce.value.builtin === Reducer.SUM && reduce.value.name === "sums");
    const agg = builds[7]!.operation;
    assert.ok(agg.case === "aggregate");
    assert.deepEqual([agg.value.initializerToken, agg.value.aggregatorToken, agg.value.mergerToken].map((t) => t > 0), [true, true, true]);
    assert.equal(new Set([agg.value.initializerToken, agg.value.aggregatorToken, agg.value.mergerToken]).size, 3);
    await assert.rejects(c.query(), /windowed aggregation's table: query it with windowStore\(\)/);
    assert.equal((await c.windowStore()).name, "wcounts");
    const sup = builds[8]!.operation;
    assert.ok(sup.case === "suppress" && sup.value.name === "final" && sup.value.input === (await c.handle).id);
  });

  test("emitStrategy on windowed streams and toTable on the wire", async () => {
    app = await App.create("w", { engine: engine.url });
    const s = app.stream("in", { key: "string", value: "long" });
    const g = s.groupByKey();
    const tw = g.windowedBy(TimeWindows.ofSizeWithNoGrace(60_000)).emitStrategy(EmitStrategy.onWindowClose());
    const ss = g.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(60_000)).emitStrategy(EmitStrategy.onWindowUpdate());
    assert.ok(tw instanceof TimeWindowedKStream && ss instanceof SessionWindowedKStream);
    tw.count();
    s.toTable({ name: "as-table", materialized: "latest" });
    await app.built();
    assert.equal((await ss.handle).kind, "session_windowed_stream");
    assert.deepEqual(
      builds.map((b) => b.operation.case),
      ["stream", "groupByKey", "windowedBy", "emitStrategy", "windowedBy", "emitStrategy", "count", "toTable"],
    );
    const e1 = builds[3]!.operation;
    assert.ok(e1.case === "emitStrategy" && e1.value.strategy === EmitStrategyEnum.ON_WINDOW_CLOSE);
    const e2 = builds[5]!.operation;
    assert.ok(e2.case === "emitStrategy" && e2.value.strategy === EmitStrategyEnum.ON_WINDOW_UPDATE);
    const count = builds[6]!.operation;
    assert.ok(count.case === "count" && count.value.input === (await tw.handle).id);
    const tt = builds[7]!.operation;
    assert.ok(tt.case === "toTable" && tt.value.name === "as-table" && tt.value.materialized?.storeName === "latest");
    assert.equal(tt.value.input, (await s.handle).id);
    assert.throws(() => tw.emitStrategy("onWindowClose" as unknown as EmitStrategy), /emitStrategy: want an EmitStrategy, not string/);
  });

  test("the engine's refusal reaches the user unchanged; argument checks", async () => {
    app = await App.create("w", { engine: engine.url });
    const g = app.stream("in", { key: "string" }).groupByKey();
    const bad = g.windowedBy(TimeWindows.ofSizeWithNoGrace(0));
    await assert.rejects(bad.handle, (e: unknown) => e instanceof InvalidArgumentError && e.message === "topology: windowed_by: size_ms 0 must be > 0");
    assert.throws(() => g.windowedBy(60_000 as unknown as TimeWindows), /windowedBy: want TimeWindows, SlidingWindows or SessionWindows, not number/);
    assert.throws(() => g.count().suppress("untilWindowCloses" as unknown as Suppressed), /suppress: want a Suppressed/);
  });

  test("window store fetch and fetchAll decode windowed keys", async () => {
    const rows: [string, number, bigint][] = [["a", 0, 1n], ["b", 0, 2n], ["a", 10, 3n], ["a", 20, 4n]];
    const requests: QueryRequest[] = [];
    let truncated = false;
    engine.handlers.query = (req: QueryRequest) => {
      requests.push(req);
      const q = req.query;
      assert.equal(q.case, "windowFetch");
      const f = q.value!;
      const hit = rows.filter(([k, s]) => BigInt(s) >= f.fromMs && BigInt(s) <= f.toMs && (f.key === undefined || Buffer.from(k).equals(f.key)));
      const keys = encodeColumn("windowed(string,10)", hit.map(([k, s]) => new Windowed(k, s, s + 10)));
      const values = encodeColumn("long", hit.map(([, , v]) => v));
      return create(QueryResponseSchema, {
        keyLengths: keys.lengths, keys: keys.data, valueLengths: values.lengths, values: values.data,
        keySerde: "windowed(string,10)", valueSerde: "long", truncated,
      });
    };
    app = await App.create("w", { engine: engine.url });
    const s = app.windowStore<string, bigint>("wcounts");
    assert.ok(s instanceof WindowStore);
    assert.deepEqual(await s.fetch("a", 0, 10), [[new Windowed("a", 0, 10), 1n], [new Windowed("a", 10, 20), 3n]]);
    const last = requests.at(-1)!;
    assert.equal(last.store, "wcounts");
    assert.ok(last.query.case === "windowFetch");
    assert.deepEqual(Buffer.from(last.query.value.key!), Buffer.from("a"));
    assert.deepEqual([last.query.value.fromMs, last.query.value.toMs], [0n, 10n]);
    assert.deepEqual(await s.fetchAll(new Date(0), new Date(5)), [[new Windowed("a", 0, 10), 1n], [new Windowed("b", 0, 10), 2n]]);
    const all = requests.at(-1)!.query;
    assert.ok(all.case === "windowFetch" && all.value.key === undefined);
    truncated = true;
    await assert.rejects(s.fetchAll(0, 100), (e: unknown) => e instanceof PolystreamsError && /more than 100000 windows/.test(e.message));
  });

  test("the host offers fold_value_refs, fold_programs, processors and metadata at OpenSession", async () => {
    let features: string[] = [];
    engine.handlers.openSession = (req: OpenSessionRequest) => {
      features = [...req.hostFeatures];
      return { sessionId: "sess-1", config: {} };
    };
    app = await App.create("w", { engine: engine.url });
    assert.deepEqual(features, ["fold_value_refs", "fold_programs", "processors", "metadata"]);
  });

  test("droppedRecords", async () => {
    engine.handlers.getState = () => create(GetStateResponseSchema, { state: State.RUNNING, droppedRecords: 3n });
    app = await App.create("w", { engine: engine.url });
    assert.equal(await app.droppedRecords(), 3);
  });
});
