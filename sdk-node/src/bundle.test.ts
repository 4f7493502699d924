import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { Executor } from "./bundle.js";
import type { AnyFunction } from "./outcomes.js";
import { type BundleResult, BundleSchema, Operation, RecordFailure_Kind } from "./gen/polystreams/v1alpha1/engine_pb.js";

// Columns are built and read here with Buffer directly, not with serde.ts, so
// that these tests check the executor against the protocol's layout.

type Bytes = Buffer | null;

function col(items: readonly Bytes[]): { data: Buffer; lengths: number[] } {
  return {
    data: Buffer.concat(items.flatMap((b) => (b === null ? [] : [b]))),
    lengths: items.map((b) => (b === null ? -1 : b.length)),
  };
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

const str = (s: string | null): Bytes => (s === null ? null : Buffer.from(s, "utf8"));
const long = (n: bigint): Buffer => {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(n);
  return b;
};

interface Steps {
  steps: [Operation, AnyFunction][];
  keySerde?: string;
  valueSerde?: string;
  outKey?: string;
  outValue?: string;
  keys?: Bytes[];
  values: Bytes[];
}

function run(s: Steps): Promise<BundleResult> {
  const functions = new Map<number, AnyFunction>();
  const steps = s.steps.map(([operation, fn], i) => {
    functions.set(i + 1, fn);
    return { token: i + 1, operation, node: `NODE-${i}` };
  });
  const keys = col(s.keys ?? s.values.map(() => null));
  const values = col(s.values);
  const bundle = create(BundleSchema, {
    id: 7n,
    steps,
    keySerde: s.keySerde ?? "string",
    valueSerde: s.valueSerde ?? "string",
    outputKeySerde: s.outKey ?? "",
    outputValueSerde: s.outValue ?? "",
    keyLengths: keys.lengths,
    keys: keys.data,
    valueLengths: values.lengths,
    values: values.data,
    topic: "in",
    partition: 0,
  });
  return new Executor(functions).process(bundle);
}

const texts = (bs: Bytes[]): (string | null)[] => bs.map((b) => (b === null ? null : b.toString("utf8")));
const outValues = (r: BundleResult): (string | null)[] => texts(split(r.values, r.valueLengths));
const outKeys = (r: BundleResult): (string | null)[] => texts(split(r.keys, r.keyLengths));
const failures = (r: BundleResult): [number, number, string][] => r.failures.map((f) => [f.index, f.step, f.message]);

describe("bundle executor", () => {
  test("mapValues: one output per record, keys not sent back", async () => {
    const r = await run({ steps: [[Operation.MAP_VALUES, (v: string) => v.toUpperCase()]], values: [str("a"), str("b")] });
    assert.equal(r.bundleId, 7n);
    assert.deepEqual(r.outputCounts, [1, 1]);
    assert.deepEqual(outValues(r), ["A", "B"]);
    assert.deepEqual(r.keyLengths, []);
    assert.equal(r.keys.length, 0);
    assert.deepEqual(r.failures, []);
  });

  test("a Kafka null value reaches the function as null and may stay null", async () => {
    const r = await run({ steps: [[Operation.MAP_VALUES, (v: string | null) => (v === null ? null : v + "!")]], values: [null, str("x")] });
    assert.deepEqual(r.outputCounts, [1, 1]);
    assert.deepEqual(outValues(r), [null, "x!"]);
  });

  test("flatMapValues: many, none, iterables and generators", async () => {
    const r = await run({
      steps: [
        [
          Operation.FLAT_MAP_VALUES,
          function* (v: string) {
            yield* v.split(" ").filter(Boolean);
          },
        ],
      ],
      values: [str("a b c"), str(""), str("d")],
    });
    assert.deepEqual(r.outputCounts, [3, 0, 1]);
    assert.deepEqual(outValues(r), ["a", "b", "c", "d"]);
    const s = await run({ steps: [[Operation.FLAT_MAP_VALUES, (v: string) => new Set([v, v + v])]], values: [str("x")] });
    assert.deepEqual(outValues(s), ["x", "xx"]);
  });

  test("flatMapValues refuses a string result for that record only", async () => {
    const r = await run({ steps: [[Operation.FLAT_MAP_VALUES, (v: string) => (v === "bad" ? v : [v])]], values: [str("ok"), str("bad")] });
    assert.deepEqual(r.outputCounts, [1, 0]);
    assert.deepEqual(outValues(r), ["ok"]);
    assert.deepEqual(failures(r), [[1, 0, "TypeError: flatMapValues must return an iterable of values, not string"]]);
  });

  test("flatMap: [key, value] pairs in record order, with a key column", async () => {
    const r = await run({
      steps: [[Operation.FLAT_MAP, (k: string | null, v: string) => v.split(" ").filter(Boolean).map((w) => [w, k] as const)]],
      keys: [str("k1"), str("k2"), null],
      values: [str("a b"), str(""), str("c")],
    });
    assert.deepEqual(r.outputCounts, [2, 0, 1]);
    assert.deepEqual(outKeys(r), ["a", "b", "c"]);
    assert.deepEqual(outValues(r), ["k1", "k1", null]);
    assert.deepEqual(r.failures, []);
  });

  test("flatMap fails a record whose result is no iterable of pairs, and that record only", async () => {
    const r = await run({
      steps: [[Operation.FLAT_MAP, (k: string, v: string) => (v === "s" ? v : v === "x" ? [[k, v], v] : [[v, k]])]],
      keys: [str("k1"), str("k2"), str("k3")],
      values: [str("s"), str("x"), str("y")],
    });
    assert.deepEqual(r.outputCounts, [0, 0, 1]);
    assert.deepEqual(outKeys(r), ["y"]);
    assert.deepEqual(outValues(r), ["k3"]);
    assert.deepEqual(failures(r), [
      [0, 0, "TypeError: flatMap must return an iterable of [key, value] pairs, not string"],
      [1, 0, "TypeError: flatMap must return [key, value] pairs, not string"],
    ]);
  });

  test("the with-key mappers read the key and keep it", async () => {
    const m = await run({
      steps: [[Operation.MAP_VALUES_WITH_KEY, (k: string | null, v: string) => `${k}:${v}`]],
      keys: [str("k1"), null],
      values: [str("a"), str("b")],
    });
    assert.deepEqual(outValues(m), ["k1:a", "null:b"]);
    assert.deepEqual(m.keyLengths, []);
    const f = await run({ steps: [[Operation.FLAT_MAP_VALUES_WITH_KEY, async (k: string, v: string) => [k, v]]], keys: [str("k1")], values: [str("a")] });
    assert.deepEqual(f.outputCounts, [2]);
    assert.deepEqual(outValues(f), ["k1", "a"]);
    assert.deepEqual(f.keyLengths, []);
  });

  test("filter none, filter all, filterNot", async () => {
    const none = await run({ steps: [[Operation.FILTER, () => false]], values: [str("a"), str("b")] });
    assert.deepEqual(none.outputCounts, [0, 0]);
    assert.deepEqual(none.valueLengths, []);
    const all = await run({ steps: [[Operation.FILTER, () => 1]], values: [str("a"), str("b")] });
    assert.deepEqual(all.outputCounts, [1, 1]);
    const not = await run({ steps: [[Operation.FILTER_NOT, (_k: unknown, v: string) => v.startsWith("x")]], values: [str("xa"), str("b")] });
    assert.deepEqual(not.outputCounts, [0, 1]);
    assert.deepEqual(outValues(not), ["b"]);
  });

  test("filter sees decoded keys", async () => {
    const r = await run({
      steps: [[Operation.FILTER, (k: string | null) => k === "keep"]],
      keys: [str("keep"), str("drop"), null],
      values: [str("1"), str("2"), str("3")],
    });
    assert.deepEqual(r.outputCounts, [1, 0, 0]);
    assert.deepEqual(r.keyLengths, [], "filter changes no key: keys are not sent back");
  });

  test("keys are sent back only when a step changes them (map, selectKey)", async () => {
    const m = await run({
      steps: [[Operation.MAP, (k: string, v: string) => [v, k]]],
      keys: [str("k1"), str("k2")],
      values: [str("v1"), str("v2")],
    });
    assert.deepEqual(outKeys(m), ["v1", "v2"]);
    assert.deepEqual(outValues(m), ["k1", "k2"]);
    const s = await run({
      steps: [
        [Operation.FLAT_MAP_VALUES, (v: string) => v.split(" ")],
        [Operation.SELECT_KEY, (_k: unknown, v: string) => v.toUpperCase()],
      ],
      values: [str("a b"), str("c")],
    });
    assert.deepEqual(s.outputCounts, [2, 1]);
    assert.deepEqual(outKeys(s), ["A", "B", "C"]);
    assert.deepEqual(outValues(s), ["a", "b", "c"]);
  });

  test("map must return a [key, value] pair", async () => {
    const r = await run({ steps: [[Operation.MAP, (k: string, v: string) => (v === "x" ? v : [k, v])]], keys: [str("a"), str("b")], values: [str("y"), str("x")] });
    assert.deepEqual(r.outputCounts, [1, 0]);
    assert.deepEqual(failures(r), [[1, 0, "TypeError: map must return a [key, value] pair, not string"]]);
  });

  test("output serdes: map to json values and long keys", async () => {
    const r = await run({
      steps: [[Operation.MAP, (_k: unknown, v: string) => [BigInt(v.length), { v }]]],
      outKey: "long",
      outValue: "json",
      values: [str("abc")],
    });
    assert.deepEqual(split(r.keys, r.keyLengths), [long(3n)]);
    assert.deepEqual(outValues(r), ['{"v":"abc"}']);
  });

  test("peek passes records on, foreach passes nothing", async () => {
    const seen: string[] = [];
    const p = await run({ steps: [[Operation.PEEK, (_k: unknown, v: string) => seen.push(v)]], values: [str("a"), str("b")] });
    assert.deepEqual(outValues(p), ["a", "b"]);
    const f = await run({ steps: [[Operation.FOREACH, (_k: unknown, v: string) => seen.push(v)]], values: [str("c")] });
    assert.deepEqual(f.outputCounts, [0]);
    assert.deepEqual(seen, ["a", "b", "c"]);
  });

  test("a throwing function fails its record only, naming the step; never a substituted value", async () => {
    const r = await run({
      steps: [
        [Operation.MAP_VALUES, (v: string) => v + "1"],
        [
          Operation.MAP_VALUES,
          (v: string) => {
            if (v === "poison1") {
              throw new RangeError("poison pill");
            }
            return v + "2";
          },
        ],
      ],
      values: [str("a"), str("poison"), str("c")],
    });
    assert.deepEqual(r.outputCounts, [1, 0, 1]);
    assert.deepEqual(outValues(r), ["a12", "c12"]);
    assert.deepEqual(failures(r), [[1, 1, "RangeError: poison pill"]]);
  });

  test("a failure after flatMapValues drops every output of that record", async () => {
    const r = await run({
      steps: [
        [Operation.FLAT_MAP_VALUES, (v: string) => v.split(" ")],
        [
          Operation.MAP_VALUES,
          (v: string) => {
            if (v === "bad") {
              throw new Error("no");
            }
            return v;
          },
        ],
      ],
      values: [str("a bad b"), str("c d")],
    });
    assert.deepEqual(r.outputCounts, [0, 2]);
    assert.deepEqual(outValues(r), ["c", "d"]);
    assert.deepEqual(failures(r), [[0, 1, "Error: no"]]);
  });

  test("async functions: awaited per step, results in record order", async () => {
    const order: string[] = [];
    const r = await run({
      steps: [
        [
          Operation.MAP_VALUES,
          async (v: string) => {
            await new Promise((resolve) => setTimeout(resolve, v === "a" ? 20 : 1));
            order.push(v);
            return v.toUpperCase();
          },
        ],
        [Operation.FILTER, async (_k: unknown, v: string) => v !== "B"],
        [Operation.FLAT_MAP_VALUES, async (v: string) => [v, v]],
        [
          Operation.FLAT_MAP_VALUES,
          async function* (v: string) {
            yield v + "!";
          },
        ],
      ],
      values: [str("a"), str("b"), str("c")],
    });
    assert.deepEqual(order, ["b", "c", "a"], "the calls of one step run concurrently");
    assert.deepEqual(r.outputCounts, [2, 0, 2]);
    assert.deepEqual(outValues(r), ["A!", "A!", "C!", "C!"]);
  });

  test("a rejected promise fails its record like a throw", async () => {
    const r = await run({
      steps: [
        [
          Operation.MAP_VALUES,
          async (v: string) => {
            if (v === "x") {
              throw new TypeError("async no");
            }
            return v;
          },
        ],
      ],
      values: [str("x"), str("y")],
    });
    assert.deepEqual(r.outputCounts, [0, 1]);
    assert.deepEqual(failures(r), [[0, 0, "TypeError: async no"]]);
  });

  test("undecodable input and unencodable output fail their records", async () => {
    const bad = await run({ steps: [[Operation.MAP_VALUES, (v: bigint) => v + 1n]], valueSerde: "long", values: [long(1n), Buffer.from("01", "hex")] });
    assert.deepEqual(bad.outputCounts, [1, 0]);
    assert.deepEqual(failures(bad), [[1, 0, "RangeError: long serde: want 8 bytes, got 1"]]);
    const out = await run({ steps: [[Operation.MAP_VALUES, (v: string) => (v === "n" ? 5 : v)]], values: [str("n"), str("s")] });
    assert.deepEqual(out.outputCounts, [0, 1]);
    assert.deepEqual(outValues(out), ["s"]);
    assert.deepEqual(failures(out), [[0, 0, "TypeError: string serde: want a string, got number"]]);
    // The engine applies default.deserialization.exception.handler to the first, processing.exception.handler to the second.
    assert.deepEqual(bad.failures.map((f) => f.kind), [RecordFailure_Kind.DESERIALIZATION]);
    assert.deepEqual(out.failures.map((f) => f.kind), [RecordFailure_Kind.PROCESSING]);
  });

  test("an unregistered token fails every record", async () => {
    const bundle = create(BundleSchema, {
      id: 1n,
      steps: [{ token: 99, operation: Operation.MAP_VALUES, node: "KSTREAM-MAPVALUES-0000000001" }],
      valueSerde: "string",
      valueLengths: [1],
      values: Buffer.from("a"),
    });
    const r = await new Executor(new Map()).process(bundle);
    assert.deepEqual(r.outputCounts, [0]);
    assert.match(r.failures[0]!.message, /token 99, which is not registered/);
  });
});

describe("fold bundles", () => {
  function fold(op: Operation, fns: Map<number, AnyFunction>, groups: { key: string; agg: Bytes; values: Bytes[] }[], serde = "long") {
    const keys = col(groups.map((g) => str(g.key)));
    const aggs = col(groups.map((g) => g.agg));
    const values = col(groups.flatMap((g) => g.values));
    return new Executor(fns).process(
      create(BundleSchema, {
        id: 3n,
        steps: [{ token: 1, operation: op, node: "KSTREAM-REDUCE-0000000002", initializerToken: 2 }],
        keySerde: "string",
        valueSerde: serde,
        outputKeySerde: "string",
        outputValueSerde: serde,
        aggregateSerde: serde,
        keyLengths: keys.lengths,
        keys: keys.data,
        groupSizes: groups.map((g) => g.values.length),
        aggregateLengths: aggs.lengths,
        aggregates: aggs.data,
        valueLengths: values.lengths,
        values: values.data,
      }),
    );
  }
  const longs = (r: BundleResult): bigint[] => split(r.values, r.valueLengths).map((b) => b!.readBigInt64BE(0));

  test("reduce: the first value of a new key becomes its aggregate; one output per value", async () => {
    const r = await fold(Operation.REDUCE, new Map([[1, (a: bigint, v: bigint) => a + v]]), [
      { key: "a", agg: null, values: [long(1n), long(2n), long(3n)] },
      { key: "b", agg: long(10n), values: [long(5n)] },
    ]);
    assert.deepEqual(r.outputCounts, [1, 1, 1, 1]);
    assert.deepEqual(longs(r), [1n, 3n, 6n, 15n]);
  });

  test("aggregate: the initializer starts a key; async aggregators fold in order", async () => {
    const fns = new Map<number, AnyFunction>([
      [2, async () => 100n],
      [
        1,
        async (k: string, v: bigint, a: bigint) => {
          await new Promise((resolve) => setTimeout(resolve, Number(v)));
          return a * 2n + v + BigInt(k.length);
        },
      ],
    ]);
    const r = await fold(Operation.AGGREGATE, fns, [
      { key: "a", agg: null, values: [long(3n), long(1n)] },
      { key: "bb", agg: long(1n), values: [long(2n)] },
    ]);
    assert.deepEqual(longs(r), [204n, 410n, 6n]);
  });

  test("a failing value fails alone: its key goes on from the aggregate before it", async () => {
    const r = await fold(
      Operation.REDUCE,
      new Map([
        [
          1,
          (a: bigint, v: bigint) => {
            if (v === 0n) {
              throw new RangeError("zero");
            }
            return a + v;
          },
        ],
      ]),
      [
        { key: "a", agg: long(1n), values: [long(1n), long(0n), long(5n)] },
        { key: "b", agg: long(1n), values: [long(2n)] },
      ],
    );
    assert.deepEqual(r.outputCounts, [1, 0, 1, 1]);
    assert.deepEqual(longs(r), [2n, 7n, 3n]);
    assert.deepEqual(failures(r), [[1, 0, "RangeError: zero"]]);
    assert.deepEqual(r.failures.map((f) => f.kind), [RecordFailure_Kind.PROCESSING]);
  });

  test("aggregates are encoded as made: one changed in place is emitted as it was", async () => {
    const fns = new Map<number, AnyFunction>([
      [2, () => []],
      [
        1,
        (_k: string, v: string, list: string[]) => {
          list.push(v);
          return list;
        },
      ],
    ]);
    const r = await fold(Operation.AGGREGATE, fns, [{ key: "a", agg: null, values: [str('"x"'), str('"y"')] }], "json");
    assert.deepEqual(outValues(r), ['["x"]', '["x","y"]']);
  });

  test("a key whose first value failed starts from the initializer again", async () => {
    let inits = 0;
    const fns = new Map<number, AnyFunction>([
      [2, async () => (inits++, 10n)],
      [
        1,
        async (_k: string, v: bigint, a: bigint) => {
          if (v < 0n) {
            throw new Error("negative");
          }
          return a + v;
        },
      ],
    ]);
    const r = await fold(Operation.AGGREGATE, fns, [{ key: "a", agg: null, values: [long(-1n), long(2n), long(3n)] }]);
    assert.deepEqual(r.outputCounts, [0, 1, 1]);
    assert.deepEqual(longs(r), [12n, 15n]);
    assert.equal(inits, 2);
  });

  test("a null aggregate is a failure", async () => {
    const r = await fold(Operation.REDUCE, new Map([[1, () => null]]), [{ key: "a", agg: long(1n), values: [long(1n)] }]);
    assert.deepEqual(r.outputCounts, [0]);
    assert.equal(r.failures[0]!.message, "TypeError: reduce returned null; an aggregate cannot be null");
  });
});

describe("table fold bundles", () => {
  // A change of a grouped table: its old value and its new value (null: none).
  interface Change {
    old: Bytes;
    value: Bytes;
  }
  function tableFold(op: Operation, fns: Map<number, AnyFunction>, groups: { key: string; agg: Bytes; changes: Change[] }[], serde = "long") {
    const keys = col(groups.map((g) => str(g.key)));
    const aggs = col(groups.map((g) => g.agg));
    const values = col(groups.flatMap((g) => g.changes.map((c) => c.value)));
    const olds = col(groups.flatMap((g) => g.changes.map((c) => c.old)));
    return new Executor(fns).process(
      create(BundleSchema, {
        id: 4n,
        steps: [{ token: 1, operation: op, node: "KTABLE-AGGREGATE-0000000004", initializerToken: op === Operation.AGGREGATE ? 2 : 0, subtractorToken: 3 }],
        keySerde: "string",
        valueSerde: serde,
        outputKeySerde: "string",
        outputValueSerde: serde,
        aggregateSerde: serde,
        keyLengths: keys.lengths,
        keys: keys.data,
        groupSizes: groups.map((g) => g.changes.length),
        aggregateLengths: aggs.lengths,
        aggregates: aggs.data,
        valueLengths: values.lengths,
        values: values.data,
        oldValueLengths: olds.lengths,
        oldValues: olds.data,
      }),
    );
  }
  /** Each output as a bigint, or null for "the key has no aggregate" (length -1). */
  const outs = (r: BundleResult): (bigint | null)[] => split(r.values, r.valueLengths).map((b) => (b === null ? null : b.readBigInt64BE(0)));
  const change = (old: bigint | null, value: bigint | null): Change => ({ old: old === null ? null : long(old), value: value === null ? null : long(value) });

  // Calls are logged, so that the order (subtractor first, then adder) is pinned.
  function reducers(log: string[]): Map<number, AnyFunction> {
    return new Map<number, AnyFunction>([
      [1, (a: bigint, v: bigint) => (log.push(`add ${a}+${v}`), a + v)],
      [3, (a: bigint, v: bigint) => (log.push(`sub ${a}-${v}`), a - v)],
    ]);
  }

  test("reduce: per change the subtractor removes the old value, then the adder adds the new one (KTableReduce)", async () => {
    const log: string[] = [];
    const r = await tableFold(Operation.REDUCE, reducers(log), [
      // a new key: its first value becomes the aggregate, no call; then a replacement, -5 +10
      { key: "eu", agg: null, changes: [change(null, 5n), change(5n, 10n)] },
      // a key with an aggregate loses a value that moved away (no new value)
      { key: "us", agg: long(9n), changes: [change(4n, null)] },
    ]);
    assert.deepEqual(r.outputCounts, [1, 1, 1]);
    assert.deepEqual(outs(r), [5n, 10n, 5n]);
    assert.deepEqual(log, ["sub 5-5", "add 0+10", "sub 9-4"]);
    assert.deepEqual(r.failures, []);
  });

  test("a change that only removes from a key with no aggregate leaves none: an output of length -1", async () => {
    const log: string[] = [];
    const r = await tableFold(Operation.REDUCE, reducers(log), [{ key: "eu", agg: null, changes: [change(3n, null), change(null, 2n)] }]);
    assert.deepEqual(r.outputCounts, [1, 1]);
    assert.deepEqual(r.valueLengths, [-1, 8]);
    assert.deepEqual(outs(r), [null, 2n]);
    assert.deepEqual(log, [], "no aggregate to subtract from, and a first value becomes the aggregate");
  });

  test("a subtractor returning null leaves the key with no aggregate; the next value starts it again", async () => {
    const fns = new Map<number, AnyFunction>([
      [1, (a: bigint, v: bigint) => a + v],
      [3, (a: bigint, v: bigint) => (a - v === 0n ? null : a - v)],
    ]);
    const r = await tableFold(Operation.REDUCE, fns, [{ key: "eu", agg: long(7n), changes: [change(7n, null), change(null, 4n), change(4n, 6n)] }]);
    assert.deepEqual(outs(r), [null, 4n, 6n]);
  });

  test("aggregate: subtractor(key, old, agg), then adder(key, new, agg), the initializer starting a key with none (KTableAggregate)", async () => {
    const log: string[] = [];
    const fns = new Map<number, AnyFunction>([
      [2, () => (log.push("init"), 100n)],
      [1, async (k: string, v: bigint, a: bigint) => (log.push(`add ${k} ${a}+${v}`), a + v)],
      [3, async (k: string, v: bigint, a: bigint) => (log.push(`sub ${k} ${a}-${v}`), a - v)],
    ]);
    const r = await tableFold(Operation.AGGREGATE, fns, [
      { key: "eu", agg: null, changes: [change(null, 1n), change(1n, 2n), change(2n, null)] },
      { key: "us", agg: null, changes: [change(8n, null)] },
    ]);
    assert.deepEqual(r.outputCounts, [1, 1, 1, 1]);
    assert.deepEqual(outs(r), [101n, 102n, 100n, null]);
    assert.deepEqual(
      log.filter((l) => !l.includes(" us ")),
      ["init", "add eu 100+1", "sub eu 101-1", "add eu 100+2", "sub eu 102-2"],
    );
    assert.ok(!log.some((l) => l.includes(" us ")), "a key with no aggregate calls no subtractor");
  });

  test("the initializer starts a key whose aggregate the subtractor removed", async () => {
    let inits = 0;
    const fns = new Map<number, AnyFunction>([
      [2, () => (inits++, 0n)],
      [1, (_k: string, v: bigint, a: bigint) => a + v],
      [3, () => null],
    ]);
    const r = await tableFold(Operation.AGGREGATE, fns, [{ key: "eu", agg: long(5n), changes: [change(5n, 3n)] }]);
    assert.deepEqual(outs(r), [3n]);
    assert.equal(inits, 1);
  });

  test("a failing change fails alone, whichever function threw; its key goes on from the aggregate before it", async () => {
    const fns = new Map<number, AnyFunction>([
      [1, (a: bigint, v: bigint) => {
        if (v === 0n) {
          throw new RangeError("zero added");
        }
        return a + v;
      }],
      [3, async (a: bigint, v: bigint) => {
        if (v < 0n) {
          throw new RangeError("negative removed");
        }
        return a - v;
      }],
    ]);
    const r = await tableFold(Operation.REDUCE, fns, [
      { key: "eu", agg: long(10n), changes: [change(-1n, 4n), change(null, 0n), change(3n, 1n)] },
      { key: "us", agg: long(1n), changes: [change(1n, 2n)] },
    ]);
    assert.deepEqual(r.outputCounts, [0, 0, 1, 1]);
    assert.deepEqual(outs(r), [8n, 2n]);
    assert.deepEqual(failures(r), [
      [0, 0, "RangeError: negative removed"],
      [1, 0, "RangeError: zero added"],
    ]);
  });

  test("a subtractor returning undefined is a failure; an adder returning null too", async () => {
    const r = await tableFold(Operation.REDUCE, new Map<number, AnyFunction>([[1, () => null], [3, () => undefined]]), [
      { key: "eu", agg: long(1n), changes: [change(1n, null), change(null, 2n)] },
    ]);
    assert.deepEqual(r.outputCounts, [0, 0]);
    assert.deepEqual(failures(r), [
      [0, 0, "TypeError: reduce subtractor returned undefined; return null to leave the key with no aggregate"],
      [1, 0, "TypeError: reduce returned null; an aggregate cannot be null"],
    ]);
  });

  test("null new and old values are absent, not decoded: a json null value is a value", async () => {
    const seen: unknown[] = [];
    const fns = new Map<number, AnyFunction>([
      [2, () => []],
      [1, (_k: string, v: unknown, list: unknown[]) => (seen.push(v), [...list, v])],
      [3, (_k: string, v: unknown, list: unknown[]) => list.filter((x) => x !== v)],
    ]);
    const r = await tableFold(
      Operation.AGGREGATE,
      fns,
      [{ key: "k", agg: null, changes: [{ old: null, value: str("null") }, { old: str("null"), value: null }, { old: null, value: str('"a"') }] }],
      "json",
    );
    assert.deepEqual(outValues(r), ["[null]", "[]", '["a"]']);
    assert.deepEqual(seen, [null, "a"]);
  });

  test("an unregistered subtractor fails every change; old values must match the values", async () => {
    const missing = await tableFold(Operation.REDUCE, new Map([[1, (a: bigint) => a]]), [{ key: "k", agg: null, changes: [change(null, 1n)] }]);
    assert.deepEqual(missing.outputCounts, [0]);
    assert.match(missing.failures[0]!.message, /subtractor token 3, which is not registered/);
    const bundle = create(BundleSchema, {
      id: 5n,
      steps: [{ token: 1, operation: Operation.REDUCE, node: "KTABLE-REDUCE-0000000004", subtractorToken: 3 }],
      keySerde: "string",
      valueSerde: "long",
      keyLengths: [1],
      keys: Buffer.from("k"),
      groupSizes: [1],
      aggregateLengths: [-1],
      valueLengths: [8],
      values: long(1n),
    });
    const r = await new Executor(reducers([])).process(bundle);
    assert.deepEqual(r.outputCounts, [0]);
    assert.match(r.failures[0]!.message, /malformed fold bundle: .* with 0 old values/);
  });
});

describe("join bundles", () => {
  const json = (v: unknown): Bytes => (v === undefined ? null : Buffer.from(JSON.stringify(v), "utf8"));

  function joinBundle(values: Bytes[], others: Bytes[], fn: AnyFunction | null, opts: { out?: string; otherLengths?: number[] } = {}) {
    const v = col(values);
    const o = col(others);
    const functions = new Map<number, AnyFunction>(fn === null ? [] : [[1, fn]]);
    const bundle = create(BundleSchema, {
      id: 3n,
      steps: [{ token: 1, operation: Operation.VALUE_JOIN, node: "KSTREAM-JOIN-0000000004" }],
      keySerde: "string",
      valueSerde: "json",
      outputKeySerde: "string",
      outputValueSerde: opts.out ?? "json",
      keyLengths: values.map(() => -1),
      valueLengths: v.lengths,
      values: v.data,
      otherValueLengths: opts.otherLengths ?? o.lengths,
      otherValues: o.data,
      otherValueSerde: "string",
      topic: "orders",
    });
    return new Executor(functions).process(bundle);
  }

  test("the joiner sees the value and the table value, null for a left join's miss", async () => {
    const calls: unknown[] = [];
    const r = await joinBundle([json({ id: 1 }), json({ id: 2 })], [str("ann"), null], (v: { id: number }, name: string | null) => {
      calls.push([v, name]);
      return { order: v.id, customer: name };
    });
    assert.deepEqual(r.outputCounts, [1, 1]);
    assert.deepEqual(r.failures, []);
    assert.deepEqual(outValues(r).map((s) => JSON.parse(s!)), [
      { order: 1, customer: "ann" },
      { order: 2, customer: null },
    ]);
    assert.deepEqual(calls, [
      [{ id: 1 }, "ann"],
      [{ id: 2 }, null],
    ]);
  });

  test("async joiners are awaited; a throw or rejection fails its record alone; null and undefined are null values", async () => {
    const r = await joinBundle(
      [json({ id: 1 }), json({ id: 2 }), json({ id: 3 }), json({ id: 4 }), json({ id: 5 })],
      [str("a"), str("b"), str("c"), str("d"), str("e")],
      (v: { id: number }, name: string) => {
        switch (v.id) {
          case 2:
            throw new RangeError("no");
          case 3:
            return null;
          case 4:
            return Promise.reject(new Error("later"));
          case 5:
            return undefined;
          default:
            return Promise.resolve(name);
        }
      },
      { out: "string" },
    );
    assert.deepEqual(r.outputCounts, [1, 0, 1, 0, 1]);
    assert.deepEqual(outValues(r), ["a", null, null]);
    assert.deepEqual(
      r.failures.map((f) => [f.index, f.message, f.kind]),
      [
        [1, "RangeError: no", RecordFailure_Kind.PROCESSING],
        [3, "Error: later", RecordFailure_Kind.PROCESSING],
      ],
    );
  });

  test("a value or table value that does not decode fails as deserialization; an unencodable result as processing", async () => {
    const r = await joinBundle([Buffer.from("{"), json({ id: 2 }), json({ id: 3 })], [str("a"), Buffer.from([0xff]), str("c")], () => 1n, {
      out: "json",
    });
    assert.deepEqual(r.outputCounts, [0, 0, 0]);
    assert.deepEqual(
      r.failures.map((f) => [f.index, f.kind]),
      [
        [0, RecordFailure_Kind.DESERIALIZATION],
        [1, RecordFailure_Kind.DESERIALIZATION],
        [2, RecordFailure_Kind.PROCESSING],
      ],
    );
    assert.match(r.failures[1]!.message, /\(the table value\)$/);
  });

  test("an unregistered joiner or a malformed bundle fails every record", async () => {
    const r = await joinBundle([json({ id: 1 })], [str("a")], null);
    assert.deepEqual(r.outputCounts, [0]);
    assert.match(r.failures[0]!.message, /token 1, which is not registered/);
    const m = await joinBundle([json({ id: 1 }), json({ id: 2 })], [str("a"), str("b")], (v: unknown) => v, { otherLengths: [1] });
    assert.deepEqual(m.outputCounts, [0, 0]);
    assert.deepEqual(
      m.failures.map((f) => [f.index, f.message, f.kind]),
      [0, 1].map((i) => [i, "RangeError: malformed join bundle: 1 table values for 2 records", RecordFailure_Kind.PROCESSING]),
    );
  });
});
