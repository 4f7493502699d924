/**
 * The host side of the data plane: runs a bundle through its chain of steps.
 *
 * This is the hot path. A bundle is processed a column at a time: values (and
 * keys, when a step reads them) are decoded once, each step calls the user's
 * function for every element in one loop, and the outputs are encoded once. A
 * record whose function throws (or whose promise rejects) fails alone: its
 * outputs are dropped and a RecordFailure names it; the rest of the bundle
 * goes on. No value is ever substituted for a failed one.
 *
 * Functions may be async. A step first calls its function for every element,
 * in record order; when some calls returned promises, the step waits for
 * those (together) before the next step runs. A bundle of synchronous
 * functions allocates no promise per record.
 *
 * Within a bundle the elements in flight are parallel arrays: `vals` (and
 * `keys` when needed) and `origin`, the index of the input record each
 * element came from (null while it is the identity, i.e. before any filter
 * or flatMap changed the count).
 */

import { create } from "@bufbuild/protobuf";
import {
  type Bundle,
  type BundleResult,
  BundleResultSchema,
  Metadata,
  Operation,
  RecordFailure_Kind,
  RecordFailureSchema,
} from "./gen/polystreams/v1alpha1/engine_pb.js";
import { Buffer } from "node:buffer";
import { type AnyFunction, byRefs, failEvery, isThenable } from "./outcomes.js";
import { runExtract } from "./extract.js";
import { type ProgramStep, runProgram } from "./program.js";
import {
  type RecordMetadata,
  type Header,
  Metadata_,
  ProcessorExecutor,
  type ReadFn,
  type StoreBuilder,
  isProcessorBundle,
  metadataOf,
  recordHeaders,
  sameHeaders,
} from "./processor.js";
import { typeName } from "./errors.js";
import { decodeColumn, encode, encodeColumn, errorText } from "./serde.js";
import { ROUTES, Route } from "./route.js";

/** Marks an element whose function threw. */
const FAILED: unique symbol = Symbol("failed");

const READS_KEY = new Set<Operation>([
  Operation.FILTER,
  Operation.FILTER_NOT,
  Operation.MAP,
  Operation.SELECT_KEY,
  Operation.PEEK,
  Operation.FOREACH,
  Operation.FLAT_MAP,
  Operation.MAP_VALUES_WITH_KEY,
  Operation.FLAT_MAP_VALUES_WITH_KEY,
]);
const CHANGES_KEY = new Set<Operation>([Operation.MAP, Operation.SELECT_KEY, Operation.FLAT_MAP]);

/** The elements of a bundle in flight between steps. */
class Column {
  origin: number[] | null = null;
  /** Each element's metadata, when a step of the chain asked for it (withMetadata). */
  metas: RecordMetadata[] | null = null;
  constructor(
    readonly n: number,
    public keys: unknown[] | null,
    public vals: unknown[],
    /** record index -> [step, error text]; the first failure wins */
    readonly failed: Map<number, [number, string]>,
  ) {}

  origins(): number[] {
    if (this.origin === null) {
      this.origin = Array.from({ length: this.vals.length }, (_, j) => j);
    }
    return this.origin;
  }

  /** Marks the records of the elements at the given positions failed, without dropping anything. */
  mark(positions: Map<number, string>, step: number): void {
    const origin = this.origin;
    for (const [j, msg] of positions) {
      const i = origin === null ? j : origin[j]!;
      if (!this.failed.has(i)) {
        this.failed.set(i, [step, msg]);
      }
    }
  }

  /**
   * Fails the records of the elements at positions and drops every element
   * of those records (a record's outputs are all or nothing).
   */
  fail(positions: Map<number, string>, step: number): void {
    if (positions.size === 0) {
      return;
    }
    this.mark(positions, step);
    this.dropFailed();
  }

  /** Keeps the elements for which keep[j] is true. */
  compress(keep: boolean[]): void {
    const origin = this.origins();
    const o: number[] = [];
    const v: unknown[] = [];
    const k: unknown[] | null = this.keys === null ? null : [];
    const m: RecordMetadata[] | null = this.metas === null ? null : [];
    for (let j = 0; j < keep.length; j++) {
      if (keep[j]) {
        o.push(origin[j]!);
        v.push(this.vals[j]);
        k?.push(this.keys![j]);
        m?.push(this.metas![j]!);
      }
    }
    this.origin = o;
    this.vals = v;
    this.keys = k;
    this.metas = m;
  }

  dropFailed(): void {
    if (this.failed.size === 0) {
      return;
    }
    const failed = this.failed;
    this.compress(this.origins().map((i) => !failed.has(i)));
  }
}

/** The outcome of calling a function for every element: results (FAILED where it threw) and the failures. */
interface Applied {
  out: unknown[];
  failures: Map<number, string>;
}

/**
 * Calls fn(a[j]) (or fn(a[j], b[j])) for every element, in order, then waits
 * for the results that are promises. Returns synchronously when none is.
 */
