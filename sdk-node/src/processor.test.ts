// The executor's processor mode (processor.ts) against bundles built here:
// entries (inits, records, punctuations, closes), the overlay over the
// store views with read-your-writes, Reads for what the bundle did not
// bring (merged with the overlay in iterators), the op columns in call
// order, failures that keep earlier ops, and the errors naming node, store
// and call. Columns are built and read with Buffer, not serde.ts.

import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { Executor } from "./bundle.js";
import type { AnyFunction } from "./outcomes.js";
import {
  type BundleResult,
  BundleEntry_Kind,
  BundleEntrySchema,
  BundleSchema,
  Metadata,
  Operation,
  OpKind,
  type ReadResponse,
  ReadResponseSchema,
  RecordFailure_Kind,
  StepSchema,
  StoreType,
} from "./gen/polystreams/v1alpha1/engine_pb.js";
import type { RecordMetadata, ReadFn } from "./processor.js";
import {
  FixedKeyRecord,
  PUT_RETURN_CODE_NOT_PUT,
  PUT_RETURN_CODE_VALID_TO_UNDEFINED,
  withMetadata,
  type KeyValueStore,
  type Processor,
  type ProcessorContext,
  type VersionedKeyValueStore as ProcessorVersionedKeyValueStore,
  Record,
  type WindowStore,
} from "./processor.js";

type Bytes = Buffer | null;

function col(items: readonly Bytes[]): { data: Buffer; lengths: number[] } {
  return { data: Buffer.concat(items.flatMap((b) => (b === null ? [] : [b]))), lengths: items.map((b) => (b === null ? -1 : b.length)) };
}

function split(data: Uint8Array, lengths: readonly number[]): Bytes[] {
  const out: Bytes[] = [];
  let pos = 0;
  for (const len of lengths) {
    if (len < 0) {
      out.push(null);
      continue;
    }
    out.push(Buffer.from(data.subarray(pos, pos + len)));
    pos += len;
  }
  return out;
}

const str = (s: string): Buffer => Buffer.from(s, "utf8");
const long = (n: number): Buffer => {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(BigInt(n));
  return b;
};

interface View {
  store: string;
  type?: StoreType;
  keySerde?: string;
  valueSerde?: string;
  entries: [Bytes, Bytes, number?][]; // key, value (null: known absent), window start
  uncovered?: Buffer[];
}

interface Spec {
  op?: Operation;
  stores?: string[];
  children?: string[];
  task?: string;
  init?: boolean;
  records?: [string, string, number][]; // key, value, timestamp
  headers?: [string, string][][];
  views?: View[];
  after?: { kind: BundleEntry_Kind; schedule?: bigint; time?: number }[];
  id?: bigint;
}

function bundle(s: Spec) {
  const records = s.records ?? [];
  const keys = col(records.map((r) => str(r[0])));
  const values = col(records.map((r) => str(r[1])));
  const hs = s.headers ?? [];
  const hk = col(hs.flat().map((h) => str(h[0])));
  const hv = col(hs.flat().map((h) => str(h[1])));
  return create(BundleSchema, {
    id: s.id ?? 7n,
    steps: [{ token: 1, operation: s.op ?? Operation.PROCESS, node: "KSTREAM-PROCESSOR-0000000001", stores: s.stores ?? [], children: s.children ?? ["KSTREAM-SINK-0000000002"] }],
    keySerde: "string",
    valueSerde: "string",
    outputValueSerde: "long",
    keyLengths: keys.lengths,
    keys: keys.data,
    valueLengths: values.lengths,
    values: values.data,
    topic: "in",
    partition: 3,
    offsets: records.map((_, i) => BigInt(100 + i)),
    timestamps: records.map((r) => BigInt(r[2])),
    task: s.task ?? "0_3",
    inits: s.init ? [{ kind: BundleEntry_Kind.INIT, step: 0 }] : [],
    after: (s.after ?? []).map((a) => ({ kind: a.kind, step: 0, schedule: a.schedule ?? 0n, timeMs: BigInt(a.time ?? 0) })),
    headerCounts: hs.length > 0 ? hs.map((h) => h.length) : [],
    headerKeyLengths: hk.lengths,
    headerKeys: hk.data,
    headerValueLengths: hv.lengths,
    headerValues: hv.data,
    stores: (s.views ?? []).map((v) => {
      const k = col(v.entries.map((e) => e[0]));
      const val = col(v.entries.map((e) => e[1]));
      const u = col(v.uncovered ?? []);
      return {
        store: v.store,
        type: v.type ?? StoreType.KEY_VALUE,
        keySerde: v.keySerde ?? "string",
        valueSerde: v.valueSerde ?? "long",
        keyLengths: k.lengths,
        keys: k.data,
        valueLengths: val.lengths,
        values: val.data,
        windows: v.entries.map((e) => BigInt(e[2] ?? 0)),
        uncoveredLengths: u.lengths,
        uncovered: u.data,
      };
    }),
  });
}

