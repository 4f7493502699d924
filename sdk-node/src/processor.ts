/**
 * The Processor API (Kafka Streams' `api.Processor`, 3.3+): what a user
 * writes (Processor, Record, ProcessorContext, the stores it reads and
 * writes) and the executor's processor mode, which runs a processor bundle
 * (docs/design/processor.md).
 *
 * A processor bundle brings the current store entries of the keys its
 * records touch (a StoreView per store). The processor reads through an
 * overlay: those entries under the bundle's own writes, so a key written by
 * record 3 reads back in record 7. A read the bundle did not bring is one
 * `Read` call to the engine, whose answer joins the overlay (a key costs at
 * most one call per bundle). Reads return promises (Node cannot block);
 * writes, forward and schedule are synchronous and become the bundle's ops,
 * one group per entry (inits, records, then punctuations and closes), in
 * call order. A record whose process() throws keeps the ops it made before
 * (Kafka Streams undoes nothing).
 */

import { create } from "@bufbuild/protobuf";
import { Buffer } from "node:buffer";
import {
  type Bundle,
  type BundleEntry,
  BundleEntry_Kind,
  type BundleResult,
  BundleResultSchema,
  Metadata,
  type ReadRequest,
  type ReadResponse,
  Operation,
  OpKind,
  RecordFailure_Kind,
  RecordFailureSchema,
  type Step,
  type StoreView,
  StoreType,
} from "./gen/polystreams/v1alpha1/engine_pb.js";
import { type AnyFunction, failEvery, isThenable } from "./outcomes.js";
import { typeName } from "./errors.js";
import { type SerdeName, decode, decodeColumn, encode, errorText } from "./serde.js";
import { Windowed } from "./windows.js";
import type { VersionedRecord } from "./store.js";

// ---------------------------------------------------------------------------
// What a processor sees.

/** A record header: a key and a value (null: no value). Keys may repeat. */
export type Header = readonly [string, Uint8Array | null];

/**
 * A record as a processor receives and forwards it (Kafka Streams'
 * `api.Record`): immutable; the `with*` methods make a changed copy.
 */
export class Record<K = unknown, V = unknown> {
  constructor(
    readonly key: K,
    readonly value: V,
    /** Epoch milliseconds. */
    readonly timestamp: number,
    readonly headers: readonly Header[] = [],
  ) {}

  withKey<KR>(key: KR): Record<KR, V> {
    return new Record(key, this.value, this.timestamp, this.headers);
  }

  withValue<VR>(value: VR): Record<K, VR> {
    return new Record(this.key, value, this.timestamp, this.headers);
  }

  withTimestamp(timestamp: number): Record<K, V> {
    return new Record(this.key, this.value, checkTimestamp(timestamp, "withTimestamp"), this.headers);
  }

  withHeaders(headers: readonly Header[]): Record<K, V> {
    return new Record(this.key, this.value, this.timestamp, checkHeaders(headers, "withHeaders"));
  }
}

/**
 * A record of a fixed-key processor (`processValues`; Kafka Streams'
 * `api.FixedKeyRecord`): its key cannot change.
 */
export class FixedKeyRecord<K = unknown, V = unknown> {
  constructor(
    readonly key: K,
    readonly value: V,
    /** Epoch milliseconds. */
    readonly timestamp: number,
    readonly headers: readonly Header[] = [],
  ) {}

  withValue<VR>(value: VR): FixedKeyRecord<K, VR> {
    return new FixedKeyRecord(this.key, value, this.timestamp, this.headers);
  }

  withTimestamp(timestamp: number): FixedKeyRecord<K, V> {
    return new FixedKeyRecord(this.key, this.value, checkTimestamp(timestamp, "withTimestamp"), this.headers);
  }

  withHeaders(headers: readonly Header[]): FixedKeyRecord<K, V> {
    return new FixedKeyRecord(this.key, this.value, this.timestamp, checkHeaders(headers, "withHeaders"));
  }
}

function checkTimestamp(t: unknown, call: string): number {
  if (typeof t !== "number" || !Number.isSafeInteger(t)) {
    throw new TypeError(`${call}: a timestamp is an integer number of epoch milliseconds, not ${typeName(t)}`);
  }
  return t;
}

function checkHeaders(h: unknown, call: string): readonly Header[] {
  if (!Array.isArray(h) || h.some((x) => !Array.isArray(x) || x.length !== 2 || typeof x[0] !== "string" || !(x[1] === null || x[1] instanceof Uint8Array))) {
    throw new TypeError(`${call}: headers are [key, value] pairs of a string and a Uint8Array (or null)`);
  }
  return h as readonly Header[];
}

/** When a punctuator runs: by stream time (record timestamps) or by the wall clock. */
export type PunctuationType = "stream_time" | "wall_clock_time";

/** A schedule's handle: cancel() stops its punctuator. */
export interface Cancellable {
  cancel(): void;
}

/** A punctuator: called with the stream or wall-clock time (ms) it runs at. */
export type Punctuator = (timestamp: number) => unknown;

/** A timestamped store's value (`ValueAndTimestamp`). */
export interface ValueAndTimestamp<V> {
  readonly value: V;
  readonly timestamp: number;
}

/**
 * A processor's view of a key-value store (`KeyValueStore`). Reads return
 * promises (those the bundle brought resolve at once); writes are
 * synchronous. Iterators are async iterables in key order (of the keys'
 * serialized bytes); close one you leave early (`await using`, or close()).
 */
export interface KeyValueStore<K = unknown, V = unknown> {
  readonly name: string;
  get(key: K): Promise<V | null>;
  put(key: K, value: V | null): void;
  putIfAbsent(key: K, value: V): Promise<V | null>;
  putAll(entries: Iterable<readonly [K, V | null]>): void;
  /** Deletes the key; the promise has its old value. */
  delete(key: K): Promise<V | null>;
  range(from: K | null, to: K | null): KeyValueIterator<K, V>;
  reverseRange(from: K | null, to: K | null): KeyValueIterator<K, V>;
  all(): KeyValueIterator<K, V>;
  reverseAll(): KeyValueIterator<K, V>;
  prefixScan(prefix: K): KeyValueIterator<K, V>;
  /** The number of entries (counted over all(): a Read per chunk). */
  approximateNumEntries(): Promise<number>;
}

/** A timestamped key-value store (`TimestampedKeyValueStore`): values carry their timestamp. */
export type TimestampedKeyValueStore<K = unknown, V = unknown> = KeyValueStore<K, ValueAndTimestamp<V>>;

/** A window store (`WindowStore`): values per key and window start. */
export interface WindowStore<K = unknown, V = unknown> {
  readonly name: string;
  /** put(key, value, windowStart); a null value deletes. */
  put(key: K, value: V | null, windowStart: number): void;
  /** The key's value in the window starting at `time`. */
  fetch(key: K, time: number): Promise<V | null>;
  /** The key's windows starting in [from, to], as [windowStart, value], by window start. */
  fetchRange(key: K, from: number, to: number): KeyValueIterator<number, V>;
  /** fetchRange, latest window first. */
  backwardFetchRange(key: K, from: number, to: number): KeyValueIterator<number, V>;
  /** Every key's windows starting in [from, to], as [Windowed key, value]. */
  fetchAll(from: number, to: number): KeyValueIterator<Windowed<K>, V>;
  all(): KeyValueIterator<Windowed<K>, V>;
}

/**
 * A versioned key-value store (`VersionedKeyValueStore`, KIP-889): every
 * version of a key's value, each valid from its timestamp until the next
 * version's, kept for the store's history retention behind its stream time
 * (the largest timestamp put into it). `put` resolves to the version's
 * validTo (the next version's timestamp) when it lands in the past,
 * {@link PUT_RETURN_CODE_VALID_TO_UNDEFINED} when it is the key's latest,
 * {@link PUT_RETURN_CODE_NOT_PUT} when it is older than the history
 * retention (nothing is put; dropped-records counts it); a null value is a
 * tombstone. `get(key)` resolves to the latest version, `get(key, { asOf })`
 * to the one valid at `asOf`, with `validTo` undefined (as Kafka Streams'
 * processor stores answer), or undefined. `delete(key, timestamp)` puts a
 * tombstone and resolves to the version valid at `timestamp` before it.
 * Calls on one store take effect in call order, awaited or not.
 */
export interface VersionedKeyValueStore<K = unknown, V = unknown> {
  readonly name: string;
  put(key: K, value: V | null, timestamp: number): Promise<number>;
  get(key: K, options?: { asOf?: number }): Promise<VersionedRecord<V> | undefined>;
  delete(key: K, timestamp: number): Promise<VersionedRecord<V> | undefined>;
}

/** A versioned store's put answer when the version is the key's latest (`PUT_RETURN_CODE_VALID_TO_UNDEFINED`). */
export const PUT_RETURN_CODE_VALID_TO_UNDEFINED = -1;
/**
 * A versioned store's put answer when nothing was put, being older than the
 * history retention (`PUT_RETURN_CODE_NOT_PUT`, Java's `Long.MIN_VALUE`:
 * -2^63, exact as a number; `BigInt(code)` prints it as Java does).
 */
export const PUT_RETURN_CODE_NOT_PUT = -(2 ** 63);