function applyAll(fn: AnyFunction, a: unknown[], b: unknown[] | null): Applied | Promise<Applied> {
  const n = a.length;
  const out = new Array<unknown>(n);
  const failures = new Map<number, string>();
  let pending: number[] | null = null;
  for (let j = 0; j < n; j++) {
    let r: unknown;
    try {
      r = b === null ? fn(a[j]) : fn(a[j], b[j]);
    } catch (e) {
      failures.set(j, errorText(e));
      out[j] = FAILED;
      continue;
    }
    if (isThenable(r)) {
      (pending ??= []).push(j);
    }
    out[j] = r;
  }
  if (pending === null) {
    return { out, failures };
  }
  const waits = pending;
  return Promise.allSettled(waits.map((j) => out[j] as PromiseLike<unknown>)).then((settled) => {
    for (let p = 0; p < waits.length; p++) {
      const j = waits[p]!;
      const s = settled[p]!;
      if (s.status === "fulfilled") {
        out[j] = s.value;
      } else {
        failures.set(j, errorText(s.reason));
        out[j] = FAILED;
      }
    }
    return { out, failures };
  });
}

type StepFn = (col: Column, fn: AnyFunction, step: number) => void | Promise<void>;

function then(applied: Applied | Promise<Applied>, next: (a: Applied) => void | Promise<void>): void | Promise<void> {
  return applied instanceof Promise ? applied.then(next) : next(applied);
}

function stepMapValues(col: Column, fn: AnyFunction, step: number): void | Promise<void> {
  return then(applyAll(fn, col.vals, null), ({ out, failures }) => {
    col.vals = out;
    col.fail(failures, step);
  });
}

function stepFilter(negate: boolean): StepFn {
  return (col, fn, step) =>
    then(applyAll(fn, col.keys!, col.vals), ({ out, failures }) => {
      col.mark(failures, step);
      let all = failures.size === 0;
      const keep = new Array<boolean>(out.length);
      for (let j = 0; j < out.length; j++) {
        const r = out[j];
        keep[j] = r !== FAILED && (negate ? !r : Boolean(r));
        all &&= keep[j]!;
      }
      if (!all) {
        col.compress(keep);
        col.dropFailed();
      }
    });
}

function stepMapValuesWithKey(col: Column, fn: AnyFunction, step: number): void | Promise<void> {
  return then(applyAll(fn, col.keys!, col.vals), ({ out, failures }) => {
    col.vals = out;
    col.fail(failures, step);
  });
}

function flatMapError(r: unknown, what: string): TypeError {
  return new TypeError(`${what === "flatMap" ? "flatMap must return an iterable of [key, value] pairs" : "flatMapValues must return an iterable of values"}, not ${typeName(r)}`);
}

/** A flatMapValues (or flatMap) result as an array, or a promise of one for an async iterable. */
function toValues(r: unknown, what = "flatMapValues"): unknown[] | Promise<unknown[]> {
  if (Array.isArray(r)) {
    return r;
  }
  if (r !== null && typeof r === "object") {
    if (typeof (r as Iterable<unknown>)[Symbol.iterator] === "function") {
      return Array.from(r as Iterable<unknown>);
    }
    if (typeof (r as AsyncIterable<unknown>)[Symbol.asyncIterator] === "function") {
      return (async () => {
        const values: unknown[] = [];
        for await (const v of r as AsyncIterable<unknown>) {
          values.push(v);
        }
        return values;
      })();
    }
  }
  throw flatMapError(r, what); // strings are iterable but not values: refused, as in the other SDKs
}

/**
 * flatMapValues (withKey: reading the key) and flatMap (pairs: each output
 * a [key, value] pair that re-keys it).
 */
function stepFlat(withKey: boolean, pairs: boolean): StepFn {
  const what = pairs ? "flatMap" : "flatMapValues";
  return (col, fn, step) => flatStep(col, fn, step, withKey || pairs, pairs, what);
}

function flatStep(col: Column, fn: AnyFunction, step: number, withKey: boolean, pairs: boolean, what: string): void | Promise<void> {
  const applied = withKey ? applyAll(fn, col.keys!, col.vals) : applyAll(fn, col.vals, null);
  return then(applied, ({ out, failures }) => {
    const lists = new Array<unknown[]>(out.length);
    let waits: Promise<void>[] | null = null;
    for (let j = 0; j < out.length; j++) {
      const r = out[j];
      lists[j] = [];
      if (r === FAILED) {
        continue;
      }
      try {
        const values = toValues(r, what);
        if (Array.isArray(values)) {
          lists[j] = values;
        } else {
          (waits ??= []).push(
            values.then(
              (v) => void (lists[j] = v),
              (e: unknown) => void failures.set(j, errorText(e)),
            ),
          );
        }
      } catch (e) {
        failures.set(j, errorText(e));
      }
    }
    const finish = (): void => {
      if (pairs) {
        for (let j = 0; j < lists.length; j++) {
          const list = lists[j]!;
          const bad = failures.has(j) ? -1 : list.findIndex((p) => !Array.isArray(p) || p.length !== 2);
          if (bad >= 0) {
            failures.set(j, `TypeError: flatMap must return [key, value] pairs, not ${typeName(list[bad])}`);
          }
        }
      }
      col.mark(failures, step);
      const origin = col.origin;
      const keys = col.keys;
      const o: number[] = [];
      const v: unknown[] = [];
      const k: unknown[] | null = keys === null ? null : [];
      const metas = col.metas;
      const m: RecordMetadata[] | null = metas === null ? null : [];
      for (let j = 0; j < lists.length; j++) {
        const values = lists[j]!;
        if (failures.has(j)) {
          continue;
        }
        const i = origin === null ? j : origin[j]!;
        for (const x of values) {
          o.push(i);
          m?.push(metas![j]!); // a flat map's outputs share their record's metadata
          if (pairs) {
            const [nk, nv] = x as [unknown, unknown];
            k!.push(nk);
            v.push(nv);
          } else {
            v.push(x);
            k?.push(keys![j]);
          }
        }
      }
      col.origin = o;
      col.vals = v;
      col.keys = k;
      col.metas = m;
      col.dropFailed();
    };
    if (waits !== null) {
      return Promise.all(waits).then(finish);
    }
    return finish();
  });
}

