/**
 * Fold programs: the fold bundles of reduce and aggregate over session and
 * sliding windows (host feature "fold_programs", Bundle.foldBases).
 *
 * The engine runs Kafka Streams' window algorithm (which windows a record
 * makes, updates and merges depends only on times) and sends the folds it
 * needs as data: fold value i starts from the aggregate foldBases[i] names,
 * merges in its mergeCounts[i] operands (the next refs of mergeRefs), then
 * folds in its value (record valueRefs[i]); its one output is the result. A
 * ref r names -1: the initializer's aggregate (reduce: none); 0 <= r < A
 * (A = the number of aggregates, a pool here): stored aggregate r; r >= A:
 * the output of the earlier fold value r - A.
 *
 * Every reference is decoded afresh from its bytes, so a function that
 * changes an aggregate in place cannot change another value's start. A
 * value whose call throws (or rejects, or returns null or undefined) fails
 * alone, and so does every value that refers to its output. Values of one
 * group are folded in order, each promise awaited before the next value;
 * groups interleave, and a value that refers to a value of another group
 * still in flight waits for it.
 */

import { create } from "@bufbuild/protobuf";
import { Buffer } from "node:buffer";
import { type Bundle, type BundleResult, Operation, RecordFailure_Kind, RecordFailureSchema } from "./gen/polystreams/v1alpha1/engine_pb.js";
import { type AnyFunction, byRefs, failEvery, isThenable } from "./outcomes.js";
import { decode, decodeColumn, encode, errorText } from "./serde.js";

/** The step of a program with its functions resolved. */
export interface ProgramStep {
  /** REDUCE or AGGREGATE. */
  readonly op: Operation;
  readonly node: string;
  /** reducer(aggregate, value), or aggregator(key, value, aggregate). */
  readonly fn: AnyFunction;
  /** An aggregate's initializer. */
  readonly init: AnyFunction | undefined;
  /** An aggregate's merger(key, aggregate1, aggregate2); undefined when none is registered under mergerToken. */
  readonly merger: AnyFunction | undefined;
  readonly mergerToken: number;
  /** A table fold (a subtractor): never a program. */
  readonly table: boolean;
}

/** A reduce's missing aggregate (or a stored aggregate of length -1). */
const NONE: unique symbol = Symbol("none");

/** A failure whose message is not an exception's text; undecoded: a stored aggregate did not decode. */
class Failure {
  constructor(
    readonly message: string,
    readonly undecoded = false,
  ) {}
}

function text(e: unknown): string {
  return e instanceof Failure ? e.message : errorText(e);
}

/** f(x), or when x is a promise, a promise of f(its value). */
function chain(x: unknown, f: (v: unknown) => unknown): unknown {
  return isThenable(x) ? Promise.resolve(x).then(f) : f(x);
}

/** What is wrong with a program, every problem at once; null when nothing is. */
function check(step: ProgramStep, b: Bundle, n: number, pool: number): string | null {
  const problems: string[] = [];
  const counts = b.mergeCounts;
  if (b.valueRefs.length !== n || b.foldBases.length !== n || counts.length !== n) {
    problems.push(`${b.valueRefs.length} value refs, ${b.foldBases.length} fold bases and ${counts.length} merge counts`);
  }
  let groupTotal = 0;
  for (const size of b.groupSizes) {
    groupTotal += size;
  }
  if (groupTotal !== n || b.keyLengths.length !== b.groupSizes.length || b.groupSizes.some((s) => s < 0)) {
    problems.push(`${b.groupSizes.length} group sizes adding up to ${groupTotal} and ${b.keyLengths.length} keys for ${n} values`);
  }
  const records = b.valueLengths.length;
  const badValue = b.valueRefs.findIndex((j) => j < 0 || j >= records);
  if (badValue >= 0) {
    problems.push(`fold value ${badValue} is record ${b.valueRefs[badValue]}, one of none of the ${records} records`);
  }
  let merges = 0;
  for (const c of counts) {
    merges += c;
  }
  if (counts.some((c) => c < 0) || merges !== b.mergeRefs.length) {
    problems.push(`merge counts adding up to ${merges} for ${b.mergeRefs.length} merge refs`);
  }
  if (problems.length === 0) {
    // Refs: -1 (bases only), a stored aggregate, or an earlier value's output.
    const names = (r: number, i: number): boolean => r >= -1 && r < pool + i;
    const badBase = b.foldBases.findIndex((r, i) => !names(r, i));
    if (badBase >= 0) {
      problems.push(refProblem(`fold value ${badBase}'s base`, b.foldBases[badBase]!, badBase, pool));
    }
    let m = 0;
    for (let i = 0; i < n; i++) {
      const end = m + counts[i]!;
      for (; m < end; m++) {
        const r = b.mergeRefs[m]!;
        if (r === -1 || !names(r, i)) {
          problems.push(r === -1 ? `fold value ${i}'s merge operand is -1 (merge refs name aggregates)` : refProblem(`fold value ${i}'s merge operand`, r, i, pool));
          i = n;
          break;
        }
      }
    }
  }
  if (problems.length > 0) {
    return `RangeError: malformed fold program: ${problems.join("; ")}`;
  }
  if (step.table) {
    return `TypeError: step 0 (${step.node}) is a table fold (it has a subtractor), which no fold program runs`;
  }
  if (step.op === Operation.AGGREGATE && step.merger === undefined) {
    const i = counts.findIndex((c) => c > 0);
    if (i >= 0) {
      return step.mergerToken === 0
        ? `ReferenceError: aggregate step (${step.node}) names no merger token, and fold value ${i} merges aggregates`
        : `ReferenceError: aggregate step (${step.node}) names merger token ${step.mergerToken}, which is not registered in this host (fold value ${i} merges aggregates)`;
    }
  }
  return null;
}