/** An iterator over a store: `for await (const [k, v] of it)`; close() (or `await using`) when leaving early. */
export interface KeyValueIterator<K, V> extends AsyncIterableIterator<[K, V]>, AsyncDisposable {
  close(): void;
}

/** What a processor is given at init (Kafka Streams' `api.ProcessorContext`). */
export interface ProcessorContext<KF = unknown, VF = unknown> {
  /** The task this processor belongs to, e.g. "0_1". */
  readonly taskId: string;
  /** The processor node's name. */
  readonly nodeName: string;
  /** Forwards a record to every child, or to the child named `child`. */
  forward(record: Record<KF, VF>, child?: string): void;
  /** A store connected to this processor. */
  getStateStore<S = KeyValueStore>(name: string): S;
  /** Schedules `punctuator` every `intervalMs` of stream or wall-clock time. */
  schedule(intervalMs: number, type: PunctuationType, punctuator: Punctuator): Cancellable;
  /** The topic, partition, offset, timestamp and headers of the record being processed; undefined in init and punctuators. */
  recordMetadata(): RecordMetadata | undefined;
  /** The current stream time of the task (ms). */
  currentStreamTimeMs(): number;
}

/** A fixed-key processor's context (`api.FixedKeyProcessorContext`): forwards keep the input's key. */
export interface FixedKeyProcessorContext<K = unknown, VF = unknown> extends Omit<ProcessorContext<K, VF>, "forward"> {
  forward(record: FixedKeyRecord<K, VF>, child?: string): void;
}

/**
 * A processor (Kafka Streams' `api.Processor`): init(context) once per task,
 * process(record) per record (it may return a promise: records are awaited
 * one at a time, in order), close() when the task closes.
 */
export interface Processor<KIn = unknown, VIn = unknown, KOut = unknown, VOut = unknown> {
  init?(context: ProcessorContext<KOut, VOut>): unknown;
  process(record: Record<KIn, VIn>): unknown;
  close?(): unknown;
}

/** A fixed-key processor (`api.FixedKeyProcessor`), for processValues. */
export interface FixedKeyProcessor<KIn = unknown, VIn = unknown, VOut = unknown> {
  init?(context: FixedKeyProcessorContext<KIn, VOut>): unknown;
  process(record: FixedKeyRecord<KIn, VIn>): unknown;
  close?(): unknown;
}

/** Makes a new processor (`ProcessorSupplier.get`): called once per task. */
export type ProcessorSupplier<KIn = unknown, VIn = unknown, KOut = unknown, VOut = unknown> = () => Processor<KIn, VIn, KOut, VOut>;
/** Makes a new fixed-key processor (`FixedKeyProcessorSupplier.get`). */
export type FixedKeyProcessorSupplier<KIn = unknown, VIn = unknown, VOut = unknown> = () => FixedKeyProcessor<KIn, VIn, VOut>;

/**
 * A table's value transformer (`KTable.transformValues`; Kafka Streams'
 * `ValueTransformerWithKey`): init(context) once per task (keep the context
 * to reach the stores named in `stores` and to schedule punctuators; its
 * forward throws, as the result is what transform returns),
 * transform(readOnlyKey, value) per value, a tombstone's null included
 * (it may return a promise: values are awaited one at a time, in order),
 * close() when the task closes.
 */
export interface ValueTransformerWithKey<K = unknown, V = unknown, VR = unknown> {
  init?(context: ProcessorContext<K, VR>): unknown;
  transform(readOnlyKey: K, value: V | null): VR | null | PromiseLike<VR | null>;
  close?(): unknown;
}

/** Makes a new value transformer (`ValueTransformerWithKeySupplier.get`): called once per task. */
export type ValueTransformerWithKeySupplier<K = unknown, V = unknown, VR = unknown> = () => ValueTransformerWithKey<K, V, VR>;

/**
 * The fixed-key processor supplier the engine calls for a transformer:
 * each record's value is replaced by what transform returns, forwarded
 * once. Its transformer's context is Kafka Streams'
 * ForwardingDisabledProcessorContext.
 */
export function transformerProcessor<K, V, VR>(supplier: ValueTransformerWithKeySupplier<K, V, VR>): FixedKeyProcessorSupplier<K, V, VR> {
  const make = (): FixedKeyProcessor<K, V, VR> => {
    const transformer = supplier();
    if (transformer === null || typeof transformer !== "object" || typeof transformer.transform !== "function") {
      throw new TypeError(`transformValues: the supplier returned ${typeName(transformer)}, which has no transform(key, value)`);
    }
    let ctx: FixedKeyProcessorContext<K, VR> | undefined;
    return {
      init(context: FixedKeyProcessorContext<K, VR>): unknown {
        ctx = context;
        const noForward: ProcessorContext<K, VR> = {
          get taskId() {
            return context.taskId;
          },
          get nodeName() {
            return context.nodeName;
          },
          forward(): void {
            throw new Error(
              `forward: node ${context.nodeName} is a transform_values node: its transformer returns the new value and cannot forward (ProcessorContext#forward() is not supported from this context)`,
            );
          },
          getStateStore: <S>(name: string): S => context.getStateStore<S>(name),
          schedule: (intervalMs: number, type: PunctuationType, punctuator: Punctuator): Cancellable => context.schedule(intervalMs, type, punctuator),
          recordMetadata: () => context.recordMetadata(),
          currentStreamTimeMs: () => context.currentStreamTimeMs(),
        };
        return transformer.init?.(noForward);
      },
      process(record: FixedKeyRecord<K, V>): unknown {
        const value = transformer.transform(record.key, record.value);
        if (value !== null && typeof value === "object" && typeof (value as PromiseLike<VR | null>).then === "function") {
          return Promise.resolve(value).then((v) => ctx!.forward(record.withValue(v as VR)));
        }
        ctx!.forward(record.withValue(value as VR));
        return undefined;
      },
      close(): unknown {
        return transformer.close?.();
      },
    };
  };
  Object.defineProperty(make, "name", { value: supplier.name || "transformValues" });
  return make;
}

// ---------------------------------------------------------------------------
// Store builders.

/** Options of Stores.keyValueStore and Stores.timestampedKeyValueStore. */
export interface StoreBuilderOptions {
  /** The key serde (default `bytes`). */
  key?: SerdeName;
  /** The value serde (default `bytes`). */
  value?: SerdeName;
  /** withLoggingDisabled: no changelog (default: logged). */
  loggingDisabled?: boolean;
  /** withLoggingEnabled(config): the changelog topic's configs. */
  changelogConfig?: { readonly [key: string]: string };
  /** withCachingEnabled. */
  caching?: boolean;
}

/** Options of Stores.windowStore and Stores.timestampedWindowStore. */
export interface WindowStoreBuilderOptions extends StoreBuilderOptions {
  /** How long (ms) a window is kept. */
  retentionMs: number;
  /** The windows' size (ms). */
  windowSizeMs: number;
  /** Whether a key may hold several values per window. */
  retainDuplicates?: boolean;
}

/** Options of Stores.versionedKeyValueStore. */
export interface VersionedStoreBuilderOptions extends StoreBuilderOptions {
  /** How long (ms) versions older than the latest stay readable (`historyRetention`). */
  historyRetentionMs: number;
  /** The segment interval (ms) of Kafka Streams' layout (`segmentInterval`); default: Kafka's. */
  segmentIntervalMs?: number;
}

/**
 * A store a topology declares (`StoreBuilder`): give it to addStateStore.
 * The `with*` methods return a changed copy, as Kafka Streams' do.
 */
export class StoreBuilder {
  /** @internal */
  constructor(
    readonly name: string,
    /** @internal */
    readonly type: StoreType,
    readonly options: Readonly<StoreBuilderOptions & Partial<WindowStoreBuilderOptions> & Partial<VersionedStoreBuilderOptions>>,
  ) {}

  /** No changelog topic: the store is rebuilt from nothing after a restart. */
  withLoggingDisabled(): StoreBuilder {
    return new StoreBuilder(this.name, this.type, { ...this.options, loggingDisabled: true });
  }

  /** A changelog topic (the default), with these topic configs. */
  withLoggingEnabled(config: { readonly [key: string]: string } = {}): StoreBuilder {
    return new StoreBuilder(this.name, this.type, { ...this.options, loggingDisabled: false, changelogConfig: { ...config } });
  }

  withCachingEnabled(): StoreBuilder {
    return new StoreBuilder(this.name, this.type, { ...this.options, caching: true });
  }

  withCachingDisabled(): StoreBuilder {
    return new StoreBuilder(this.name, this.type, { ...this.options, caching: false });
  }
}

function storeName(name: unknown, call: string): string {
  if (typeof name !== "string" || name === "") {
    throw new TypeError(`${call}: a store name is a non-empty string, not ${typeName(name)}`);
  }
  return name;
}