function stepMap(col: Column, fn: AnyFunction, step: number): void | Promise<void> {
  return then(applyAll(fn, col.keys!, col.vals), ({ out, failures }) => {
    const keys = new Array<unknown>(out.length);
    const vals = new Array<unknown>(out.length);
    for (let j = 0; j < out.length; j++) {
      const p = out[j];
      if (p === FAILED) {
        continue;
      }
      if (!Array.isArray(p) || p.length !== 2) {
        failures.set(j, `TypeError: map must return a [key, value] pair, not ${typeName(p)}`);
        continue;
      }
      keys[j] = p[0];
      vals[j] = p[1];
    }
    col.keys = keys;
    col.vals = vals;
    col.fail(failures, step);
  });
}

function stepSelectKey(col: Column, fn: AnyFunction, step: number): void | Promise<void> {
  return then(applyAll(fn, col.keys!, col.vals), ({ out, failures }) => {
    col.keys = out;
    col.fail(failures, step);
  });
}

function stepPeek(col: Column, fn: AnyFunction, step: number): void | Promise<void> {
  return then(applyAll(fn, col.keys!, col.vals), ({ failures }) => {
    col.fail(failures, step);
  });
}

function stepForeach(col: Column, fn: AnyFunction, step: number): void | Promise<void> {
  return then(applyAll(fn, col.keys!, col.vals), ({ failures }) => {
    col.fail(failures, step);
    col.origin = [];
    col.vals = [];
    col.keys = col.keys === null ? null : [];
    col.metas = col.metas === null ? null : [];
  });
}

const STEPS = new Map<Operation, StepFn>([
  [Operation.MAP_VALUES, stepMapValues],
  [Operation.FILTER, stepFilter(false)],
  [Operation.FILTER_NOT, stepFilter(true)],
  [Operation.FLAT_MAP_VALUES, stepFlat(false, false)],
  [Operation.FLAT_MAP, stepFlat(true, true)],
  [Operation.MAP_VALUES_WITH_KEY, stepMapValuesWithKey],
  [Operation.FLAT_MAP_VALUES_WITH_KEY, stepFlat(true, false)],
  [Operation.MAP, stepMap],
  [Operation.SELECT_KEY, stepSelectKey],
  [Operation.PEEK, stepPeek],
  [Operation.FOREACH, stepForeach],
]);

/**
 * A compiled chain: the steps of a bundle with their functions resolved and
 * what the chain needs (decoded keys? output keys?) worked out once.
 */
class Chain {
  private readonly steps: [StepFn, AnyFunction, number, boolean][] = [];
  /** Some step reads metadata (withMetadata); some may set it (METADATA_WRITE): outputs carry timestamps and headers. */
  private readonly readsMeta: boolean;
  private readonly writesMeta: boolean;
  private readonly broken: [number, string] | null = null; // fails every record
  private readonly keySerde: string;
  private readonly valueSerde: string;
  private readonly outKeySerde: string;
  private readonly outValueSerde: string;
  private readonly readsKeys: boolean;
  private readonly changesKeys: boolean;
  private readonly last: number;

  constructor(bundle: Bundle, functions: ReadonlyMap<number, AnyFunction>) {
    let broken: [number, string] | null = null;
    bundle.steps.forEach((st, s) => {
      const run = STEPS.get(st.operation);
      const fn = functions.get(st.token);
      if (run === undefined) {
        const op = Operation[st.operation] ?? String(st.operation);
        broken ??= [s, `TypeError: step ${s} (${st.node}) has operation ${op}, which this host does not run`];
      } else if (fn === undefined) {
        broken ??= [s, `ReferenceError: step ${s} (${st.node}) names token ${st.token}, which is not registered in this host`];
      } else {
        this.steps.push([run, fn, s, st.metadata !== Metadata.UNSPECIFIED]);
      }
    });
    this.broken = broken;
    this.keySerde = bundle.keySerde;
    this.valueSerde = bundle.valueSerde;
    this.outKeySerde = bundle.outputKeySerde || bundle.keySerde;
    this.outValueSerde = bundle.outputValueSerde || bundle.valueSerde;
    this.readsKeys = bundle.steps.some((s) => READS_KEY.has(s.operation));
    this.changesKeys = bundle.steps.some((s) => CHANGES_KEY.has(s.operation));
    this.last = Math.max(bundle.steps.length - 1, 0);
    this.readsMeta = bundle.steps.some((st) => st.metadata !== Metadata.UNSPECIFIED);
    this.writesMeta = bundle.steps.some((st) => st.metadata === Metadata.WRITE);
  }