interface Op {
  kind: string;
  target: number;
  key: string | null;
  value: Bytes;
  ts: number;
  schedule: bigint;
  headers?: [string, string][] | -1;
}

/** The result's ops, grouped per entry. */
function ops(r: BundleResult): Op[][] {
  const keys = split(r.opKeys, r.opKeyLengths);
  const values = split(r.opValues, r.opValueLengths);
  const hk = split(r.opHeaderKeys, r.opHeaderKeyLengths);
  const hv = split(r.opHeaderValues, r.opHeaderValueLengths);
  let j = 0;
  let f = 0;
  let h = 0;
  return r.opCounts.map((c) => {
    const group: Op[] = [];
    for (let x = 0; x < c; x++, j++) {
      const op: Op = {
        kind: OpKind[r.opKinds[j]!]!,
        target: r.opTargets[j]!,
        key: keys[j] === null ? null : keys[j]!.toString("utf8"),
        value: values[j]!,
        ts: Number(r.opTimestamps[j]),
        schedule: r.opSchedules[j]!,
      };
      if (r.opKinds[j] === OpKind.FORWARD) {
        const n = r.opHeaderCounts[f++]!;
        if (n < 0) {
          op.headers = -1;
        } else {
          op.headers = [];
          for (let y = 0; y < n; y++, h++) {
            op.headers.push([hk[h]!.toString("utf8"), hv[h]!.toString("utf8")]);
          }
        }
      }
      group.push(op);
    }
    return group;
  });
}

function executor(supplier: () => unknown, read?: ReadFn): Executor {
  return new Executor(new Map<number, AnyFunction>([[1, supplier]]), read);
}

/** A per-key counter: counts in store "counts", forwards (key, count), punctuates every 10 ms of stream time. */
class Counter implements Processor<string, string, string, bigint> {
  ctx!: ProcessorContext<string, bigint>;
  store!: KeyValueStore<string, bigint>;
  punctuated: number[] = [];
  closed = false;
  init(ctx: ProcessorContext<string, bigint>): void {
    this.ctx = ctx;
    this.store = ctx.getStateStore("counts");
    ctx.schedule(10, "stream_time", (t) => void this.punctuated.push(t));
  }
  async process(r: Record<string, string>): Promise<void> {
    const n = ((await this.store.get(r.key)) ?? 0n) + 1n;
    this.store.put(r.key, n);
    this.ctx.forward(r.withValue(n));
  }
  close(): void {
    this.closed = true;
  }
}

const noRead: ReadFn = (req) => Promise.reject(new Error(`unexpected Read of ${req.store}`));