/** The stores a topology may declare (Kafka Streams' `Stores.*StoreBuilder`). */
export const Stores = {
  /** A key-value store (`Stores.keyValueStoreBuilder(persistentKeyValueStore(name), ...)`). */
  keyValueStore(name: string, options: StoreBuilderOptions = {}): StoreBuilder {
    return new StoreBuilder(storeName(name, "keyValueStore"), StoreType.KEY_VALUE, { ...options });
  },
  /** A key-value store whose values carry a timestamp (`timestampedKeyValueStoreBuilder`). */
  timestampedKeyValueStore(name: string, options: StoreBuilderOptions = {}): StoreBuilder {
    return new StoreBuilder(storeName(name, "timestampedKeyValueStore"), StoreType.TIMESTAMPED_KEY_VALUE, { ...options });
  },
  /** A window store (`windowStoreBuilder(persistentWindowStore(name, retention, windowSize, retainDuplicates), ...)`). */
  windowStore(name: string, options: WindowStoreBuilderOptions): StoreBuilder {
    return new StoreBuilder(storeName(name, "windowStore"), StoreType.WINDOW, checkWindow(options, "windowStore"));
  },
  /**
   * A versioned key-value store (`versionedKeyValueStoreBuilder(persistentVersionedKeyValueStore(name,
   * historyRetention[, segmentInterval]), ...)`): its processors get a {@link VersionedKeyValueStore}.
   */
  versionedKeyValueStore(name: string, options: VersionedStoreBuilderOptions): StoreBuilder {
    const h: unknown = options?.historyRetentionMs;
    if (typeof h !== "number" || !Number.isSafeInteger(h) || h < 0) {
      throw new TypeError(`versionedKeyValueStore: historyRetentionMs must be a non-negative integer number of milliseconds, not ${String(h)}`);
    }
    const seg: unknown = options.segmentIntervalMs;
    if (seg !== undefined && (typeof seg !== "number" || !Number.isSafeInteger(seg) || seg < 1)) {
      throw new TypeError(`versionedKeyValueStore: segmentIntervalMs must be a positive integer number of milliseconds, not ${String(seg)}`);
    }
    return new StoreBuilder(storeName(name, "versionedKeyValueStore"), StoreType.VERSIONED_KEY_VALUE, { ...options });
  },
  /** A window store whose values carry a timestamp (`timestampedWindowStoreBuilder`). */
  timestampedWindowStore(name: string, options: WindowStoreBuilderOptions): StoreBuilder {
    return new StoreBuilder(storeName(name, "timestampedWindowStore"), StoreType.TIMESTAMPED_WINDOW, checkWindow(options, "timestampedWindowStore"));
  },
};

function checkWindow(options: WindowStoreBuilderOptions, call: string): WindowStoreBuilderOptions {
  for (const k of ["retentionMs", "windowSizeMs"] as const) {
    const v: unknown = options?.[k];
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1) {
      throw new TypeError(`${call}: ${k} must be a positive integer number of milliseconds, not ${String(v)}`);
    }
  }
  if (options.windowSizeMs > options.retentionMs) {
    throw new RangeError(`${call}: windowSizeMs ${options.windowSizeMs} is longer than retentionMs ${options.retentionMs}`);
  }
  return { ...options };
}

/** The AddStateStoreOp of a builder. @internal */
export function addStateStoreOp(store: StoreBuilder, processors: readonly string[]) {
  if (!(store instanceof StoreBuilder)) {
    throw new TypeError(`addStateStore: want a store from Stores (e.g. Stores.keyValueStore(name)), not ${typeName(store)}`);
  }
  const o = store.options;
  return {
    name: store.name,
    type: store.type,
    keySerde: o.key ?? "",
    valueSerde: o.value ?? "",
    retentionMs: BigInt(o.retentionMs ?? 0),
    windowSizeMs: BigInt(o.windowSizeMs ?? 0),
    retainDuplicates: o.retainDuplicates ?? false,
    loggingDisabled: o.loggingDisabled ?? false,
    caching: o.caching ?? false,
    processors: [...processors],
    changelogConfig: { ...o.changelogConfig },
    ...(store.type === StoreType.VERSIONED_KEY_VALUE
      ? { versioned: { historyRetentionMs: BigInt(o.historyRetentionMs ?? 0), segmentIntervalMs: BigInt(o.segmentIntervalMs ?? 0), $typeName: "polystreams.v1alpha1.VersionedStore" as const } }
      : {}),
  };
}

// ---------------------------------------------------------------------------
// Metadata for stateless functions (withMetadata).

/**
 * A record's metadata (Kafka Streams' `RecordMetadata`, with the record's
 * timestamp and headers): what `ctx.recordMetadata()` answers, and what a
 * function wrapped by withMetadata is given besides the key and value (with
 * `{ write: true }` it may change `timestamp` and `headers` for its
 * outputs).
 */
export interface RecordMetadata {
  timestamp: number;
  headers: Header[];
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
}

/** The RecordMetadata the executor gives a withMetadata function. @internal */
export class Metadata_ implements RecordMetadata {
  constructor(
    public timestamp: number,
    public headers: Header[],
    readonly topic: string,
    readonly partition: number,
    readonly offset: number,
  ) {}
}

/** Marks a function registered with metadata. @internal */
export const WITH_METADATA: unique symbol = Symbol("polystreams.withMetadata");

/**
 * Wraps a DSL function so that it is given the record's metadata as one
 * more argument (`RegisterFunctionRequest.metadata`): `withMetadata((v, m)
 * => ...)`. With `{ write: true }`, setting `m.timestamp` or `m.headers`
 * changes its outputs' (without it, changes are ignored).
 * Functions not wrapped pay nothing for metadata on the crossing.
 */
export function withMetadata<A extends unknown[], R>(fn: (...args: [...A, RecordMetadata]) => R, options: { write?: boolean } = {}): (...args: A) => R {
  if (typeof fn !== "function") {
    throw new TypeError(`withMetadata: want a function, got ${typeName(fn)}`);
  }
  const wrapped = (...args: unknown[]): R => {
    if (!(args[args.length - 1] instanceof Metadata_)) {
      throw new Error(
        `withMetadata: ${fn.name || "a function"} was called without the record's metadata: the engine does not send it for this step (it needs the "metadata" host feature)`,
      );
    }
    return (fn as AnyFunction)(...args) as R;
  };
  Object.defineProperty(wrapped, "name", { value: fn.name });
  Object.defineProperty(wrapped, WITH_METADATA, { value: options.write === true ? Metadata.WRITE : Metadata.READ });
  return wrapped;
}

/** The metadata a function registers with (RegisterFunctionRequest.metadata). @internal */
export function metadataOf(fn: AnyFunction): Metadata {
  return (fn as { [WITH_METADATA]?: Metadata })[WITH_METADATA] ?? Metadata.UNSPECIFIED;
}

// ---------------------------------------------------------------------------
// The executor's processor mode.

/** Makes a Read call for the bundle being run. */
export type ReadFn = (request: Omit<ReadRequest, "$typeName" | "sessionId">) => Promise<ReadResponse>;

const PROCESSORS = new Set<Operation>([Operation.PROCESS, Operation.PROCESS_VALUES]);

/** Whether a bundle runs in processor mode. */
export function isProcessorBundle(b: Bundle): boolean {
  return b.steps.some((s) => PROCESSORS.has(s.operation)) || b.inits.length > 0 || b.after.length > 0;
}

/** Serialized bytes as a map key whose string order is the bytes' order. */
function bkey(bytes: Uint8Array): string {
  if (bytes.byteLength <= 64) {
    // Short keys (the common case): no Buffer view per call.
    return String.fromCharCode.apply(null, bytes as unknown as number[]);
  }
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1");
}

function kbytes(k: string): Uint8Array {
  return Buffer.from(k, "latin1");
}

/** A value in the overlay: its bytes (null: absent) and timestamp. */
interface Entry {
  value: Uint8Array | null;
  timestamp: number;
}

/** One op, as the result's columns will carry it. */
interface Op {
  kind: OpKind;
  step: number;
  target: number;
  key: Uint8Array | null;
  value: Uint8Array | null;
  timestamp: number;
  schedule: bigint;
  headers: readonly Header[] | null; // FORWARD: null = the input's headers
}

const ABSENT: Entry = { value: null, timestamp: 0 };

/** The state of one bundle's run: its overlay, ops and reads. */
class Run {
  readonly ops: Op[] = [];
  /** Store name -> its overlay. */
  readonly stores = new Map<string, Overlay>();
  constructor(
    readonly bundle: Bundle,
    readonly read: ReadFn,
    readonly storeSpecs: ReadonlyMap<string, StoreBuilder>,
  ) {
    for (const view of bundle.stores) {
      this.stores.set(view.store, new Overlay(this, view));
    }
  }

  async request(store: string, query: ReadRequest["query"], reverse: boolean, continuation: Uint8Array): Promise<ReadResponse> {
    return this.read({ bundleId: this.bundle.id, store, query, reverse, continuation });
  }
}

/** Decodes a ReadResponse's rows. */
function rowsOf(resp: ReadResponse): { key: Uint8Array; value: Uint8Array | null; timestamp: number; window: number }[] {
  const rows = [];
  let ko = 0;
  let vo = 0;
  for (let i = 0; i < resp.keyLengths.length; i++) {
    const kl = resp.keyLengths[i]!;
    const key = resp.keys.subarray(ko, ko + Math.max(kl, 0));
    ko += Math.max(kl, 0);
    const vl = resp.valueLengths[i] ?? -1;
    const value = vl < 0 ? null : resp.values.subarray(vo, vo + vl);
    vo += Math.max(vl, 0);
    rows.push({ key, value, timestamp: Number(resp.timestamps[i] ?? 0n), window: Number(resp.windows[i] ?? 0n) });
  }
  return rows;
}