  async run(b: Bundle): Promise<BundleResult> {
    const n = b.valueLengths.length;
    const result = create(BundleResultSchema, { bundleId: b.id });
    if (this.broken !== null) {
      return failEvery(result, n, this.broken[0], this.broken[1]);
    }
    const failed = new Map<number, [number, string]>();
    const values = decodeColumn(this.valueSerde, b.values, b.valueLengths);
    let keys: unknown[] | null = null;
    let keyFailures = new Map<number, string>();
    if (this.readsKeys) {
      if (b.keyLengths.length !== n) {
        return failEvery(result, n, 0, `RangeError: malformed bundle: ${b.keyLengths.length} keys for ${n} values`);
      }
      const decoded = decodeColumn(this.keySerde, b.keys, b.keyLengths);
      keys = decoded.items;
      keyFailures = decoded.failures;
    }
    const col = new Column(n, keys, values.items, failed);
    col.fail(new Map([...keyFailures, ...values.failures]), 0);
    // Deserialization failures; the rest fail in a function (or do not encode).
    const undecoded = new Set(failed.keys());

    let inputHeaders: (readonly Header[])[] = [];
    if (this.readsMeta) {
      inputHeaders = recordHeaders(b, n);
      col.metas = [];
      for (let i = 0; i < n; i++) {
        col.metas.push(new Metadata_(Number(b.timestamps[i] ?? 0n), [...inputHeaders[i]!], b.topic, b.partition, Number(b.offsets[i] ?? -1n)));
      }
      if (failed.size > 0) {
        col.dropFailed();
      }
    }
    for (const [run, fn, step, meta] of this.steps) {
      if (col.vals.length === 0) {
        break;
      }
      const r = run(col, meta ? withMetas(fn, col.metas!) : fn, step);
      if (r !== undefined) {
        await r;
      }
    }

    if (this.writesMeta && col.metas !== null) {
      // A function that set a timestamp or headers that cannot be sent fails its record.
      const bad = new Map<number, string>();
      col.metas.forEach((m, j) => {
        if (typeof m.timestamp !== "number" || !Number.isSafeInteger(m.timestamp)) {
          bad.set(j, `TypeError: metadata: a timestamp is an integer number of epoch milliseconds, not ${typeName(m.timestamp)}`);
        } else if (!Array.isArray(m.headers) || m.headers.some((h) => !Array.isArray(h) || typeof h[0] !== "string" || !(h[1] === null || h[1] instanceof Uint8Array))) {
          bad.set(j, "TypeError: metadata: headers are [key, value] pairs of a string and a Uint8Array (or null)");
        }
      });
      col.fail(bad, this.last);
    }

    // Encode; a record whose output does not encode fails at the last step.
    for (;;) {
      const v = encodeColumn(this.outValueSerde, col.vals);
      const k = this.changesKeys ? encodeColumn(this.outKeySerde, col.keys!) : null;
      if (v.failures.size === 0 && (k === null || k.failures.size === 0)) {
        result.valueLengths = v.lengths;
        result.values = v.data;
        if (k !== null) {
          result.keyLengths = k.lengths;
          result.keys = k.data;
        }
        break;
      }
      col.fail(new Map([...(k?.failures ?? []), ...v.failures]), this.last);
    }

    const counts = new Array<number>(n).fill(col.origin === null && failed.size === 0 ? 1 : 0);
    if (col.origin !== null || failed.size !== 0) {
      for (const i of col.origins()) {
        counts[i]!++;
      }
    }
    result.outputCounts = counts;
    if (this.writesMeta) {
      outputMetadata(result, col, inputHeaders);
    }
    if (failed.size !== 0) {
      result.failures = [...failed]
        .sort((x, y) => x[0] - y[0])
        .map(([index, [step, message]]) => create(RecordFailureSchema, { index, step, message, kind: kindOf(undecoded, index) }));
    }
    return result;
  }
}

/**
 * fn given element j's metadata as its last argument. applyAll calls a
 * step's function once per element, in order, so the j-th call is element j.
 */
function withMetas(fn: AnyFunction, metas: readonly RecordMetadata[]): AnyFunction {
  let j = 0;
  return (...args: unknown[]) => fn(...args, metas[j++]);
}

/** The outputs' timestamps and headers (-1: the input record's), for a chain whose functions may set them. */
function outputMetadata(result: BundleResult, col: Column, inputHeaders: (readonly Header[])[]): void {
  const metas = col.metas ?? [];
  const origins = col.origins();
  const keys: Uint8Array[] = [];
  const values: Uint8Array[] = [];
  for (let j = 0; j < metas.length; j++) {
    const m = metas[j]!;
    result.outputTimestamps.push(BigInt(m.timestamp));
    if (sameHeaders(m.headers, inputHeaders[origins[j]!]!)) {
      result.outputHeaderCounts.push(-1);
      continue;
    }
    result.outputHeaderCounts.push(m.headers.length);
    for (const [k, v] of m.headers) {
      const kb = Buffer.from(k, "utf8");
      keys.push(kb);
      result.outputHeaderKeyLengths.push(kb.byteLength);
      result.outputHeaderValueLengths.push(v === null ? -1 : v.byteLength);
      if (v !== null) {
        values.push(v);
      }
    }
  }
  result.outputHeaderKeys = Buffer.concat(keys);
  result.outputHeaderValues = Buffer.concat(values);
}

/** The kind of record index's failure: deserialization when it is in undecoded, else processing. */
function kindOf(undecoded: Set<number>, index: number): RecordFailure_Kind {
  return undecoded.has(index) ? RecordFailure_Kind.DESERIALIZATION : RecordFailure_Kind.PROCESSING;
}

const FOLDS = new Set<Operation>([Operation.REDUCE, Operation.AGGREGATE]);

/** The aggregate of a key that has none yet. */
const ABSENT: unique symbol = Symbol("absent");

/**
 * What a fold bundle's values make: each one's encoded aggregate (null: the
 * key has none, after a table change that only removed), or its failure.
 */