describe("processor bundles", () => {
  test("init, records with read-your-writes, ops per entry in call order, prefetch hits", async () => {
    let p!: Counter;
    const ex = executor(() => (p = new Counter()), noRead);
    const r = await ex.process(
      bundle({
        init: true,
        stores: ["counts"],
        records: [["a", "x", 5], ["b", "y", 6], ["a", "z", 7]],
        views: [{ store: "counts", entries: [[str("a"), long(5)], [str("b"), null]] }],
      }),
    );
    assert.deepEqual(r.failures, []);
    const g = ops(r);
    assert.equal(g.length, 4);
    assert.deepEqual(g[0]!.map((o) => [o.kind, o.target, o.ts]), [["SCHEDULE", 1, 10]]);
    assert.deepEqual(g.slice(1).map((e) => e.map((o) => [o.kind, o.target, o.key, o.value?.readBigInt64BE() ?? null, o.ts])), [
      [["PUT", 0, "a", 6n, 0], ["FORWARD", 0, "a", 6n, 5]],
      [["PUT", 0, "b", 1n, 0], ["FORWARD", 0, "b", 1n, 6]],
      [["PUT", 0, "a", 7n, 0], ["FORWARD", 0, "a", 7n, 7]],
    ]);
    assert.deepEqual(r.opSteps, new Array(7).fill(0));
    assert.deepEqual(r.prefetchHits, [2]);
    assert.equal(g[1]![1]!.headers, -1, "a forward keeping the input's headers says so");
    assert.deepEqual(r.opSchedules, [1n, 0n, 0n, 0n, 0n, 0n, 0n], "schedule ids count from 1 per instance; other ops carry 0");
    assert.ok(p instanceof Counter);
  });

  test("a key the bundle did not bring is one Read, then known; a write while it is out wins", async () => {
    const reads: string[] = [];
    const read: ReadFn = async (req) => {
      assert.equal(req.query.case, "get");
      reads.push(`${req.bundleId}:${req.store}:${Buffer.from(req.query.value as Uint8Array).toString()}`);
      const k = col([Buffer.from(req.query.value as Uint8Array)]);
      const v = col([long(41)]);
      return create(ReadResponseSchema, { keyLengths: k.lengths, keys: k.data, valueLengths: v.lengths, values: v.data });
    };
    const ex = executor(() => new Counter(), read);
    const r = await ex.process(bundle({ init: true, stores: ["counts"], records: [["k", "x", 1], ["k", "y", 2]], views: [{ store: "counts", entries: [] }] }));
    assert.deepEqual(r.failures, []);
    assert.deepEqual(reads, ["7:counts:k"]);
    assert.deepEqual(ops(r).slice(1).map((e) => e[0]!.value!.readBigInt64BE()), [42n, 43n]);
    assert.deepEqual(r.prefetchHits, [0]);
  });

  test("instances live per task and node across bundles; a record for a node not initialised fails naming it", async () => {
    const made: Counter[] = [];
    const ex = executor(() => {
      const c = new Counter();
      made.push(c);
      return c;
    }, noRead);
    const view = [{ store: "counts", entries: [[str("a"), null]] as [Bytes, Bytes][] }];
    await ex.process(bundle({ init: true, stores: ["counts"], views: view }));
    const second = await ex.process(bundle({ stores: ["counts"], records: [["a", "x", 1]], views: view }));
    assert.deepEqual(second.failures, []);
    assert.equal(made.length, 1);
    const other = await ex.process(bundle({ task: "0_4", stores: ["counts"], records: [["a", "x", 1]], views: view }));
    assert.equal(other.failures.length, 1);
    assert.match(other.failures[0]!.message, /node KSTREAM-PROCESSOR-0000000001 in task 0_4 has no processor/);
    const closed = await ex.process(bundle({ after: [{ kind: BundleEntry_Kind.CLOSE }] }));
    assert.deepEqual(closed.opCounts, [0]);
    assert.equal(made[0]!.closed, true);
    assert.deepEqual(ex.processors.live, []);
  });

  test("punctuation entries call the punctuator with their time and see the records' writes; cancel is an op", async () => {
    let seen: (number | null)[] = [];
    let cancel: (() => void) | undefined;
    class P implements Processor<string, string, string, number> {
      ctx!: ProcessorContext<string, number>;
      init(ctx: ProcessorContext<string, number>): void {
        this.ctx = ctx;
        const c = ctx.schedule(10, "wall_clock_time", async (t) => {
          const store = ctx.getStateStore<KeyValueStore<string, number>>("counts");
          seen = [t, await store.get("a")];
          ctx.forward(new Record("tick", t, t));
          assert.equal(ctx.recordMetadata(), undefined);
        });
        cancel = () => c.cancel();
      }
      process(r: Record<string, string>): void {
        this.ctx.getStateStore<KeyValueStore<string, number>>("counts").put(r.key, 9);
        assert.deepEqual(this.ctx.recordMetadata(), { topic: "in", partition: 3, offset: 100, timestamp: 1, headers: [] });
      }
    }
    const ex = executor(() => new P(), noRead);
    const first = await ex.process(bundle({ init: true, stores: ["counts"], views: [{ store: "counts", entries: [[str("a"), null]] }] }));
    const id = first.opSchedules[0]!;
    assert.equal(ops(first)[0]![0]!.target, 2);
    const r = await ex.process(
      bundle({
        stores: ["counts"],
        records: [["a", "x", 1]],
        views: [{ store: "counts", entries: [[str("a"), null]] }],
        after: [{ kind: BundleEntry_Kind.PUNCTUATE_WALL_CLOCK, schedule: id, time: 12345 }],
      }),
    );
    assert.deepEqual(r.failures, []);
    assert.deepEqual(seen, [12345, 9n]);
    const g = ops(r);
    // A punctuation's input headers are empty: a forward without headers says "the input's" (-1).
    assert.deepEqual(g[1]!.map((o) => [o.kind, o.key, o.value?.readBigInt64BE(), o.ts, o.headers]), [["FORWARD", "tick", 12345n, 12345, -1]]);
    cancel!();
    const gone = await ex.process(bundle({ after: [{ kind: BundleEntry_Kind.PUNCTUATE_WALL_CLOCK, schedule: id, time: 5 }] }));
    assert.match(gone.failures[0]!.message, /has no schedule/);
  });

  test("a punctuator that throws fails its entry, naming node and time, keeping the ops before", async () => {
    class P implements Processor {
      init(ctx: ProcessorContext): void {
        ctx.schedule(5, "stream_time", async (t) => {
          ctx.forward(new Record("k", 1, t));
          throw new Error("boom");
        });
      }
      process(): void {}
    }
    const ex = executor(() => new P(), noRead);
    const first = await ex.process(bundle({ init: true }));
    const r = await ex.process(bundle({ after: [{ kind: BundleEntry_Kind.PUNCTUATE_STREAM_TIME, schedule: first.opSchedules[0]!, time: 20 }] }));
    assert.equal(r.failures.length, 1);
    assert.equal(r.failures[0]!.index, 0);
    assert.match(r.failures[0]!.message, /punctuator of node KSTREAM-PROCESSOR-0000000001 at stream time 20 failed: Error: boom/);
    assert.deepEqual(r.opCounts, [1]);
  });

  test("a record that throws keeps the ops it made before; the next record goes on", async () => {
    class P implements Processor<string, string, string, number> {
      ctx!: ProcessorContext<string, number>;
      init(ctx: ProcessorContext<string, number>): void {
        this.ctx = ctx;
      }
      process(r: Record<string, string>): void {
        this.ctx.forward(r.withValue(1));
        if (r.value === "bad") {
          throw new Error(`bad value for ${r.key}`);
        }
      }
    }
    const r = await executor(() => new P(), noRead).process(bundle({ init: true, records: [["a", "bad", 1], ["b", "ok", 2]] }));
    assert.deepEqual(r.opCounts, [0, 1, 1]);
    assert.equal(r.failures.length, 1);
    assert.equal(r.failures[0]!.index, 1, "the failure's index counts entries: the init is entry 0");
    assert.equal(r.failures[0]!.kind, RecordFailure_Kind.PROCESSING);
    assert.match(r.failures[0]!.message, /bad value for a/);
  });

  test("bad calls fail the record naming node, store and call", async () => {
    const calls: [string, (ctx: ProcessorContext) => void][] = [
      ["forward to x", (ctx) => ctx.forward(new Record("k", 1, 1), "x")],
      ["store t", (ctx) => ctx.getStateStore("t")],
      ["schedule 0", (ctx) => ctx.schedule(0, "stream_time", () => {})],
      ["schedule type", (ctx) => ctx.schedule(5, "sometimes" as "stream_time", () => {})],
    ];
    const messages: string[] = [];
    for (const [, call] of calls) {
      class P implements Processor {
        ctx!: ProcessorContext;
        init(ctx: ProcessorContext): void {
          this.ctx = ctx;
        }
        process(): void {
          call(this.ctx);
        }
      }
      const r = await executor(() => new P(), noRead).process(bundle({ init: true, stores: ["s"], children: ["a", "b"], records: [["k", "v", 1]] }));
      messages.push(r.failures[0]!.message);
    }
    assert.match(messages[0]!, /forward: node KSTREAM-PROCESSOR-0000000001 has no child "x" \(children: \[a, b\]\)/);
    assert.match(messages[1]!, /getStateStore: node KSTREAM-PROCESSOR-0000000001 has no access to store "t" \(its stores: \[s\]\)/);
    assert.match(messages[2]!, /schedule: node KSTREAM-PROCESSOR-0000000001: interval 0 ms; the minimum is 1 ms/);
    assert.match(messages[3]!, /unknown punctuation type "sometimes"/);
  });

  test("forward to a named child, new timestamp and headers; the input's headers reach the processor", async () => {
    let got: readonly (readonly [string, Uint8Array | null])[] = [];
    class P implements Processor<string, string, string, number> {
      ctx!: ProcessorContext<string, number>;
      init(ctx: ProcessorContext<string, number>): void {
        this.ctx = ctx;
      }
      process(r: Record<string, string>): void {
        got = r.headers;
        this.ctx.forward(r.withKey(r.key + "!").withValue(2).withTimestamp(99).withHeaders([["h", str("v")]]), "b");
      }
    }
    const r = await executor(() => new P(), noRead).process(bundle({ init: true, children: ["a", "b"], records: [["k", "v", 1]], headers: [[["in", "x"]]] }));
    assert.deepEqual(r.failures, []);
    assert.deepEqual(got.map(([k, v]) => [k, Buffer.from(v!).toString()]), [["in", "x"]]);
    assert.deepEqual(ops(r)[1]!.map((o) => [o.kind, o.target, o.key, o.value?.readBigInt64BE(), o.ts, o.headers]), [["FORWARD", 2, "k!", 2n, 99, [["h", "v"]]]]);
  });

  test("processValues forwards carry the input's key", async () => {
    class P {
      ctx!: ProcessorContext;
      init(ctx: ProcessorContext): void {
        this.ctx = ctx;
      }
      process(r: FixedKeyRecord<string, string>): void {
        (this.ctx as unknown as { forward(r: FixedKeyRecord): void }).forward(r.withValue(r.value.length));
      }
    }
    const r = await executor(() => new P(), noRead).process(bundle({ op: Operation.PROCESS_VALUES, init: true, records: [["k", "abc", 1]] }));
    assert.deepEqual(r.failures, []);
    assert.deepEqual(ops(r)[1]!.map((o) => [o.kind, o.key, o.value?.readBigInt64BE()]), [["FORWARD", "k", 3n]]);
  });

  test("async processors are awaited one record at a time, in order", async () => {
    const log: string[] = [];
    class P implements Processor<string, string> {
      async process(r: Record<string, string>): Promise<void> {
        log.push(`start ${r.key}`);
        await new Promise((res) => setImmediate(res));
        log.push(`end ${r.key}`);
      }
    }
    await executor(() => new P(), noRead).process(bundle({ init: true, records: [["a", "x", 1], ["b", "y", 2]] }));
    assert.deepEqual(log, ["start a", "end a", "start b", "end b"]);
  });

  test("range and all merge the engine's chunks with the bundle's writes, in key order", async () => {
    const stored: [string, number][] = [["a", 1], ["b", 2], ["c", 3], ["d", 4]];
    const asked: string[] = [];
    const read: ReadFn = async (req) => {
      asked.push(`${req.query.case}:${Buffer.from(req.continuation).toString() || "-"}`);
      let rows = stored;
      if (req.query.case === "range") {
        const from = req.query.value.from === undefined ? "" : Buffer.from(req.query.value.from).toString();
        const to = req.query.value.to === undefined ? "\uffff" : Buffer.from(req.query.value.to).toString();
        rows = stored.filter(([k]) => k >= from && k <= to);
      } else if (req.query.case === "get") {
        const key = Buffer.from(req.query.value).toString();
        rows = stored.filter(([k]) => k === key);
      }
      if (req.reverse) {
        rows = [...rows].reverse();
      }
      const start = Number(Buffer.from(req.continuation).toString() || "0");
      const chunk = rows.slice(start, start + 2);
      const k = col(chunk.map(([x]) => str(x)));
      const v = col(chunk.map(([, n]) => long(n)));
      const more = start + 2 < rows.length;
      return create(ReadResponseSchema, { keyLengths: k.lengths, keys: k.data, valueLengths: v.lengths, values: v.data, continuation: more ? str(String(start + 2)) : new Uint8Array() }) as ReadResponse;
    };
    const results: [string, bigint][][] = [];
    let counted = -1;
    class P implements Processor<string, string> {
      store!: KeyValueStore<string, bigint>;
      init(ctx: ProcessorContext): void {
        this.store = ctx.getStateStore("counts");
      }
      async process(): Promise<void> {
        this.store.put("b", 20n);
        this.store.put("bb", 22n);
        assert.equal(await this.store.delete("c"), 3n);
        this.store.put("e", 5n);
        for (const it of [this.store.all(), this.store.range("b", "d"), this.store.reverseAll()]) {
          const out: [string, bigint][] = [];
          for await (const kv of it) {
            out.push(kv);
          }
          results.push(out);
        }
        counted = await this.store.approximateNumEntries();
      }
    }
    const r = await executor(() => new P(), read).process(bundle({ init: true, stores: ["counts"], records: [["x", "y", 1]], views: [{ store: "counts", entries: [] }] }));
    assert.deepEqual(r.failures, []);
    assert.deepEqual(results[0], [["a", 1n], ["b", 20n], ["bb", 22n], ["d", 4n], ["e", 5n]]);
    assert.deepEqual(results[1], [["b", 20n], ["bb", 22n], ["d", 4n]]);
    assert.deepEqual(results[2], [["e", 5n], ["d", 4n], ["bb", 22n], ["b", 20n], ["a", 1n]]);
    assert.ok(asked.includes("all:2"), `chunks follow the continuation: ${asked.join(" ")}`);
    assert.equal(counted, 5, "approximateNumEntries counts all(), the bundle's writes included");
    assert.deepEqual(ops(r)[1]!.map((o) => [o.kind, o.key]), [["PUT", "b"], ["PUT", "bb"], ["DELETE", "c"], ["PUT", "e"]]);
  });

  test("window stores: covered keys read the view, uncovered ones are Reads; put is an op with its window start", async () => {
    const asked: string[] = [];
    const read: ReadFn = async (req) => {
      assert.equal(req.query.case, "windowFetch");
      asked.push(Buffer.from(req.query.value.key!).toString());
      const k = col([str("u")]);
      const v = col([long(70)]);
      return create(ReadResponseSchema, { keyLengths: k.lengths, keys: k.data, valueLengths: v.lengths, values: v.data, windows: [100n] });
    };
    const seen: unknown[] = [];
    class P implements Processor<string, string> {
      store!: WindowStore<string, bigint>;
      init(ctx: ProcessorContext): void {
        this.store = ctx.getStateStore("w");
      }
      async process(r: Record<string, string>): Promise<void> {
        seen.push(await this.store.fetch(r.key, 100));
        this.store.put(r.key, 1n, 200);
        this.store.put(r.key, 2n, 1000);
        const rows: [number, bigint][] = [];
        for await (const row of this.store.fetchRange(r.key, 0, 1000)) {
          rows.push(row);
        }
        seen.push(rows);
        const back: number[] = [];
        for await (const [t] of this.store.backwardFetchRange(r.key, 0, 1000)) {
          back.push(t);
        }
        seen.push(back);
      }
    }
    const r = await executor(() => new P(), read).process(
      bundle({
        init: true,
        stores: ["w"],
        records: [["c", "x", 1], ["u", "y", 2]],
        views: [{ store: "w", type: StoreType.WINDOW, entries: [[str("c"), long(50), 100]], uncovered: [str("u")] }],
      }),
    );
    assert.deepEqual(r.failures, []);
    // Window starts order numerically (100 < 200 < 1000), merged with the engine's rows.
    assert.deepEqual(seen, [50n, [[100, 50n], [200, 1n], [1000, 2n]], [1000, 200, 100], 70n, [[100, 70n], [200, 1n], [1000, 2n]], [1000, 200, 100]]);
    assert.deepEqual(asked, ["u", "u", "u"]);
    assert.deepEqual(ops(r)[1]!.map((o) => [o.kind, o.key, o.ts]), [["PUT", "c", 200], ["PUT", "c", 1000]]);
    assert.deepEqual(r.prefetchHits, [1]);
  });

  test("timestamped stores: values are { value, timestamp }; a put's op carries the value's timestamp; putIfAbsent", async () => {
    const seen: unknown[] = [];
    class P implements Processor<string, string> {
      store!: KeyValueStore<string, { value: bigint; timestamp: number }>;
      init(ctx: ProcessorContext): void {
        this.store = ctx.getStateStore("ts");
      }
      async process(r: Record<string, string>): Promise<void> {
        seen.push(await this.store.get(r.key));
        this.store.put(r.key, { value: 7n, timestamp: 1234 });
        seen.push(await this.store.putIfAbsent(r.key, { value: 8n, timestamp: 1 }));
        seen.push(await this.store.putIfAbsent("fresh", { value: 9n, timestamp: 2 }));
      }
    }
    const r = await executor(() => new P(), noRead).process(
      bundle({ init: true, stores: ["ts"], records: [["a", "x", 5]], views: [{ store: "ts", type: StoreType.TIMESTAMPED_KEY_VALUE, entries: [[str("a"), long(3)], [str("fresh"), null]] }] }),
    );
    assert.deepEqual(r.failures, []);
    // The view's timestamps default to 0 here (the test's view has none).
    assert.deepEqual(seen, [{ value: 3n, timestamp: 0 }, { value: 7n, timestamp: 1234 }, null]);
    assert.deepEqual(ops(r)[1]!.map((o) => [o.kind, o.key, o.value?.readBigInt64BE(), o.ts]), [["PUT", "a", 7n, 1234], ["PUT", "fresh", 9n, 2]]);
  });

  test("a store of the wrong kind, or a call outside the processor's calls, fails naming the store and call", async () => {
    const messages: string[] = [];
    let kept: ProcessorContext | undefined;
    class P implements Processor<string, string> {
      ctx!: ProcessorContext;
      init(ctx: ProcessorContext): void {
        this.ctx = ctx;
        kept = ctx;
      }
      async process(): Promise<void> {
        try {
          await this.ctx.getStateStore<WindowStore>("counts").fetch("a", 1);
        } catch (e) {
          messages.push(String(e));
        }
      }
    }
    await executor(() => new P(), noRead).process(bundle({ init: true, stores: ["counts"], records: [["a", "x", 1]], views: [{ store: "counts", entries: [] }] }));
    assert.throws(() => kept!.forward(new Record("k", 1, 1)), /forward: node KSTREAM-PROCESSOR-0000000001: the processor's context is used outside init, process or a punctuator/);
    assert.deepEqual(messages, ['TypeError: fetch: store "counts" is a key-value store, which has no fetch']);
  });

  test("an init that throws fails its entry; close entries call close and drop the instance", async () => {
    class P implements Processor {
      init(): void {
        throw new Error("no config");
      }
      process(): void {}
    }
    const ex = executor(() => new P(), noRead);
    const r = await ex.process(bundle({ init: true }));
    assert.equal(r.failures.length, 1);
    assert.equal(r.failures[0]!.index, 0);
    assert.match(r.failures[0]!.message, /no config/);
  });

  test("two processors of one bundle run depth first: a forward to a later step runs it at once, not as an op", async () => {
    const log: string[] = [];
    class First implements Processor<string, string, string, string> {
      ctx!: ProcessorContext<string, string>;
      init(ctx: ProcessorContext<string, string>): void {
        this.ctx = ctx;
      }
      process(r: Record<string, string>): void {
        log.push(`first ${r.value}`);
        this.ctx.forward(r.withValue(r.value + "1")); // to both children: SECOND in the bundle, OTHER outside it
        log.push(`first done ${r.value}`);
      }
    }
    class Second implements Processor<string, string, string, string> {
      ctx!: ProcessorContext<string, string>;
      init(ctx: ProcessorContext<string, string>): void {
        this.ctx = ctx;
      }
      process(r: Record<string, string>): void {
        log.push(`second ${r.value}`);
        this.ctx.forward(r.withValue(r.value + "2"));
      }
    }
    const b = bundle({ init: true, records: [["k", "a", 1], ["k", "b", 2]] });
    b.steps = [
      create(StepSchema, { token: 1, operation: Operation.PROCESS, node: "FIRST", children: ["SECOND", "OTHER"] }),
      create(StepSchema, { token: 2, operation: Operation.PROCESS, node: "SECOND", children: ["SINK"] }),
    ];
    b.outputValueSerde = "string";
    b.inits = [create(BundleEntrySchema, { kind: BundleEntry_Kind.INIT, step: 0 }), create(BundleEntrySchema, { kind: BundleEntry_Kind.INIT, step: 1 })];
    const ex = new Executor(new Map<number, AnyFunction>([[1, () => new First()], [2, () => new Second()]]), noRead);
    const r = await ex.process(b);
    assert.deepEqual(r.failures, []);
    assert.deepEqual(log, ["first a", "second a1", "first done a", "first b", "second b1", "first done b"]);
    assert.deepEqual(r.opCounts, [0, 0, 2, 2]);
    assert.deepEqual(r.opSteps, [0, 1, 0, 1]);
    assert.deepEqual(r.opTargets, [2, 0, 2, 0], "FIRST's forward to all goes to OTHER as an op (child 2); SECOND's to all its children");
    assert.deepEqual(split(r.opValues, r.opValueLengths).map((x) => x!.toString()), ["a1", "a12", "b1", "b12"]);
  });

  test("a supplier that returns no processor fails the init entry naming the node", async () => {
    const r = await executor(() => 42, noRead).process(bundle({ init: true }));
    assert.match(r.failures[0]!.message, /init: node KSTREAM-PROCESSOR-0000000001: the processor supplier returned number/);
  });
});

describe("functions with metadata (withMetadata)", () => {
  function chain(steps: [Operation, AnyFunction, Metadata][], headers: [string, string][][]) {
    const functions = new Map<number, AnyFunction>(steps.map(([, fn], i) => [i + 1, fn]));
    const records = [["a", "x", 10], ["b", "yy", 20]] as const;
    const keys = col(records.map((r) => str(r[0])));
    const values = col(records.map((r) => str(r[1])));
    const hk = col(headers.flat().map((h) => str(h[0])));
    const hv = col(headers.flat().map((h) => str(h[1])));
    const b = create(BundleSchema, {
      id: 1n,
      steps: steps.map(([operation, , metadata], i) => ({ token: i + 1, operation, node: `N${i}`, metadata })),
      keySerde: "string",
      valueSerde: "string",
      keyLengths: keys.lengths,
      keys: keys.data,
      valueLengths: values.lengths,
      values: values.data,
      topic: "in",
      partition: 1,
      offsets: [5n, 6n],
      timestamps: records.map((r) => BigInt(r[2])),
      headerCounts: headers.length > 0 ? headers.map((h) => h.length) : [],
      headerKeyLengths: hk.lengths,
      headerKeys: hk.data,
      headerValueLengths: hv.lengths,
      headerValues: hv.data,
    });
    return new Executor(functions).process(b);
  }

  test("a function is given the record's metadata; one that may write sets its outputs' timestamps and headers", async () => {
    const seen: unknown[] = [];
    const r = await chain(
      [
        [Operation.FILTER, (k: string, _v: string, m: RecordMetadata) => (seen.push([k, m.topic, m.partition, m.offset, m.timestamp, m.headers.map(([hk]) => hk)]), true), Metadata.READ],
        [
          Operation.FLAT_MAP_VALUES,
          (v: string, m: RecordMetadata) => {
            if (v === "yy") {
              m.timestamp = 99;
              m.headers.push(["added", str("1")]);
            }
            return [v, v];
          },
          Metadata.WRITE,
        ],
      ],
      [[["h", "1"]], []],
    );
    assert.deepEqual(r.failures, []);
    assert.deepEqual(seen, [["a", "in", 1, 5, 10, ["h"]], ["b", "in", 1, 6, 20, []]]);
    assert.deepEqual(r.outputCounts, [2, 2]);
    assert.deepEqual(r.outputTimestamps, [10n, 10n, 99n, 99n]);
    assert.deepEqual(r.outputHeaderCounts, [-1, -1, 1, 1]);
    assert.deepEqual(split(r.outputHeaderKeys, r.outputHeaderKeyLengths).map((x) => x!.toString()), ["added", "added"]);
  });

  test("withMetadata: the wrapped function gets the metadata the step brings; without it, it fails its records saying so", async () => {
    const f = withMetadata((v: string, m: RecordMetadata) => `${v}@${m.offset}`);
    const ok = await chain([[Operation.MAP_VALUES, f, Metadata.READ]], []);
    assert.deepEqual(ok.failures, []);
    assert.deepEqual(split(ok.values, ok.valueLengths).map((x) => x!.toString()), ["x@5", "yy@6"]);
    const without = await chain([[Operation.MAP_VALUES, f, Metadata.UNSPECIFIED]], []);
    assert.equal(without.failures.length, 2);
    assert.match(without.failures[0]!.message, /withMetadata: .* was called without the record's metadata: the engine does not send it for this step/);
  });

  test("a chain whose functions did not ask carries no output metadata; a bad timestamp fails its record", async () => {
    const plain = await chain([[Operation.MAP_VALUES, (v: string) => v, Metadata.UNSPECIFIED]], []);
    assert.deepEqual(plain.outputTimestamps, []);
    const bad = await chain([[Operation.MAP_VALUES, (v: string, m: RecordMetadata) => ((m.timestamp = v as unknown as number), v), Metadata.WRITE]], []);
    assert.deepEqual(bad.outputCounts, [0, 0]);
    assert.match(bad.failures[0]!.message, /a timestamp is an integer number of epoch milliseconds/);
  });
});

describe("a versioned store", () => {
  test("answers from the view's versions and its own puts; calls take effect in call order behind a Read, awaited or not", async () => {
    const answers: unknown[] = [];
    const reads: string[] = [];
    class History implements Processor<string, string, string, bigint> {
      h!: ProcessorVersionedKeyValueStore<string, bigint>;
      init(ctx: ProcessorContext<string, bigint>): void {
        this.h = ctx.getStateStore("h");
      }
      async process(): Promise<void> {
        // Not awaited one by one: b is not in the view (a Read), and the
        // calls after it wait for it, so a's put sees b's stream time.
        const calls = [this.h.put("b", 5n, 30), this.h.get("b"), this.h.put("a", 2n, 5), this.h.get("a"), this.h.get("a", { asOf: 12 })];
        answers.push(...(await Promise.all(calls)));
      }
    }
    const read: ReadFn = async (req) => {
      reads.push(`${req.store} ${req.query.case} ${Buffer.from(req.query.value as Uint8Array).toString("utf8")}`);
      await new Promise((r) => setTimeout(r, 5));
      return create(ReadResponseSchema, { keyLengths: [1], keys: str("b"), valueLengths: [8], values: long(3), windows: [25n] });
    };
    const b = bundle({ init: true, stores: ["h"], records: [["z", "x", 20]], views: [{ store: "h", type: StoreType.VERSIONED_KEY_VALUE, entries: [[str("a"), long(1), 10]] }] });
    Object.assign(b.stores[0]!, { versionCounts: [1], streamTimeMs: 10n, historyRetentionMs: 10n });
    const r = await executor(() => new History(), read).process(b);
    assert.equal(r.failures.length, 0, r.failures[0]?.message);
    assert.deepEqual(reads, ["h versions b"]);
    assert.deepEqual(answers, [
      PUT_RETURN_CODE_VALID_TO_UNDEFINED, // b's latest (its Read brought 3@25)
      { value: 5n, timestamp: 30, validTo: undefined },
      PUT_RETURN_CODE_NOT_PUT, // 5 < stream time 30 - 10 (run before b's put, it would have answered 10)
      { value: 1n, timestamp: 10, validTo: undefined },
      { value: 1n, timestamp: 10, validTo: undefined }, // before 30 - 10, but the latest version is found
    ]);
    // Ops in call order, each a PUT at the version's time (the expired one too).
    assert.deepEqual(ops(r)[1]!.map((o) => [o.kind, o.key, o.ts]), [["PUT", "b", 30], ["PUT", "a", 5]]);
  });
});