/** Splits a columnar list of byte strings. */
function split(data: Uint8Array, lengths: readonly number[]): (Uint8Array | null)[] {
  const out: (Uint8Array | null)[] = [];
  let o = 0;
  for (const l of lengths) {
    if (l < 0) {
      out.push(null);
      continue;
    }
    out.push(data.subarray(o, o + l));
    o += l;
  }
  return out;
}

/**
 * One store during one bundle: the prefetched entries, what Reads brought,
 * and the bundle's writes (kept apart too: they are what iterators merge
 * over the engine's answers).
 */
class Overlay {
  readonly name: string;
  readonly keySerde: string;
  readonly valueSerde: string;
  readonly type: StoreType;
  readonly windowed: boolean;
  readonly timestamped: boolean;
  /** serialized key (window stores: key + "\0" + window start) -> entry */
  readonly known = new Map<string, Entry>();
  /** the bundle's writes, same keys */
  readonly written = new Map<string, Entry>();
  /** prefetched keys (window stores: covered keys) not yet read */
  readonly prefetched = new Set<string>();
  hits = 0;
  /** window stores: keys whose rows the view holds */
  readonly covered = new Set<string>();
  /** window stores: the windows' size (from the store's builder; 0 when this host did not build it) */
  readonly windowSize: number;
  /** versioned stores: serialized key -> its versions in ascending validFrom (value null: a tombstone) */
  readonly versions = new Map<string, Version[]>();
  readonly versioned: boolean;
  /** versioned stores: the store's stream time, advanced by the bundle's puts, and its history retention */
  streamTime = -1;
  historyRetention = 0;
  /** versioned stores: the last call still waiting for a Read (calls run in call order behind it) */
  private vtail: Promise<void> | null = null;

  constructor(
    readonly run: Run,
    view: StoreView,
  ) {
    this.name = view.store;
    this.keySerde = view.keySerde || "bytes";
    this.valueSerde = view.valueSerde || "bytes";
    this.type = view.type;
    this.windowed = view.type === StoreType.WINDOW || view.type === StoreType.TIMESTAMPED_WINDOW;
    this.timestamped = view.type === StoreType.TIMESTAMPED_KEY_VALUE || view.type === StoreType.TIMESTAMPED_WINDOW;
    this.windowSize = run.storeSpecs.get(view.store)?.options.windowSizeMs ?? 0;
    this.versioned = view.type === StoreType.VERSIONED_KEY_VALUE;
    if (this.versioned) {
      this.versionsView(view);
      return;
    }
    const keys = split(view.keys, view.keyLengths);
    const values = split(view.values, view.valueLengths);
    const uncovered = new Set(split(view.uncovered, view.uncoveredLengths).map((k) => bkey(k ?? new Uint8Array())));
    for (let i = 0; i < keys.length; i++) {
      const k = bkey(keys[i] ?? new Uint8Array());
      const e: Entry = { value: values[i] ?? null, timestamp: Number(view.timestamps[i] ?? 0n) };
      if (this.windowed) {
        if (uncovered.has(k)) {
          continue;
        }
        this.covered.add(k);
        this.prefetched.add(k);
        if (e.value !== null) {
          this.known.set(wkey(k, Number(view.windows[i] ?? 0n)), e);
        }
      } else {
        this.known.set(k, e);
        this.prefetched.add(k);
      }
    }
  }

  /** A versioned store's view: each key once, its version count, then its versions' values and validFroms. */
  private versionsView(view: StoreView): void {
    this.streamTime = Number(view.streamTimeMs);
    this.historyRetention = Number(view.historyRetentionMs);
    const keys = split(view.keys, view.keyLengths);
    const values = split(view.values, view.valueLengths);
    const total = view.versionCounts.reduce((a, b) => a + b, 0);
    if (view.versionCounts.length !== keys.length || total !== values.length || view.windows.length !== values.length) {
      throw new Error(`malformed store view ${JSON.stringify(view.store)}: ${keys.length} keys, ${view.versionCounts.length} version counts adding up to ${total}, ${values.length} values, ${view.windows.length} validFroms`);
    }
    let at = 0;
    for (let i = 0; i < keys.length; i++) {
      const k = bkey(keys[i] ?? new Uint8Array());
      const n = view.versionCounts[i]!;
      const vs: Version[] = [];
      for (let j = at; j < at + n; j++) {
        vs.push({ from: Number(view.windows[j]!), value: values[j] ?? null });
      }
      at += n;
      this.versions.set(k, vs);
      this.prefetched.add(k);
    }
  }

  /**
   * Runs f over a key's versions: at once when they are known and no call
   * waits, else after the calls before it and, when unknown, one Read
   * (ReadRequest.versions), so calls take effect in call order.
   */
  withVersions<T>(k: string, key: Uint8Array, f: (vs: Version[]) => T): T | Promise<T> {
    if (this.vtail === null) {
      const vs = this.versions.get(k);
      if (vs !== undefined) {
        this.hit(k);
        return f(vs);
      }
    }
    const p = (this.vtail ?? Promise.resolve()).then(async () => {
      let vs = this.versions.get(k);
      if (vs === undefined) {
        const resp = await this.run.request(this.name, { case: "versions", value: key }, false, new Uint8Array());
        const rows = rowsOf(resp);
        vs = rows.map((r) => ({ from: r.window, value: r.value }));
        this.versions.set(k, vs);
      } else {
        this.hit(k);
      }
      return f(vs);
    });
    const tail = p.then(
      () => undefined,
      () => undefined,
    );
    this.vtail = tail;
    void tail.then(() => {
      if (this.vtail === tail) {
        this.vtail = null;
      }
    });
    return p;
  }

  /** FindVersion (the engine's state/versioned.go): the latest version, or the one valid at asOf. */
  findVersion(vs: readonly Version[], asOf: number | undefined): Version | undefined {
    if (vs.length === 0) {
      return undefined;
    }
    if (asOf === undefined) {
      const v = vs[vs.length - 1]!;
      return v.value === null ? undefined : v;
    }
    let i = vs.length - 1;
    while (i >= 0 && vs[i]!.from > asOf) {
      i--;
    }
    if (i < 0) {
      return undefined;
    }
    const v = vs[i]!;
    if (v.value === null || (asOf < this.streamTime - this.historyRetention && i !== vs.length - 1)) {
      return undefined;
    }
    return v;
  }

  /** A version put into vs (value null: a tombstone): put's answer, as RocksDBVersionedStore's. */
  putVersion(vs: Version[], from: number, value: Uint8Array | null): number {
    if (from < this.streamTime - this.historyRetention) {
      return PUT_RETURN_CODE_NOT_PUT;
    }
    const latest = vs.length === 0 || from >= vs[vs.length - 1]!.from;
    const next = vs.find((v) => v.from > from);
    this.streamTime = Math.max(this.streamTime, from);
    let i = 0;
    while (i < vs.length && vs[i]!.from < from) {
      i++;
    }
    if (i < vs.length && vs[i]!.from === from) {
      vs[i] = { from, value };
    } else {
      vs.splice(i, 0, { from, value });
    }
    return latest || next === undefined ? PUT_RETURN_CODE_VALID_TO_UNDEFINED : next.from;
  }

  hit(k: string): void {
    if (this.prefetched.delete(k)) {
      this.hits++;
    }
  }

  encodeKey(key: unknown, call: string): Uint8Array {
    if (key === null || key === undefined) {
      throw new TypeError(`${call}: store "${this.name}": a key cannot be null`);
    }
    return encode(this.keySerde, key)!;
  }

  decodeValue(e: Entry): unknown {
    if (e.value === null) {
      return null;
    }
    const v = decode(this.valueSerde, e.value);
    return this.timestamped ? { value: v, timestamp: e.timestamp } : v;
  }

  /** A value to store: its bytes and timestamp (timestamped stores: from the ValueAndTimestamp). */
  encodeValue(value: unknown, call: string, now: number): Entry {
    if (value === null || value === undefined) {
      return { value: null, timestamp: now };
    }
    if (this.timestamped) {
      const vt = value as ValueAndTimestamp<unknown>;
      if (typeof vt !== "object" || !("value" in vt) || typeof vt.timestamp !== "number") {
        throw new TypeError(`${call}: store "${this.name}" is timestamped: put a { value, timestamp }, not ${typeName(value)}`);
      }
      return { value: encode(this.valueSerde, vt.value), timestamp: vt.timestamp };
    }
    return { value: encode(this.valueSerde, value), timestamp: now };
  }

  /** The entry of a key (KV stores), from the overlay or one Read. */
  lookup(k: string, key: Uint8Array, asStored = false, isGet = false): Entry | Promise<Entry> {
    if (isGet) {
      this.hit(k);
    }
    const e = this.known.get(k);
    if (e !== undefined) {
      return e;
    }
    return this.run.request(this.name, { case: "get", value: key }, false, new Uint8Array()).then((resp) => {
      const rows = rowsOf(resp);
      const row = rows.find((r) => bkey(r.key) === k);
      const got: Entry = row === undefined || row.value === null ? ABSENT : { value: row.value, timestamp: row.timestamp };
      if (!this.known.has(k)) {
        this.known.set(k, got); // a write made while the Read was out wins
      }
      return asStored ? got : this.known.get(k)!;
    });
  }