/** What a fold value is folded with: the fold's functions, or those given its record's metadata (Fold.at). */
interface FoldFunctions {
  readonly fn: AnyFunction | undefined;
  readonly init: AnyFunction | undefined;
  readonly sub: AnyFunction | undefined;
}

/** fn given m as its last argument when it was wrapped by withMetadata (else fn). */
function bindMeta(fn: AnyFunction | undefined, m: RecordMetadata): AnyFunction | undefined {
  if (fn === undefined || metadataOf(fn) === Metadata.UNSPECIFIED) {
    return fn;
  }
  return (...args: unknown[]) => fn(...args, m);
}

/** The metadata of each of n fold values (or joined records): that of its record (Bundle.valueRefs[i] when set, else i). */
function foldMetas(b: Bundle, n: number): RecordMetadata[] {
  const records = b.valueLengths.length;
  const headers = recordHeaders(b, records);
  const out: RecordMetadata[] = [];
  for (let i = 0; i < n; i++) {
    const r = b.valueRefs.length > 0 ? b.valueRefs[i]! : i;
    out.push(new Metadata_(Number(b.timestamps[r] ?? 0n), [...headers[r]!], b.topic, b.partition, Number(b.offsets[r] ?? -1n)));
  }
  return out;
}

interface FoldOutputs {
  /** Each value's record's metadata, when a function of the fold asked for it (withMetadata). */
  readonly metas: RecordMetadata[] | null;
  /** The values; in a table fold ABSENT where a change has no new value. */
  readonly values: unknown[];
  /** A table fold's old values, ABSENT where a change has none; null for a stream fold. */
  readonly olds: unknown[] | null;
  readonly valueFailures: Map<number, string>;
  readonly encoded: (Uint8Array | null | undefined)[];
  readonly failures: Map<number, string>;
  readonly serde: string;
}

/** The items of a decoded column, with ABSENT for its nulls (length -1), which the serde may not tell from a null value. */
function absentWhereNull(items: unknown[], lengths: readonly number[]): unknown[] {
  for (let i = 0; i < lengths.length; i++) {
    if (lengths[i] === -1) {
      items[i] = ABSENT;
    }
  }
  return items;
}

/**
 * A fold bundle's chain: one REDUCE or AGGREGATE step. The values come
 * grouped by key with each key's current aggregate; every value's outcome is
 * the key's aggregate after folding it in, encoded as it is made (so an
 * aggregate changed in place and returned is emitted as it was then). A
 * value whose call throws, returns null or gives an unencodable aggregate
 * fails alone: its key goes on from the aggregate before it (a key whose
 * first value failed starts from the initializer again). Values of one key
 * are folded in order, each promise awaited before the next value; different
 * keys' folds interleave.
 *
 * Windowed folds over time windows need nothing more: their groups are
 * (key, window) pairs whose key is the grouped key. Folds over session and
 * sliding windows come as fold programs (Bundle.foldBases), which
 * runProgram runs (program.ts).
 *
 * A table fold (KGroupedTable.reduce / aggregate: the step has a
 * subtractor) folds changes, as Kafka Streams' KTableReduce and
 * KTableAggregate do: when the change has an old value and the key an
 * aggregate, the subtractor removes the old value (a null result leaves the
 * key with no aggregate); then, when the change has a new value, the adder
 * adds it (to the initializer's aggregate, or for reduce by becoming the
 * aggregate, when the key has none). The outcome is the aggregate after the
 * change, or none (an output of length -1) when the key has none.
 */
class Fold {
  private readonly op: Operation;
  private readonly fn: AnyFunction | undefined;
  private readonly init: AnyFunction | undefined;
  /** The step as fold programs (session and sliding windows) run it; null when broken. */
  private readonly program: ProgramStep | null = null;
  /** A table fold's subtractor; undefined for a stream fold (or when not registered: broken). */
  private readonly sub: AnyFunction | undefined;
  private readonly table: boolean;
  private readonly broken: string | null = null;
  /** Some function of the fold was wrapped by withMetadata: each call gets its value's record's metadata. */
  private readonly meta: boolean;
  /** The fold's functions as they are (no metadata). */
  private readonly own: FoldFunctions;
  private readonly nullMessage: string;
  private readonly undefinedMessage: string;

  constructor(bundle: Bundle, functions: ReadonlyMap<number, AnyFunction>) {
    const st = bundle.steps[0]!;
    this.op = st.operation;
    this.fn = functions.get(st.token);
    this.init = this.op === Operation.AGGREGATE ? functions.get(st.initializerToken) : undefined;
    this.table = st.subtractorToken !== 0;
    this.sub = this.table ? functions.get(st.subtractorToken) : undefined;
    const what = this.op === Operation.REDUCE ? "reduce" : "aggregate";
    this.nullMessage = `TypeError: ${what} returned null; an aggregate cannot be null`;
    this.undefinedMessage = `${what} subtractor returned undefined; return null to leave the key with no aggregate`;
    if (bundle.steps.length !== 1) {
      this.broken = `TypeError: step 0 (${st.node}) is a reduce or aggregate, which must be its bundle's only step`;
    } else if (this.fn === undefined) {
      this.broken = `ReferenceError: step 0 (${st.node}) names token ${st.token}, which is not registered in this host`;
    } else if (this.op === Operation.AGGREGATE && this.init === undefined) {
      this.broken = `ReferenceError: aggregate step (${st.node}) names initializer token ${st.initializerToken}, which is not registered in this host`;
    } else if (this.table && this.sub === undefined) {
      this.broken = `ReferenceError: step 0 (${st.node}) names subtractor token ${st.subtractorToken}, which is not registered in this host`;
    }
    this.own = { fn: this.fn, init: this.init, sub: this.sub };
    this.meta = [this.fn, this.init, this.sub].some((f) => f !== undefined && metadataOf(f) !== Metadata.UNSPECIFIED);
    if (this.broken === null) {
      // An aggregate's merger (session windows) is looked for only when a
      // program merges: a program that needs none runs without it.
      const merger = st.mergerToken !== 0 ? functions.get(st.mergerToken) : undefined;
      this.program = { op: this.op, node: st.node, fn: this.fn!, init: this.init, merger, mergerToken: st.mergerToken, table: this.table };
      this.meta ||= merger !== undefined && metadataOf(merger) !== Metadata.UNSPECIFIED;
    }
  }