function refProblem(what: string, r: number, i: number, pool: number): string {
  return `${what} ${r} names neither the initializer (-1), one of the ${pool} stored aggregates, nor one of the ${i} earlier values`;
}

/** Runs a fold program (a bundle with foldBases) into result. */
export async function runProgram(
  step: ProgramStep,
  b: Bundle,
  result: BundleResult,
  at: ((i: number) => ProgramStep) | null = null,
): Promise<BundleResult> {
  const n = b.valueRefs.length || b.foldBases.length;
  const pool = b.aggregateLengths.length;
  const problem = check(step, b, n, pool);
  if (problem !== null) {
    return failEvery(result, n, 0, problem);
  }
  const serde = b.aggregateSerde || b.outputValueSerde || b.valueSerde;
  const outSerde = b.outputValueSerde || serde;
  if (outSerde !== serde) {
    return failEvery(result, n, 0, `RangeError: malformed fold bundle: output value serde "${outSerde}" is not the aggregate serde "${serde}"`);
  }
  // The pool's bytes: aggregate r is aggregates[starts[r] : +lengths[r]].
  const starts = new Array<number>(pool);
  let offset = 0;
  for (let r = 0; r < pool; r++) {
    starts[r] = offset;
    offset += Math.max(b.aggregateLengths[r]!, 0);
  }
  if (offset !== b.aggregates.byteLength || b.aggregateLengths.some((l) => l < -1)) {
    return failEvery(result, n, 0, `RangeError: malformed fold program: aggregate lengths account for ${offset} bytes, the column holds ${b.aggregates.byteLength}`);
  }
  const values = byRefs(decodeColumn(b.valueSerde, b.values, b.valueLengths), b.valueRefs);
  const keys = step.op === Operation.REDUCE ? null : decodeColumn(b.keySerde, b.keys, b.keyLengths);
  const mergeStart = new Array<number>(n);
  for (let i = 0, m = 0; i < n; i++) {
    mergeStart[i] = m;
    m += b.mergeCounts[i]!;
  }

  const encoded = new Array<Uint8Array | undefined>(n);
  const failures = new Map<number, string>();
  /** The values that failed because their key, value or a stored aggregate did not decode (RecordFailure.kind). */
  const undecoded = new Set<number>();
  /** Values waiting for value j's outcome (one in flight in another group). */
  const waiters = new Map<number, (() => void)[]>();
  const done = (i: number): void => {
    const w = waiters.get(i);
    if (w !== undefined) {
      waiters.delete(i);
      w.forEach((wake) => wake());
    }
  };
  const fail = (i: number, e: unknown, deserialization = false): void => {
    failures.set(i, typeof e === "string" ? e : text(e));
    if (deserialization || (e instanceof Failure && e.undecoded)) {
      undecoded.add(i);
    }
    done(i);
  };
  const settle = (i: number, acc: unknown): void => {
    let bytes: Uint8Array | null;
    try {
      bytes = encode(serde, acc);
    } catch (e) {
      fail(i, errorText(e));
      return;
    }
    if (bytes === null) {
      fail(i, `TypeError: the aggregate encodes as null with serde "${serde}"`);
      return;
    }
    encoded[i] = bytes;
    done(i);
  };

  const what = step.op === Operation.REDUCE ? "reduce" : "aggregate";
  /** A call's result as an aggregate: null and undefined are failures. */
  const checked = (r: unknown, fn: string): unknown =>
    chain(r, (a) => {
      if (a === null || a === undefined) {
        throw new TypeError(`${what} ${fn} returned ${String(a)}; an aggregate cannot be null`);
      }
      return a;
    });
  const initial = (st: ProgramStep): unknown => checked(st.init!(), "initializer");
  /** The aggregate ref r names, decoded afresh (or a promise of it); st's initializer makes ref -1's. */
  const resolve = (r: number, st: ProgramStep): unknown => {
    if (r === -1) {
      return step.op === Operation.REDUCE ? NONE : initial(st);
    }
    if (r < pool) {
      const length = b.aggregateLengths[r]!;
      if (length === -1) {
        return NONE;
      }
      try {
        return decode(serde, b.aggregates.subarray(starts[r]!, starts[r]! + length));
      } catch (e) {
        throw new Failure(`the stored aggregate ${r} does not decode: ${errorText(e)}`, true);
      }
    }
    const j = r - pool;
    if (failures.has(j)) {
      throw new Failure(`depends on fold value ${j}, which failed`);
    }
    const bytes = encoded[j];
    if (bytes === undefined) {
      // Value j is in flight in another group: its outcome first.
      return new Promise<void>((wake) => {
        let w = waiters.get(j);
        if (w === undefined) {
          waiters.set(j, (w = []));
        }
        w.push(wake);
      }).then(() => resolve(r, st));
    }
    return decode(serde, bytes);
  };
  /** acc with other merged in: the merger (reduce: the reducer), a missing side taking the other. */
  const merge = (st: ProgramStep, key: unknown, acc: unknown, other: unknown): unknown => {
    if (other === NONE) {
      return acc;
    }
    if (acc === NONE) {
      return other;
    }
    return step.op === Operation.REDUCE ? checked(st.fn(acc, other), "reducer") : checked(st.merger!(key, acc, other), "merger");
  };
  /** acc with the value folded in. */
  const add = (st: ProgramStep, key: unknown, acc: unknown, value: unknown): unknown => {
    if (step.op === Operation.REDUCE) {
      return acc === NONE ? value : checked(st.fn(acc, value), "reducer");
    }
    if (acc === NONE) {
      return chain(initial(st), (a) => checked(st.fn(key, value, a), "aggregator"));
    }
    return checked(st.fn(key, value, acc), "aggregator");
  };
  /** Fold value i's aggregate, or a promise of it; its functions are at(i)'s (given its metadata) when set. */
  const foldValue = (i: number, key: unknown): unknown => {
    const st = at === null ? step : at(i);
    let m = mergeStart[i]!;
    const end = m + b.mergeCounts[i]!;
    const next = (acc: unknown): unknown => {
      if (m < end) {
        const r = b.mergeRefs[m++]!;
        return chain(
          chain(resolve(r, st), (other) => merge(st, key, acc, other)),
          next,
        );
      }
      return add(st, key, acc, values.items[i]);
    };
    return chain(resolve(b.foldBases[i]!, st), next);
  };
  /** Folds value i; a promise when a call made one. */
  const attempt = (i: number, key: unknown): Promise<void> | undefined => {
    const bad = values.failures.get(i);
    if (bad !== undefined) {
      fail(i, bad, true);
      return undefined;
    }
    let r: unknown;
    try {
      r = foldValue(i, key);
    } catch (e) {
      fail(i, e);
      return undefined;
    }
    if (isThenable(r)) {
      return Promise.resolve(r).then(
        (a) => settle(i, a),
        (e: unknown) => fail(i, e),
      );
    }
    settle(i, r);
    return undefined;
  };
  const runGroup = (start: number, end: number, key: unknown): Promise<void> | undefined => {
    for (let i = start; i < end; i++) {
      const p = attempt(i, key);
      if (p !== undefined) {
        return p.then(() => runGroup(i + 1, end, key));
      }
    }
    return undefined;
  };

  let waits: Promise<void>[] | null = null;
  let start = 0;
  b.groupSizes.forEach((size, g) => {
    const end = start + size;
    const keyFailure = keys?.failures.get(g);
    if (keyFailure !== undefined) {
      for (let i = start; i < end; i++) {
        fail(i, keyFailure, true);
      }
    } else {
      const p = runGroup(start, end, keys?.items[g]);
      if (p !== undefined) {
        (waits ??= []).push(p);
      }
    }
    start = end;
  });
  if (waits !== null) {
    await Promise.all(waits);
  }

  const counts = new Array<number>(n).fill(0);
  const lengths: number[] = [];
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < n; i++) {
    const bytes = encoded[i];
    if (bytes !== undefined && !failures.has(i)) {
      counts[i] = 1;
      lengths.push(bytes.byteLength);
      chunks.push(bytes);
    }
  }
  result.outputCounts = counts;
  result.valueLengths = lengths;
  result.values = Buffer.concat(chunks);
  result.failures = [...failures]
    .sort((x, y) => x[0] - y[0])
    .map(([index, message]) =>
      create(RecordFailureSchema, {
        index,
        step: 0,
        message,
        kind: undecoded.has(index) ? RecordFailure_Kind.DESERIALIZATION : RecordFailure_Kind.PROCESSING,
      }),
    );
  return result;
}