  write(step: number, index: number, k: string, key: Uint8Array, e: Entry, window?: number): void {
    const mk = window === undefined ? k : wkey(k, window);
    this.known.set(mk, e);
    this.written.set(mk, e);
    this.run.ops.push({
      kind: e.value === null ? OpKind.DELETE : OpKind.PUT,
      step,
      target: index,
      key,
      value: e.value,
      timestamp: window ?? (this.timestamped && e.value !== null ? e.timestamp : 0),
      schedule: 0n,
      headers: null,
    });
  }
}

/** One version of a versioned store's value: valid from `from`; value null: a tombstone. */
interface Version {
  from: number;
  value: Uint8Array | null;
}

/** A window store's overlay key: the serialized key, then the window start. */
function wkey(k: string, window: number): string {
  // The window start as fixed-width hex of (start + 2^53), so that string
  // order is (key, window start) order, as the engine answers rows.
  return `${k}\u0000${(window + 2 ** 53).toString(16).padStart(14, "0")}`;
}

/**
 * An iterator merging the engine's answer (chunk by chunk, each a Read) with
 * the bundle's writes in its range: a write replaces the stored entry, a
 * delete hides it.
 */
class MergedIterator<K, V> implements KeyValueIterator<K, V> {
  private readonly writes: [string, Entry][];
  private w = 0;
  private chunk: { k: string; e: Entry }[] = [];
  private c = 0;
  private continuation: Uint8Array | null = new Uint8Array(); // null: the engine has no more
  private closed = false;

  constructor(
    private readonly overlay: Overlay,
    private readonly query: ReadRequest["query"],
    private readonly reverse: boolean,
    inRange: (k: string) => boolean,
    private readonly out: (k: string, e: Entry) => [K, V],
  ) {
    this.writes = [...overlay.written].filter(([k]) => inRange(k)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    if (reverse) {
      this.writes.reverse();
    }
  }

  private before(a: string, b: string): boolean {
    return this.reverse ? a > b : a < b;
  }

  private async fill(): Promise<void> {
    while (this.c >= this.chunk.length && this.continuation !== null) {
      const resp = await this.overlay.run.request(this.overlay.name, this.query, this.reverse, this.continuation);
      this.chunk = rowsOf(resp).map((r) => ({
        k: this.overlay.windowed ? wkey(bkey(r.key), r.window) : bkey(r.key),
        e: { value: r.value, timestamp: r.timestamp },
      }));
      this.c = 0;
      this.continuation = resp.continuation.byteLength > 0 ? resp.continuation : null;
    }
  }

  async next(): Promise<IteratorResult<[K, V]>> {
    for (;;) {
      if (this.closed) {
        return { done: true, value: undefined };
      }
      await this.fill();
      const stored = this.chunk[this.c];
      const write = this.writes[this.w];
      let k: string;
      let e: Entry;
      if (stored === undefined && write === undefined) {
        this.closed = true;
        return { done: true, value: undefined };
      } else if (write === undefined || (stored !== undefined && this.before(stored.k, write[0]))) {
        this.c++;
        k = stored!.k;
        e = this.overlay.written.get(k) ?? stored!.e; // a write since the iterator began
        if (!this.overlay.known.has(k)) {
          this.overlay.known.set(k, e);
        }
      } else {
        if (stored !== undefined && stored.k === write[0]) {
          this.c++;
        }
        this.w++;
        [k, e] = write;
      }
      if (e.value !== null) {
        return { done: false, value: this.out(k, e) };
      }
    }
  }

  close(): void {
    this.closed = true;
  }

  async return(): Promise<IteratorResult<[K, V]>> {
    this.closed = true;
    return { done: true, value: undefined };
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.closed = true;
  }
}

/** The processor instance of one (task, node), with its context. */
class Instance {
  /** schedule id -> punctuator */
  readonly punctuators = new Map<bigint, Punctuator>();
  /** The id the next schedule gets (BundleEntry.schedule names it back); from 1 per instance. */
  nextSchedule = 1n;
  processor: Processor | FixedKeyProcessor | undefined;
  readonly ctx: Context;
  constructor(
    readonly key: string,
    readonly step: Step,
    readonly host: ProcessorExecutor,
    task: string,
  ) {
    this.ctx = new Context(this, task);
  }
}

/** What one call into a processor is doing: the run, the entry's step, the input record. */
interface Current {
  run: Run;
  step: number;
  steps: readonly Step[];
  /** step index -> child name -> the later step of the bundle it names */
  inBundle: Map<string, number>[];
  record: { topic: string; partition: number; offset: number; timestamp: number; headers: readonly Header[] } | null;
  streamTime: number;
  pending: Promise<unknown>[];
  /** the failure of a child run in the bundle (depth first) */
  childFailure: unknown;
}

class Context implements ProcessorContext {
  current: Current | null = null;
  constructor(
    private readonly inst: Instance,
    readonly taskId: string,
  ) {}

  get nodeName(): string {
    return this.inst.step.node;
  }

  private cur(call: string): Current {
    if (this.current === null) {
      throw new Error(`${call}: node ${this.nodeName}: the processor's context is used outside init, process or a punctuator`);
    }
    return this.current;
  }

  forward(record: Record | FixedKeyRecord, child?: string): void {
    const cur = this.cur("forward");
    if (!(record instanceof Record) && !(record instanceof FixedKeyRecord)) {
      throw new TypeError(`forward: node ${this.nodeName}: want a Record (e.g. record.withValue(v)), not ${typeName(record)}`);
    }
    const step = this.inst.step;
    let target = 0;
    if (child !== undefined) {
      target = step.children.indexOf(child) + 1;
      if (target === 0) {
        throw new Error(`forward: node ${this.nodeName} has no child ${JSON.stringify(child)} (children: [${step.children.join(", ")}])`);
      }
    }
    const fixed = step.operation === Operation.PROCESS_VALUES;
    if (fixed && !(record instanceof FixedKeyRecord)) {
      throw new TypeError(`forward: node ${this.nodeName} is a processValues processor: forward a FixedKeyRecord (the input's record.withValue(v)), not a Record`);
    }
    const inBundle = cur.inBundle[cur.step]!;
    const targets = child === undefined ? step.children.map((c, i) => [c, i + 1] as const) : [[child, target] as const];
    const outside = targets.filter(([c]) => !inBundle.has(c));
    if (inBundle.size === 0 || outside.length === targets.length) {
      this.emit(cur, record, child === undefined ? 0 : target);
    } else {
      for (const [, t] of outside) {
        this.emit(cur, record, t);
      }
    }
    for (const [c] of targets) {
      const s = inBundle.get(c);
      if (s !== undefined) {
        this.inst.host.runChild(cur, s, record);
      }
    }
  }

  private emit(cur: Current, record: Record | FixedKeyRecord, target: number): void {
    const b = cur.run.bundle;
    // Every forward op is encoded with the bundle's output serdes (the
    // protocol names no other: a chain's steps' forwards leave it alike).
    const keySerde = b.outputKeySerde || b.keySerde;
    const valueSerde = b.outputValueSerde || b.valueSerde;
    // A fixed-key forward carries its key too (the input's: FixedKeyRecord
    // has no withKey), as the processors host vectors pin; the engine checks it.
    const key = encodeAs(keySerde, record.key, "forward", this.nodeName, "key");
    const value = encodeAs(valueSerde, record.value, "forward", this.nodeName, "value");
    cur.run.ops.push({
      kind: OpKind.FORWARD,
      step: cur.step,
      target,
      key,
      value,
      timestamp: record.timestamp,
      schedule: 0n,
      headers: sameHeaders(record.headers, cur.record?.headers ?? []) ? null : record.headers,
    });
  }

  getStateStore<S>(name: string): S {
    this.cur("getStateStore");
    const step = this.inst.step;
    const index = step.stores.indexOf(name);
    if (index < 0) {
      throw new Error(`getStateStore: node ${this.nodeName} has no access to store ${JSON.stringify(name)} (its stores: [${step.stores.join(", ")}])`);
    }
    return storeFacade(this, name, index) as S;
  }

  /** The overlay of a store for the call in progress. */
  overlay(call: string, name: string): Overlay {
    const cur = this.cur(call);
    const o = cur.run.stores.get(name);
    if (o === undefined) {
      throw new Error(`${call}: node ${this.nodeName}: the bundle brought no view of store ${JSON.stringify(name)} (the engine sends one per declared store)`);
    }
    return o;
  }

  stepIndex(): number {
    return this.cur("store").step;
  }

  currentRun(call: string): Run {
    return this.cur(call).run;
  }

  now(): number {
    const cur = this.current;
    return cur?.record?.timestamp ?? cur?.streamTime ?? 0;
  }