  /** The fold's functions for a value whose record's metadata is m: those wrapped by withMetadata get it last. */
  private at(m: RecordMetadata): { fn: AnyFunction; init: AnyFunction | undefined; sub: AnyFunction | undefined } {
    return { fn: bindMeta(this.fn!, m)!, init: bindMeta(this.init, m), sub: bindMeta(this.sub, m) };
  }

  /** The aggregate after value i (or a promise of it): a stream fold's next, or a table fold's change. */
  private fold(out: FoldOutputs, i: number, key: unknown, agg: unknown): unknown {
    const fns = out.metas === null ? this.own : this.at(out.metas[i]!);
    if (out.olds === null) {
      return this.next(fns, agg, key, out.values[i]);
    }
    const old = out.olds[i];
    if (old === ABSENT || agg === ABSENT) {
      return this.add(fns, agg, key, out.values[i]);
    }
    const r = this.op === Operation.REDUCE ? fns.sub!(agg, old) : fns.sub!(key, old, agg);
    if (isThenable(r)) {
      return Promise.resolve(r).then((a) => this.add(fns, this.removed(a), key, out.values[i]));
    }
    return this.add(fns, this.removed(r), key, out.values[i]);
  }

  /** The subtractor's result as an aggregate: null means none. */
  private removed(a: unknown): unknown {
    if (a === undefined) {
      throw new TypeError(this.undefinedMessage);
    }
    return a === null ? ABSENT : a;
  }

  /** A table change's adder step: none when the change has no new value. */
  private add(fns: FoldFunctions, agg: unknown, key: unknown, value: unknown): unknown {
    return value === ABSENT ? agg : this.next(fns, agg, key, value);
  }

  /** The next aggregate (or a promise of it): the reducer's or aggregator's call, or the first value / initializer. */
  private next(fns: FoldFunctions, agg: unknown, key: unknown, value: unknown): unknown {
    const fn = fns.fn!;
    if (this.op === Operation.REDUCE) {
      return agg === ABSENT ? value : fn(agg, value);
    }
    if (agg !== ABSENT) {
      return fn(key, value, agg);
    }
    const start = fns.init!();
    return isThenable(start) ? Promise.resolve(start).then((a) => fn(key, value, a)) : fn(key, value, start);
  }

  /** Records value i's new aggregate r; returns the key's aggregate from now on. */
  private settle(out: FoldOutputs, i: number, r: unknown, prev: unknown): unknown {
    if (r === ABSENT) {
      out.encoded[i] = null; // a table change left the key with no aggregate
      return ABSENT;
    }
    if (r === null || r === undefined) {
      out.failures.set(i, this.nullMessage);
      return prev;
    }
    try {
      out.encoded[i] = encode(out.serde, r)!;
    } catch (e) {
      out.failures.set(i, errorText(e));
      return prev;
    }
    return r;
  }

  /** Folds values start..end-1 of one key; returns a promise when a call did. */
  private foldGroup(out: FoldOutputs, start: number, end: number, key: unknown, agg: unknown): void | Promise<void> {
    for (let i = start; i < end; i++) {
      const bad = out.valueFailures.get(i);
      if (bad !== undefined) {
        out.failures.set(i, bad);
        continue;
      }
      let r: unknown;
      try {
        r = this.fold(out, i, key, agg);
      } catch (e) {
        out.failures.set(i, errorText(e));
        continue;
      }
      if (isThenable(r)) {
        return this.foldGroupAsync(out, r, i, end, key, agg);
      }
      agg = this.settle(out, i, r, agg);
    }
  }

  private async foldGroupAsync(out: FoldOutputs, pending: unknown, i: number, end: number, key: unknown, agg: unknown): Promise<void> {
    for (;;) {
      try {
        agg = this.settle(out, i, await pending, agg);
      } catch (e) {
        out.failures.set(i, errorText(e));
      }
      for (i++; i < end; i++) {
        const bad = out.valueFailures.get(i);
        if (bad !== undefined) {
          out.failures.set(i, bad);
          continue;
        }
        try {
          pending = this.fold(out, i, key, agg);
          break;
        } catch (e) {
          out.failures.set(i, errorText(e));
        }
      }
      if (i >= end) {
        return;
      }
    }
  }