  schedule(intervalMs: number, type: PunctuationType, punctuator: Punctuator): Cancellable {
    const cur = this.cur("schedule");
    if (typeof intervalMs !== "number" || !Number.isSafeInteger(intervalMs) || intervalMs < 1) {
      throw new RangeError(`schedule: node ${this.nodeName}: interval ${String(intervalMs)} ms; the minimum is 1 ms`);
    }
    if (type !== "stream_time" && type !== "wall_clock_time") {
      throw new TypeError(`schedule: node ${this.nodeName}: unknown punctuation type ${JSON.stringify(type)} (want "stream_time" or "wall_clock_time")`);
    }
    if (typeof punctuator !== "function") {
      throw new TypeError(`schedule: node ${this.nodeName}: want a punctuator function, not ${typeName(punctuator)}`);
    }
    const id = this.inst.nextSchedule++;
    this.inst.punctuators.set(id, punctuator);
    cur.run.ops.push({ kind: OpKind.SCHEDULE, step: cur.step, target: type === "stream_time" ? 1 : 2, key: null, value: null, timestamp: intervalMs, schedule: id, headers: null });
    return {
      cancel: () => {
        if (!this.inst.punctuators.delete(id)) {
          return;
        }
        const now = this.current;
        if (now === null) {
          return; // outside a call: the engine learns of it with the next bundle's punctuation, which finds none
        }
        now.run.ops.push({ kind: OpKind.CANCEL, step: now.step, target: 0, key: null, value: null, timestamp: 0, schedule: id, headers: null });
      },
    };
  }

  recordMetadata(): RecordMetadata | undefined {
    const r = this.cur("recordMetadata").record;
    return r === null ? undefined : { topic: r.topic, partition: r.partition, offset: r.offset, timestamp: r.timestamp, headers: [...r.headers] };
  }

  currentStreamTimeMs(): number {
    return this.cur("currentStreamTimeMs").streamTime;
  }
}

/** Whether two header lists are equal, pair by pair. */
export function sameHeaders(a: readonly Header[], b: readonly Header[]): boolean {
  if (a === b) {
    return true;
  }
  return (
    a.length === b.length &&
    a.every(([k, v], i) => {
      const [bk, bv] = b[i]!;
      return k === bk && (v === null || bv === null ? v === bv : Buffer.compare(v, bv) === 0);
    })
  );
}

function encodeAs(serde: string, v: unknown, call: string, node: string, what: string): Uint8Array | null {
  try {
    return encode(serde, v);
  } catch (e) {
    throw new TypeError(`${call}: node ${node}: the record's ${what} does not encode as ${serde}: ${errorText(e)}`);
  }
}

/** The store object a processor gets: reads through the overlay, writes as ops. */
function storeFacade(ctx: Context, name: string, index: number): KeyValueStore | WindowStore | VersionedKeyValueStore {
  // The store's kind is known from the bundle's view when a method is
  // called (getStateStore may be called in an init whose bundle has none):
  // the object has both kinds' methods and each checks it is the right one.
  let windowMethods: WindowStore;
  const fetchRange = (call: string, key: unknown, from: number, to: number, reverse: boolean): KeyValueIterator<number, unknown> => {
    const ov = o(call);
    const kb = ov.encodeKey(key, call);
        const k = bkey(kb);
        const inRange = (mk: string): boolean => {
          const [kk, t] = splitW(mk);
          return kk === k && t >= from && t <= to;
        };
        const out = (mk: string, e: Entry): [number, unknown] => [splitW(mk)[1], ov.decodeValue(e)];
        if (ov.covered.has(k)) {
          ov.hit(k);
          const rows = [...ov.known].filter(([mk, e]) => inRange(mk) && e.value !== null).sort((a, b) => splitW(a[0])[1] - splitW(b[0])[1]).map(([mk, e]) => out(mk, e));
          return listIterator(reverse ? rows.reverse() : rows);
        }
        return new MergedIterator(ov, { case: "windowFetch", value: { key: kb, fromMs: BigInt(from), toMs: BigInt(to), $typeName: "polystreams.v1alpha1.WindowFetch" } }, reverse, inRange, out);
  };

  const o = (call: string): Overlay => ctx.overlay(call, name);
  {
    const w: WindowStore = {
      name,
      put(key, value, windowStart) {
        const ov = o("put");
        const kb = ov.encodeKey(key, "put");
        ov.write(ctx.stepIndex(), index, bkey(kb), kb, ov.encodeValue(value, "put", checkTimestamp(windowStart, "put")), windowStart);
      },
      fetch(key, time) {
        const ov = o("fetch");
        const kb = ov.encodeKey(key, "fetch");
        const k = bkey(kb);
        if (ov.covered.has(k)) {
          ov.hit(k);
          return Promise.resolve(ov.decodeValue(ov.known.get(wkey(k, time)) ?? ABSENT));
        }
        const it = new MergedIterator<number, unknown>(ov, { case: "windowFetch", value: { key: kb, fromMs: BigInt(time), toMs: BigInt(time), $typeName: "polystreams.v1alpha1.WindowFetch" } }, false, (mk) => mk === wkey(k, time), (_, e) => [time, ov.decodeValue(e)]);
        return it.next().then((r) => (r.done ? null : r.value[1]));
      },
      fetchRange(key, from, to) {
        return fetchRange("fetchRange", key, from, to, false);
      },
      backwardFetchRange(key, from, to) {
        return fetchRange("backwardFetchRange", key, from, to, true);
      },
      fetchAll(from, to) {
        const ov = o("fetchAll");
        return new MergedIterator(ov, { case: "windowFetch", value: { fromMs: BigInt(from), toMs: BigInt(to), $typeName: "polystreams.v1alpha1.WindowFetch" } }, false, (mk) => {
          const t = splitW(mk)[1];
          return t >= from && t <= to;
        }, (mk, e) => [windowedOf(ov, mk), ov.decodeValue(e)]);
      },
      all() {
        const ov = o("all");
        return new MergedIterator(ov, { case: "all", value: true }, false, () => true, (mk, e) => [windowedOf(ov, mk), ov.decodeValue(e)]);
      },
    };
    windowMethods = w;
  }
  const get = (call: string, key: unknown): Promise<unknown> => {
    const ov = o(call);
    const kb = ov.encodeKey(key, call);
    const e = ov.lookup(bkey(kb), kb, false, true);
    return isThenable(e) ? e.then((x) => ov.decodeValue(x)) : Promise.resolve(ov.decodeValue(e));
  };
  const put = (call: string, key: unknown, value: unknown): void => {
    const ov = o(call);
    const kb = ov.encodeKey(key, call);
    ov.write(ctx.stepIndex(), index, bkey(kb), kb, ov.encodeValue(value, call, ctx.now()));
  };
  const iter = (call: string, query: ReadRequest["query"], reverse: boolean, inRange: (k: string) => boolean): KeyValueIterator<unknown, unknown> => {
    const ov = o(call);
    return new MergedIterator(ov, query, reverse, inRange, (k, e) => [decode(ov.keySerde, kbytes(k)), ov.decodeValue(e)]);
  };
  const range = (call: string, from: unknown, to: unknown, reverse: boolean): KeyValueIterator<unknown, unknown> => {
    const ov = o(call);
    const f = from === null || from === undefined ? undefined : ov.encodeKey(from, call);
    const t = to === null || to === undefined ? undefined : ov.encodeKey(to, call);
    const fk = f === undefined ? null : bkey(f);
    const tk = t === undefined ? null : bkey(t);
    return iter(call, { case: "range", value: { ...(f === undefined ? {} : { from: f }), ...(t === undefined ? {} : { to: t }), $typeName: "polystreams.v1alpha1.KeyRange" } }, reverse, (k) => (fk === null || k >= fk) && (tk === null || k <= tk));
  };
  const kv: KeyValueStore = {
    name,
    get: (key) => get("get", key),
    put: (key, value) => put("put", key, value),
    putIfAbsent(key, value) {
      // The check and the put happen in one go when the overlay knows the key.
      const ov = o("putIfAbsent");
      const kb = ov.encodeKey(key, "putIfAbsent");
      const step = ctx.stepIndex();
      const now = ctx.now();
      const e = ov.lookup(bkey(kb), kb);
      const settle = (x: Entry): unknown => {
        if (x.value === null) {
          ov.write(step, index, bkey(kb), kb, ov.encodeValue(value, "putIfAbsent", now));
        }
        return ov.decodeValue(x);
      };
      return isThenable(e) ? e.then(settle) : Promise.resolve(settle(e));
    },
    putAll(entries) {
      for (const [k, v] of entries) {
        put("putAll", k, v);
      }
    },
    delete(key) {
      const ov = o("delete");
      const kb = ov.encodeKey(key, "delete");
      const step = ctx.stepIndex();
      const now = ctx.now();
      const k = bkey(kb);
      const old = ov.known.get(k);
      // The delete is an op now (in call order); its old value may need a Read.
      const before = old ?? ov.lookup(k, kb, true);
      ov.write(step, index, k, kb, { value: null, timestamp: now });
      return isThenable(before) ? before.then((x) => ov.decodeValue(x)) : Promise.resolve(ov.decodeValue(before));
    },
    range: (from, to) => range("range", from, to, false),
    reverseRange: (from, to) => range("reverseRange", from, to, true),
    all: () => iter("all", { case: "all", value: true }, false, () => true),
    reverseAll: () => iter("reverseAll", { case: "all", value: true }, true, () => true),
    async approximateNumEntries() {
      let n = 0;
      for await (const _ of iter("approximateNumEntries", { case: "all", value: true }, false, () => true)) {
        n++;
      }
      return n;
    },
    prefixScan(prefix) {
      const ov = o("prefixScan");
      const p = bkey(ov.encodeKey(prefix, "prefixScan"));
      return iter("prefixScan", { case: "prefix", value: kbytes(p) }, false, (k) => k.startsWith(p));
    },
  };
  const versionedTime = (t: unknown, call: string): number => {
    if (typeof t !== "number" || !Number.isSafeInteger(t)) {
      throw new TypeError(`${call}: store ${JSON.stringify(name)}: timestamp must be an integer number of epoch milliseconds, not ${String(t)}`);
    }
    return t;
  };
  const record = (ov: Overlay, v: Version | undefined): VersionedRecord | undefined =>
    // Kafka Streams' processor stores answer no validTo (MeteredVersionedKeyValueStore).
    v === undefined || v.value === null ? undefined : { value: decode(ov.valueSerde, v.value), timestamp: v.from, validTo: undefined };
  const versionedPut = (call: string, key: unknown, value: unknown, timestamp: unknown): Promise<number> => {
    const ov = o(call);
    const ts = versionedTime(timestamp, call);
    const kb = ov.encodeKey(key, call);
    const data = value === null || value === undefined ? null : encode(ov.valueSerde, value);
    // The op is sent even when expired: the engine recomputes the answer
    // with putVersion and counts the dropped put, as RocksDBVersionedStore.
    ctx.currentRun(call).ops.push({ kind: OpKind.PUT, step: ctx.stepIndex(), target: index, key: kb, value: data, timestamp: ts, schedule: 0n, headers: null });
    return Promise.resolve(ov.withVersions(bkey(kb), kb, (vs) => ov.putVersion(vs, ts, data)));
  };
  const versioned: VersionedKeyValueStore = {
    name,
    put: (key, value, timestamp) => versionedPut("put", key, value, timestamp),
    get(key, options = {}) {
      const ov = o("get");
      const asOf = options.asOf === undefined ? undefined : versionedTime(options.asOf, "get");
      const kb = ov.encodeKey(key, "get");
      return Promise.resolve(ov.withVersions(bkey(kb), kb, (vs) => record(ov, ov.findVersion(vs, asOf))));
    },
    delete(key, timestamp) {
      const ov = o("delete");
      const ts = versionedTime(timestamp, "delete");
      const kb = ov.encodeKey(key, "delete");
      ctx.currentRun("delete").ops.push({ kind: OpKind.PUT, step: ctx.stepIndex(), target: index, key: kb, value: null, timestamp: ts, schedule: 0n, headers: null });
      return Promise.resolve(
        ov.withVersions(bkey(kb), kb, (vs) => {
          const old = ts < ov.streamTime - ov.historyRetention ? undefined : record(ov, ov.findVersion(vs, ts));
          ov.putVersion(vs, ts, null);
          return old;
        }),
      );
    },
  };
  type Kind = "key-value" | "window" | "versioned";
  const kindOf = (ov: Overlay): Kind => (ov.versioned ? "versioned" : ov.windowed ? "window" : "key-value");
  const article: { [k in Kind]: string } = { "key-value": "a key-value store", window: "a window store", versioned: "a versioned key-value store" };
  const kinded = <F extends AnyFunction>(call: string, kinds: readonly Kind[], f: F): F =>
    ((...args: unknown[]) => {
      const kind = kindOf(o(call));
      if (!kinds.includes(kind)) {
        throw new TypeError(`${call}: store ${JSON.stringify(name)} is ${article[kind]}, which has no ${call}`);
      }
      return f(...args);
    }) as F;
  const facade: { [m: string]: unknown } = { name };
  for (const [m, f] of Object.entries(kv)) {
    if (typeof f === "function") {
      facade[m] = kinded(m, ["key-value"], f as AnyFunction);
    }
  }
  for (const [m, f] of Object.entries(windowMethods!)) {
    if (typeof f === "function") {
      facade[m] = m === "put" || m === "all" ? undefined : kinded(m, ["window"], f as AnyFunction);
    }
  }
  const byKind = (m: "put" | "all" | "get" | "delete", of: { [k in Kind]?: AnyFunction }): AnyFunction =>
    kinded(m, Object.keys(of) as Kind[], (...args: unknown[]) => of[kindOf(o(m))]!(...args));
  facade["put"] = byKind("put", { "key-value": kv.put, window: windowMethods.put as AnyFunction, versioned: versioned.put as AnyFunction });
  facade["all"] = byKind("all", { "key-value": kv.all, window: windowMethods.all });
  facade["get"] = byKind("get", { "key-value": kv.get, versioned: versioned.get as AnyFunction });
  facade["delete"] = byKind("delete", { "key-value": kv.delete, versioned: versioned.delete as AnyFunction });
  return facade as unknown as KeyValueStore & WindowStore;
}

/** A window store row's key: the key and its window (end: start + the store's window size). */
function windowedOf(ov: Overlay, mk: string): Windowed {
  const [k, start] = splitW(mk);
  return new Windowed(decode(ov.keySerde, kbytes(k)), start, start + ov.windowSize);
}

function splitW(mk: string): [string, number] {
  const i = mk.lastIndexOf("\u0000");
  return [mk.slice(0, i), Number.parseInt(mk.slice(i + 1), 16) - 2 ** 53];
}

function listIterator<K, V>(items: [K, V][]): KeyValueIterator<K, V> {
  let i = 0;
  let closed = false;
  return {
    async next() {
      return closed || i >= items.length ? { done: true, value: undefined } : { done: false, value: items[i++]! };
    },
    async return() {
      closed = true;
      return { done: true, value: undefined };
    },
    close() {
      closed = true;
    },
    [Symbol.asyncIterator]() {
      return this;
    },
    async [Symbol.asyncDispose]() {
      closed = true;
    },
  };
}

/**
 * Runs processor bundles. Keeps one processor instance per (task, node),
 * made by an init entry and dropped by a close entry, across bundles.
 */
export class ProcessorExecutor {
  private readonly instances = new Map<string, Instance>();

  constructor(
    private readonly functions: ReadonlyMap<number, AnyFunction>,
    private readonly read: ReadFn,
    /** The stores this host's builder declared, by name (window stores' sizes). */
    private readonly storeSpecs: ReadonlyMap<string, StoreBuilder> = new Map(),
  ) {}

  /** The processor instances alive, as "task/node" (for tests). */
  get live(): string[] {
    return [...this.instances.keys()];
  }

  async process(b: Bundle): Promise<BundleResult> {
    const result = create(BundleResultSchema, { bundleId: b.id });
    const n = b.valueLengths.length;
    const entries = b.inits.length + n + b.after.length;
    const broken = this.check(b);
    if (broken !== null) {
      return failEvery(result, entries, broken[0], broken[1]);
    }
    const run = new Run(b, this.read, this.storeSpecs);
    const counts: number[] = [];
    const failures: [number, number, string, RecordFailure_Kind][] = [];
    const inBundle = b.steps.map((st) => {
      const m = new Map<string, number>();
      for (const c of st.children) {
        const s = b.steps.findIndex((x, j) => j > 0 && x.node === c);
        if (s >= 0) {
          m.set(c, s);
        }
      }
      return m;
    });
    let streamTime = -1;
    const base = (step: number): Current => ({ run, step, steps: b.steps, inBundle, record: null, streamTime, pending: [], childFailure: undefined });
    let entry = 0;
    const finish = async (cur: Current, r: unknown, step: number): Promise<void> => {
      try {
        if (isThenable(r)) {
          await r;
        }
        while (cur.pending.length > 0) {
          await cur.pending.shift();
        }
        if (cur.childFailure !== undefined) {
          throw cur.childFailure;
        }
      } catch (e) {
        failures.push([entry, step, errorText(e), RecordFailure_Kind.PROCESSING]);
      }
    };
    const group = async (fn: () => Promise<void>): Promise<void> => {
      const start = run.ops.length;
      await fn();
      counts.push(run.ops.length - start);
      entry++;
    };

    for (const e of b.inits) {
      await group(() => this.entry(b, e, base(e.step), finish));
    }
    // Records.
    const keys = split(b.keys, b.keyLengths.length === n ? b.keyLengths : new Array<number>(n).fill(-1));
    const headers = recordHeaders(b, n);
    const step0 = b.steps[0]!;
    const fixed0 = step0.operation === Operation.PROCESS_VALUES;
    const values = decodeColumn(b.valueSerde || "bytes", b.values, b.valueLengths);
    const inst = this.instances.get(instanceKey(b.task, step0.node));
    const keySerde = b.keySerde || "bytes";
    for (let i = 0; i < n; i++) {
      // The hot path: no closure or promise per record unless the processor returns one.
      const ts = Number(b.timestamps[i] ?? 0n);
      streamTime = Math.max(streamTime, ts);
      const start = run.ops.length;
      let key: unknown;
      let bad = values.failures.get(i);
      if (bad === undefined) {
        try {
          key = decode(keySerde, keys[i] ?? null);
        } catch (err) {
          bad = errorText(err);
        }
      } else {
        try {
          decode(keySerde, keys[i] ?? null);
        } catch (err) {
          bad = errorText(err); // the key's failure is named first, as a chain does
        }
      }
      if (bad !== undefined) {
        failures.push([entry, 0, bad, RecordFailure_Kind.DESERIALIZATION]);
      } else if (inst?.processor === undefined) {
        failures.push([entry, 0, `Error: node ${step0.node} in task ${b.task} has no processor: the bundle did not init it`, RecordFailure_Kind.PROCESSING]);
      } else {
        const meta = { topic: b.topic, partition: b.partition, offset: Number(b.offsets[i] ?? -1n), timestamp: ts, headers: headers[i]! };
        const rec = fixed0 ? new FixedKeyRecord(key, values.items[i], ts, meta.headers) : new Record(key, values.items[i], ts, meta.headers);
        const cur: Current = { run, step: 0, steps: b.steps, inBundle, record: meta, streamTime, pending: [], childFailure: undefined };
        const ctx = inst.ctx;
        const prev = ctx.current;
        ctx.current = cur;
        try {
          const r = inst.processor.process(rec as Record & FixedKeyRecord);
          if (isThenable(r)) {
            await r;
          }
          while (cur.pending.length > 0) {
            await cur.pending.shift();
          }
          if (cur.childFailure !== undefined) {
            throw cur.childFailure;
          }
        } catch (err) {
          failures.push([entry, 0, errorText(err), RecordFailure_Kind.PROCESSING]);
        } finally {
          ctx.current = prev;
        }
      }
      counts.push(run.ops.length - start);
      entry++;
    }
    for (const e of b.after) {
      await group(() => this.entry(b, e, { ...base(e.step), streamTime: e.kind === BundleEntry_Kind.PUNCTUATE_STREAM_TIME ? Number(e.timeMs) : streamTime }, finish));
    }
    encodeOps(result, run.ops, counts);
    result.prefetchHits = b.stores.map((v) => run.stores.get(v.store)!.hits);
    result.failures = failures.map(([index, step, message, kind]) => create(RecordFailureSchema, { index, step, message, kind }));
    return result;
  }