  async run(b: Bundle): Promise<BundleResult> {
    if (b.foldBases.length > 0) {
      const result = create(BundleResultSchema, { bundleId: b.id });
      if (this.program === null) {
        return failEvery(result, b.valueRefs.length || b.foldBases.length, 0, this.broken!);
      }
      if (!this.meta) {
        return runProgram(this.program, b, result);
      }
      const metas = foldMetas(b, b.valueRefs.length || b.foldBases.length);
      const program = this.program;
      const merger = program.merger;
      return runProgram(program, b, result, (i) => ({ ...program, ...this.at(metas[i]!), merger: bindMeta(merger, metas[i]!) }));
    }
    // A windowed fold bundle may hold each record once and refer to it from
    // every window it falls into (fold_value_refs): fold value i is record
    // refs[i]; outputs and failures index fold values.
    const refs = b.valueRefs;
    const records = b.valueLengths.length;
    const n = refs.length > 0 ? refs.length : records;
    const result = create(BundleResultSchema, { bundleId: b.id });
    if (this.broken !== null) {
      return failEvery(result, n, 0, this.broken);
    }
    if (refs.length > 0 && refs.some((j) => j < 0 || j >= records)) {
      return failEvery(result, n, 0, `RangeError: malformed fold bundle: value refs from ${Math.min(...refs)} to ${Math.max(...refs)} for ${records} records`);
    }
    const groups = b.groupSizes;
    let total = 0;
    for (const size of groups) {
      total += size;
    }
    const olds = this.table ? b.oldValueLengths.length : 0;
    if (
      total !== n ||
      b.aggregateLengths.length !== groups.length ||
      b.keyLengths.length !== groups.length ||
      (this.table && olds !== n)
    ) {
      return failEvery(
        result,
        n,
        0,
        `RangeError: malformed fold bundle: ${groups.length} group sizes adding up to ${total}, ` +
          `${b.keyLengths.length} keys, ${b.aggregateLengths.length} aggregates and ${n} values` +
          (this.table ? ` with ${olds} old values` : ""),
      );
    }
    const aggSerde = b.aggregateSerde || b.outputValueSerde || b.valueSerde;
    const outSerde = b.outputValueSerde || aggSerde;
    if (outSerde !== aggSerde) {
      return failEvery(result, n, 0, `RangeError: malformed fold bundle: output value serde "${outSerde}" is not the aggregate serde "${aggSerde}"`);
    }
    const values = byRefs(decodeColumn(b.valueSerde, b.values, b.valueLengths), refs);
    const aggs = decodeColumn(aggSerde, b.aggregates, b.aggregateLengths);
    const keys = this.op === Operation.REDUCE ? null : decodeColumn(b.keySerde, b.keys, b.keyLengths);
    const oldValues = this.table ? decodeColumn(b.valueSerde, b.oldValues, b.oldValueLengths) : null;
    for (const [i, message] of oldValues?.failures ?? []) {
      if (!values.failures.has(i)) {
        values.failures.set(i, message);
      }
    }
    const out: FoldOutputs = {
      values: this.table ? absentWhereNull(values.items, b.valueLengths) : values.items,
      olds: oldValues === null ? null : absentWhereNull(oldValues.items, b.oldValueLengths),
      valueFailures: values.failures,
      encoded: new Array<Uint8Array | null | undefined>(n),
      failures: new Map(),
      serde: aggSerde,
      metas: this.meta ? foldMetas(b, n) : null,
    };
    let waits: Promise<void>[] | null = null;
    // Deserialization failures: a value (or old value), key or stored aggregate that did not decode.
    const undecoded = new Set(values.failures.keys());
    let start = 0;
    for (let g = 0; g < groups.length; g++) {
      const end = start + groups[g]!;
      const groupFailure = aggs.failures.get(g) ?? keys?.failures.get(g);
      if (groupFailure !== undefined) {
        for (let i = start; i < end; i++) {
          out.failures.set(i, groupFailure);
          undecoded.add(i);
        }
      } else {
        const agg = b.aggregateLengths[g] === -1 ? ABSENT : aggs.items[g];
        const r = this.foldGroup(out, start, end, keys?.items[g], agg);
        if (r !== undefined) {
          (waits ??= []).push(r);
        }
      }
      start = end;
    }
    if (waits !== null) {
      await Promise.all(waits);
    }

    const counts = new Array<number>(n);
    const lengths: number[] = [];
    const chunks: Uint8Array[] = [];
    for (let i = 0; i < n; i++) {
      const bytes = out.encoded[i];
      if (out.failures.has(i) || bytes === undefined) {
        counts[i] = 0;
        continue;
      }
      counts[i] = 1;
      if (bytes === null) {
        lengths.push(-1);
        continue;
      }
      lengths.push(bytes.byteLength);
      chunks.push(bytes);
    }
    result.outputCounts = counts;
    result.valueLengths = lengths;
    result.values = Buffer.concat(chunks);
    result.failures = [...out.failures]
      .sort((x, y) => x[0] - y[0])
      .map(([index, message]) => create(RecordFailureSchema, { index, step: 0, message, kind: kindOf(undecoded, index) }));
    return result;
  }
}

/**
 * A stream-table join's bundle: one VALUE_JOIN step, `joiner(value, table
 * value)` for each record, with the table's value beside each record's in
 * `otherValues` (null where a left join found none). A null or undefined
 * result is a null value (Kafka Streams forwards it). A record whose value
 * or table value does not decode, whose call throws (or whose promise
 * rejects), or whose result does not encode fails alone.
 */
class Join {
  private readonly fn: AnyFunction | undefined;
  /** The joiner was wrapped by withMetadata: each call gets its record's metadata last. */
  private readonly meta: boolean;
  private readonly broken: string | null = null;
  private readonly outSerde: string;