  /** A bundle this executor cannot run: [step, message], or null. */
  private check(b: Bundle): [number, string] | null {
    for (let s = 0; s < b.steps.length; s++) {
      const st = b.steps[s]!;
      if (!PROCESSORS.has(st.operation)) {
        const op = Operation[st.operation] ?? String(st.operation);
        return [s, `TypeError: step ${s} (${st.node}) has operation ${op} in a processor bundle, which this host does not run`];
      }
      if (typeof this.functions.get(st.token) !== "function") {
        return [s, `ReferenceError: step ${s} (${st.node}) names token ${st.token}, which is not registered in this host`];
      }
    }
    if (b.steps.length === 0) {
      return [0, "RangeError: malformed processor bundle: no steps"];
    }
    for (const e of [...b.inits, ...b.after]) {
      if (e.step < 0 || e.step >= b.steps.length) {
        return [0, `RangeError: malformed processor bundle: an entry names step ${e.step} of ${b.steps.length}`];
      }
    }
    return null;
  }

  /** Runs fn (a processor's call) with the context set to cur; the context is cleared when its promise settles. */
  private call(inst: Instance, cur: Current, fn: () => unknown): unknown {
    const ctx = inst.ctx;
    const prev = ctx.current;
    ctx.current = cur;
    let r: unknown;
    try {
      r = fn();
    } catch (e) {
      ctx.current = prev;
      throw e;
    }
    if (isThenable(r)) {
      return Promise.resolve(r).finally(() => {
        ctx.current = prev;
      });
    }
    ctx.current = prev;
    return r;
  }

  /** A record forwarded to a later step of the bundle: runs it there now (depth first). */
  runChild(parent: Current, step: number, record: Record | FixedKeyRecord): void {
    const st = parent.steps[step]!;
    const inst = this.instances.get(instanceKey(parent.run.bundle.task, st.node));
    if (inst?.processor === undefined) {
      throw new Error(`forward: node ${st.node} in task ${parent.run.bundle.task} has no processor: the bundle did not init it`);
    }
    const rec = st.operation === Operation.PROCESS_VALUES ? new FixedKeyRecord(record.key, record.value, record.timestamp, record.headers) : new Record(record.key, record.value, record.timestamp, record.headers);
    const cur: Current = { ...parent, step };
    let r: unknown;
    try {
      r = this.call(inst, cur, () => inst.processor!.process(rec as Record & FixedKeyRecord));
    } catch (e) {
      parent.childFailure ??= e;
      throw e;
    }
    if (isThenable(r)) {
      parent.pending.push(
        Promise.resolve(r).catch((e: unknown) => {
          parent.childFailure ??= e;
        }),
      );
    }
  }

  private async entry(b: Bundle, e: BundleEntry, cur: Current, finish: (cur: Current, r: unknown, step: number) => Promise<void>): Promise<void> {
    const st = b.steps[e.step]!;
    const key = instanceKey(b.task, st.node);
    let r: unknown;
    try {
      switch (e.kind) {
        case BundleEntry_Kind.INIT: {
          const old = this.instances.get(key);
          if (old?.processor?.close !== undefined) {
            try {
              old.processor.close();
            } catch {
              // replaced by the new instance; Kafka Streams' re-init after a corrupted task does the same
            }
          }
          const inst = new Instance(key, st, this, b.task);
          this.instances.set(key, inst);
          const p = (this.functions.get(st.token) as () => Processor)();
          if (p === null || typeof p !== "object" || typeof p.process !== "function") {
            this.instances.delete(key);
            throw new TypeError(`init: node ${st.node}: the processor supplier returned ${typeName(p)}, not a processor (an object with process(record))`);
          }
          inst.processor = p;
          r = p.init === undefined ? undefined : this.call(inst, cur, () => p.init!(inst.ctx as ProcessorContext & FixedKeyProcessorContext));
          break;
        }
        case BundleEntry_Kind.PUNCTUATE_STREAM_TIME:
        case BundleEntry_Kind.PUNCTUATE_WALL_CLOCK: {
          const inst = this.instances.get(key);
          const fn = inst?.punctuators.get(e.schedule);
          const kind = e.kind === BundleEntry_Kind.PUNCTUATE_STREAM_TIME ? "stream time" : "wall-clock time";
          if (inst === undefined || fn === undefined) {
            throw new Error(`punctuate: node ${st.node} in task ${b.task} has no schedule ${e.schedule} (cancelled, or never scheduled by this host)`);
          }
          const t = Number(e.timeMs);
          r = this.call(inst, cur, () => fn(t));
          if (isThenable(r)) {
            r = Promise.resolve(r).catch((err: unknown) => {
              throw new Error(`punctuator of node ${st.node} at ${kind} ${t} failed: ${errorText(err)}`);
            });
          }
          break;
        }
        case BundleEntry_Kind.CLOSE: {
          const inst = this.instances.get(key);
          this.instances.delete(key);
          const p = inst?.processor;
          r = p?.close === undefined ? undefined : this.call(inst!, cur, () => p.close!());
          break;
        }
        default:
          throw new RangeError(`malformed processor bundle: entry kind ${String(e.kind)}`);
      }
    } catch (err) {
      r = Promise.reject(err);
    }
    await finish(cur, r, e.step);
  }
}

function instanceKey(task: string, node: string): string {
  return `${task}/${node}`;
}

/** Each record's headers (the input's, shared by forwards that keep them). */
export function recordHeaders(b: Bundle, n: number): (readonly Header[])[] {
  const out: (readonly Header[])[] = new Array(n);
  const empty: readonly Header[] = [];
  if (b.headerCounts.length === 0) {
    return out.fill(empty);
  }
  const ks = split(b.headerKeys, b.headerKeyLengths);
  const vs = split(b.headerValues, b.headerValueLengths);
  let h = 0;
  for (let i = 0; i < n; i++) {
    const c = b.headerCounts[i] ?? 0;
    const list: Header[] = [];
    for (let j = 0; j < c; j++, h++) {
      list.push([Buffer.from(ks[h] ?? new Uint8Array()).toString("utf8"), vs[h] === null || vs[h] === undefined ? null : new Uint8Array(vs[h]!)]);
    }
    out[i] = list;
  }
  return out;
}

/** Puts the ops into the result's op columns. */
function encodeOps(result: BundleResult, ops: readonly Op[], counts: number[]): void {
  result.opCounts = counts;
  const keys: Uint8Array[] = [];
  const values: Uint8Array[] = [];
  const hk: Uint8Array[] = [];
  const hv: Uint8Array[] = [];
  for (const op of ops) {
    result.opKinds.push(op.kind);
    result.opSteps.push(op.step);
    result.opTargets.push(op.target);
    result.opKeyLengths.push(op.key === null ? -1 : op.key.byteLength);
    if (op.key !== null) {
      keys.push(op.key);
    }
    result.opValueLengths.push(op.value === null ? -1 : op.value.byteLength);
    if (op.value !== null) {
      values.push(op.value);
    }
    result.opTimestamps.push(BigInt(op.timestamp));
    result.opSchedules.push(op.schedule);
    if (op.kind === OpKind.FORWARD) {
      if (op.headers === null) {
        result.opHeaderCounts.push(-1);
      } else {
        result.opHeaderCounts.push(op.headers.length);
        for (const [k, v] of op.headers) {
          const kb = Buffer.from(k, "utf8");
          result.opHeaderKeyLengths.push(kb.byteLength);
          hk.push(kb);
          result.opHeaderValueLengths.push(v === null ? -1 : v.byteLength);
          if (v !== null) {
            hv.push(v);
          }
        }
      }
    }
  }
  result.opKeys = Buffer.concat(keys);
  result.opValues = Buffer.concat(values);
  result.opHeaderKeys = Buffer.concat(hk);
  result.opHeaderValues = Buffer.concat(hv);
}