  constructor(bundle: Bundle, functions: ReadonlyMap<number, AnyFunction>) {
    const st = bundle.steps[0]!;
    this.fn = functions.get(st.token);
    if (this.fn === undefined) {
      this.broken = `ReferenceError: join step (${st.node}) names token ${st.token}, which is not registered in this host`;
    }
    this.meta = this.fn !== undefined && metadataOf(this.fn) !== Metadata.UNSPECIFIED;
    this.outSerde = bundle.outputValueSerde || bundle.valueSerde;
  }

  async run(b: Bundle): Promise<BundleResult> {
    const n = b.valueLengths.length;
    const result = create(BundleResultSchema, { bundleId: b.id });
    let broken = this.broken;
    if (broken === null && b.otherValueLengths.length !== n) {
      broken = `RangeError: malformed join bundle: ${b.otherValueLengths.length} table values for ${n} records`;
    }
    if (broken !== null) {
      failEvery(result, n, 0, broken);
      for (const f of result.failures) {
        f.kind = RecordFailure_Kind.PROCESSING;
      }
      return result;
    }
    const values = decodeColumn(b.valueSerde, b.values, b.valueLengths);
    const others = decodeColumn(b.otherValueSerde, b.otherValues, b.otherValueLengths);
    const failed = new Map<number, string>();
    const live: number[] = [];
    for (let i = 0; i < n; i++) {
      const bad = values.failures.get(i) ?? others.failures.get(i);
      if (bad === undefined) {
        live.push(i);
      } else {
        failed.set(i, values.failures.has(i) ? bad : `${bad} (the table value)`);
      }
    }
    const undecoded = new Set(failed.keys());
    let fn = this.fn!;
    if (this.meta) {
      const metas = foldMetas(b, n);
      fn = withMetas(fn, live.map((i) => metas[i]!));
    }
    const applied = applyAll(
      fn,
      live.map((i) => values.items[i]),
      live.map((i) => others.items[i]),
    );
    const { out, failures } = applied instanceof Promise ? await applied : applied;
    let rows: number[] = [];
    let outs: unknown[] = [];
    live.forEach((i, j) => {
      const f = failures.get(j);
      if (f === undefined) {
        rows.push(i);
        outs.push(out[j]);
      } else {
        failed.set(i, f);
      }
    });
    // Encode; a record whose output does not encode fails alone.
    for (;;) {
      const enc = encodeColumn(this.outSerde, outs);
      if (enc.failures.size === 0) {
        result.valueLengths = enc.lengths;
        result.values = enc.data;
        break;
      }
      for (const [j, message] of enc.failures) {
        failed.set(rows[j]!, message);
      }
      rows = rows.filter((_, j) => !enc.failures.has(j));
      outs = outs.filter((_, j) => !enc.failures.has(j));
    }
    const counts = new Array<number>(n).fill(0);
    for (const i of rows) {
      counts[i] = 1;
    }
    result.outputCounts = counts;
    result.failures = [...failed]
      .sort((x, y) => x[0] - y[0])
      .map(([index, message]) => create(RecordFailureSchema, { index, step: 0, message, kind: kindOf(undecoded, index) }));
    return result;
  }
}

/**
 * Runs bundles with the functions registered under their tokens: chains of
 * stream and table operators, fold bundles of reduce/aggregate (of
 * grouped streams and grouped tables) and stream-table joins. Compiled
 * chains are cached by their shape (steps and serdes). Several bundles may be
 * in flight at once (their async functions interleave); each bundle's steps
 * run in order.
 */
export class Executor {
  private readonly chains = new Map<string, Chain | Fold | Join | Route>();
  /** Runs processor bundles (processor.ts); keeps their instances per task and node. */
  readonly processors: ProcessorExecutor;

  /** `read` answers a processor's store read that its bundle did not bring (the engine's Read RPC). */
  constructor(
    private readonly functions: ReadonlyMap<number, AnyFunction>,
    read: ReadFn = () => Promise.reject(new Error("Read: this executor has no engine to read from")),
    storeSpecs: ReadonlyMap<string, StoreBuilder> = new Map(),
  ) {
    this.processors = new ProcessorExecutor(functions, read, storeSpecs);
  }

  process(bundle: Bundle): Promise<BundleResult> {
    if (isProcessorBundle(bundle)) {
      return this.processors.process(bundle);
    }
    if (bundle.steps.length === 1 && bundle.steps[0]!.operation === Operation.EXTRACT_TIMESTAMP) {
      return runExtract(bundle, this.functions);
    }
    const key = [
      bundle.steps.map((s) => `${s.token}:${s.operation}:${s.initializerToken}:${s.subtractorToken}:${s.mergerToken}`).join(","),
      bundle.keySerde,
      bundle.valueSerde,
      bundle.outputKeySerde,
      bundle.outputValueSerde,
      bundle.aggregateSerde,
      bundle.otherValueSerde,
    ].join("|");
    let chain = this.chains.get(key);
    if (chain === undefined) {
      const fold = bundle.steps.some((st) => FOLDS.has(st.operation));
      if (fold) {
        chain = new Fold(bundle, this.functions);
      } else if (bundle.steps.length === 1 && bundle.steps[0]!.operation === Operation.VALUE_JOIN) {
        chain = new Join(bundle, this.functions);
      } else if (bundle.steps.length === 1 && ROUTES.has(bundle.steps[0]!.operation)) {
        chain = new Route(bundle, this.functions);
      } else {
        chain = new Chain(bundle, this.functions);
      }
      this.chains.set(key, chain);
    }
    return chain.run(bundle);
  }
}
