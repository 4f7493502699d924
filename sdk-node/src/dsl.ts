/**
 * The builder: KStream, KGroupedStream, KTable and KGroupedTable, in Kafka
 * Streams' vocabulary.
 *
 * Each operator is one Build call to the engine, answered with a handle.
 * Builder methods return at once: the App sends the calls in program order,
 * one at a time, and each node's `handle` promise settles with the engine's
 * answer. A call the engine refuses rejects its node's `handle` (and every
 * node built from it) with the engine's error; the session stays usable.
 * Functions never cross the wire: each is registered under a token, and the
 * engine later sends records to be run through it.
 */

import { Buffer } from "node:buffer";
import process from "node:process";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { type AnyFunction, isThenable } from "./outcomes.js";
import type { PolystreamsError } from "./errors.js";
import {
  type BuildRequestSchema,
  type Handle as HandleMessage,
  Kind as KindEnum,
  Joiner as JoinerEnum,
  Reducer as ReducerEnum,
} from "./gen/polystreams/v1alpha1/engine_pb.js";
import { type SerdeName, type SerdeType, type TopicSerde, isWindowedSerde } from "./serde.js";
import type { KeyValueStore, StoreOptions, WindowStore } from "./store.js";
import type { FixedKeyProcessorSupplier, ProcessorSupplier, RecordMetadata, ValueTransformerWithKeySupplier } from "./processor.js";
import { WITH_METADATA, transformerProcessor } from "./processor.js";
import { EmitStrategy, JoinWindows, SessionWindows, SlidingWindows, Suppressed, TimeWindows, type Windowed } from "./windows.js";
import type { OffsetReset } from "./config.js";

/** What a handle stands for (`windowed_stream`: a TimeWindowedKStream, of time or sliding windows). */
export type Kind =
  | "stream"
  | "grouped_stream"
  | "table"
  | "grouped_table"
  | "windowed_stream"
  | "session_windowed_stream"
  | "global_table"
  | "cogrouped_stream"
  | "windowed_cogrouped_stream"
  | "session_windowed_cogrouped_stream";

const KINDS: Partial<Record<KindEnum, Kind>> = {
  [KindEnum.STREAM]: "stream",
  [KindEnum.GROUPED_STREAM]: "grouped_stream",
  [KindEnum.TABLE]: "table",
  [KindEnum.GROUPED_TABLE]: "grouped_table",
  [KindEnum.WINDOWED_STREAM]: "windowed_stream",
  [KindEnum.SESSION_WINDOWED_STREAM]: "session_windowed_stream",
  [KindEnum.GLOBAL_TABLE]: "global_table",
  [KindEnum.COGROUPED_STREAM]: "cogrouped_stream",
  [KindEnum.WINDOWED_COGROUPED_STREAM]: "windowed_cogrouped_stream",
  [KindEnum.SESSION_WINDOWED_COGROUPED_STREAM]: "session_windowed_cogrouped_stream",
};

/**
 * The engine's answer to a builder call: an opaque id, the kind of thing it
 * names, the serdes of its records and the processor node they come out of
 * (e.g. `KSTREAM-MAPVALUES-0000000001`).
 */
export interface Handle {
  readonly id: bigint;
  readonly kind: Kind;
  readonly keySerde: string;
  readonly valueSerde: string;
  readonly node: string;
  /** For a table materialized in a store: the store's name; else "". */
  readonly store: string;
}

/** The Handle of a protocol message; throws for a kind this SDK does not know. */
export function handleFrom(h: HandleMessage): Handle {
  const kind = KINDS[h.kind];
  if (kind === undefined) {
    throw new TypeError(`handle ${h.id} has kind ${h.kind}, which this SDK does not know`);
  }
  return Object.freeze({ id: h.id, kind, keySerde: h.keySerde, valueSerde: h.valueSerde, node: h.node, store: h.store });
}

/**
 * Names and types a state store (Kafka Streams' `Materialized`).
 *
 * `{ storeName: "counts" }` names the store (and so its changelog topic,
 * `<application.id>-counts-changelog`); `{ key: "string", value: "long" }`
 * gives serdes only, and the store name is generated. A plain string is
 * short for `{ storeName }`. `changelogConfig` gives topic configs for the
 * store's changelog, applied when the engine creates it
 * (`withLoggingEnabled`); the changelog stays compacted, so a
 * `cleanup.policy` without `compact` is refused. `retentionMs` (a windowed
 * aggregation's store: `withRetention`) is how long a window is kept after
 * its start, for queries and late records: at least the window size plus
 * grace, which is the default.
 *
 * `versionedMs` (a table source's store only, which must be named) makes it
 * a versioned store with that history retention
 * (`Materialized.as(Stores.persistentVersionedKeyValueStore(name,
 * historyRetention))`, KIP-889): it keeps every version of a key for the
 * history retention, and a stream-table join reads the version valid at
 * each stream record's timestamp (KIP-914). `segmentIntervalMs` is that
 * store's third argument (checked; the engine's layout has no segments).
 * Query it with `app.versionedStore(name)`.
 */
export interface Materialized {
  storeName?: string;
  key?: SerdeName;
  value?: SerdeName;
  changelogConfig?: Record<string, string>;
  retentionMs?: number;
  versionedMs?: number;
  segmentIntervalMs?: number;
}

/** A built-in reducer that runs in the engine and never crosses: values must be `long` or `double` (`latest`: any). */
export type Reducer = "sum" | "min" | "max" | "latest";

/** Options of an operator that only names its processor node (`Named.as`). */
export interface NamedOptions {
  name?: string;
}

/** KStream.print's options (Kafka Streams' `Printed`). */
export interface PrintOptions<K, V> extends NamedOptions {
  /** `Printed.withLabel`; absent: the name of the node the stream comes from. */
  label?: string;
  /** `Printed.withKeyValueMapper`: the text after the label. */
  mapper?: (key: K, value: V) => string;
  /** Where lines go; absent: `process.stdout`. */
  to?: { write(line: string): unknown };
}

/**
 * A key or value as print shows it, as Java's String.valueOf shows the
 * deserialized object: `null`, text as it is, numbers and bigints in
 * decimal, bytes in hex, other objects as JSON.
 */
export function printText(x: unknown): string {
  if (x === null || x === undefined) {
    return "null";
  }
  if (typeof x === "string") {
    return x;
  }
  if (x instanceof Uint8Array) {
    return Buffer.from(x.buffer, x.byteOffset, x.byteLength).toString("hex");
  }
  if (typeof x === "object") {
    return JSON.stringify(x, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v));
  }
  return String(x);
}

/** Options of an operator that makes new values. */
export interface ValueOptions extends NamedOptions {
  /** The serde of the new values; absent keeps the input's. */
  value?: SerdeName;
}

/** Options of a stream-stream join (`StreamJoined`). */
export interface StreamJoinOptions extends ValueOptions {
  /** `StreamJoined.withStoreName`: the window stores are `<storeName>-this-join-store`, ...; absent: generated. */
  storeName?: string;
}

/** Options of an operator that makes new keys. */
export interface KeyOptions extends NamedOptions {
  /** The serde of the new keys; absent keeps the input's. */
  key?: SerdeName;
}

/** Options of KStream.process and processValues. */
export interface ProcessOptions extends KeyValueOptions {
  /** The stores (added by addStateStore) the processor uses. */
  stores?: readonly string[];
}

function storeNames(stores: unknown, method: string): string[] {
  if (stores === undefined) {
    return [];
  }
  if (!Array.isArray(stores) || stores.some((x) => typeof x !== "string")) {
    throw new TypeError(`${method}: stores must be an array of store names`);
  }
  return [...(stores as string[])];
}

/** Options with key and value serdes: `Grouped.with`, `Produced.with`, map's new serdes. */
export interface KeyValueOptions extends NamedOptions {
  key?: SerdeName;
  value?: SerdeName;
}

/** Options of KStream.to (`Produced`): the topic's serdes, a topic serde (`avro(schema)`) included. */
export interface ToOptions extends NamedOptions {
  key?: SerdeName | TopicSerde;
  value?: SerdeName | TopicSerde;
  /** `Produced.streamPartitioner`: see {@link StreamPartitioner}; absent: Kafka's default partitioner. */
  partitioner?: StreamPartitioner;
}

/**
 * `partitioner(topic, key, value, numPartitions)`: the record's partition,
 * several (it is written to each; none drops it), or null/undefined for
 * Kafka's default partitioner (murmur2 of the serialized key). A partition
 * outside `[0, numPartitions)` fails the record, naming node, topic and
 * partition. May be async.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type StreamPartitioner = (topic: string, key: any, value: any, numPartitions: number) => MaybePromise<number | Iterable<number> | null | undefined>;

/**
 * A `TopicNameExtractor`: `extractor(key, value, recordContext)` names the
 * record's topic, which must exist (or be auto-created by the brokers;
 * Kafka Streams does not create it). `describe()` prints the sink as
 * `(extractor class: <the function's name>)`. May be async.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type TopicNameExtractor = (key: any, value: any, recordContext: RecordMetadata) => MaybePromise<string>;

/** Options of an aggregation. */
export interface AggregationOptions extends NamedOptions {
  /** The store: a name, or a Materialized; absent generates its name as Kafka Streams does. */
  materialized?: string | Materialized;
}

/** Options of a KTable operator that makes a table: it may keep it in a store. */
export interface TableOperatorOptions extends NamedOptions {
  /**
   * Keeps the result in a store: a name (which makes it queryable), or a
   * Materialized. Absent: the result has no store of its own (as in Kafka
   * Streams, where it is computed from the table it comes from).
   */
  materialized?: string | Materialized;
}

/** Options of KTable.mapValues. */
export interface TableValueOptions extends TableOperatorOptions {
  /** The serde of the new values; absent keeps the input's. */
  value?: SerdeName;
}

/** Options of KTable.transformValues. */
export interface TransformValuesOptions extends TableValueOptions {
  /** The stores (added by addStateStore) the transformer uses. */
  stores?: readonly string[];
}

/** A value, or a promise of one: every operator's function may be async. */
export type MaybePromise<T> = T | PromiseLike<T>;

/** The operation of a Build request, as the generated code types it. */
export type Operation = NonNullable<MessageInitShape<typeof BuildRequestSchema>["operation"]>;

/** Settles with the handle or the error: never rejects. For the App's own use. */
export type Settled = Promise<Handle | undefined | PolystreamsError>;

/** The part of the App the builder uses. Not part of the public API. */
export interface Builder {
  /**
   * Queues one Build call. `input` is the node the operator applies to (none
   * for a source); `functions` are registered first and their tokens handed
   * to `operation`, with the input's handle id. Returns the call's outcome
   * for the user and a never-rejecting twin for the builder.
   * @internal
   */
  build(
    method: string,
    input: Node | null,
    functions: readonly AnyFunction[],
    operation: (input: bigint, tokens: readonly number[], others: readonly bigint[]) => Operation,
    others?: readonly Node[],
  ): { handle: Promise<Handle | undefined>; settled: Settled };
  /**
   * Queues one Build call answered with branch handles (a split): the promise
   * settles with `answer` of them, or rejects with the engine's error (the
   * functions then unregistered).
   * @internal
   */
  buildBranches<T>(
    method: string,
    input: Node,
    functions: readonly AnyFunction[],
    operation: (input: bigint, tokens: readonly number[]) => Operation,
    answer: (branches: readonly Handle[]) => T,
  ): Promise<T>;
  /** The key-value store `name`, for interactive queries (App.store). */
  store<K, V>(name: string, options?: StoreOptions): KeyValueStore<K, V>;
  /** The window or session store `name`, for interactive queries (App.windowStore). */
  windowStore<K, V>(name: string): WindowStore<K, V>;
}

/** The settled outcome of a node, for the App. */
export const SETTLED: unique symbol = Symbol("polystreams.settled");

function materialized(m: string | Materialized | undefined, method: string) {
  if (m === undefined) {
    return undefined;
  }
  if (typeof m === "string") {
    return { storeName: m };
  }
  if (typeof m !== "object" || m === null) {
    throw new TypeError(`${method}: materialized must be a store name or a Materialized, not ${typeof m}`);
  }
  let retentionMs = 0n;
  if (m.retentionMs !== undefined) {
    if (typeof m.retentionMs !== "number" || !Number.isSafeInteger(m.retentionMs)) {
      throw new TypeError(`${method}: materialized.retentionMs must be an integer number of milliseconds, not ${String(m.retentionMs)}`);
    }
    retentionMs = BigInt(m.retentionMs);
  }
  const ms = (v: number | undefined, what: string): bigint => {
    if (v === undefined) return 0n;
    if (typeof v !== "number" || !Number.isSafeInteger(v)) {
      throw new TypeError(`${method}: materialized.${what} must be an integer number of milliseconds, not ${String(v)}`);
    }
    return BigInt(v);
  };
  if (m.segmentIntervalMs !== undefined && m.versionedMs === undefined) {
    throw new TypeError(`${method}: materialized.segmentIntervalMs is a versioned store's: give versionedMs too`);
  }
  const versioned = m.versionedMs === undefined
    ? undefined
    : { historyRetentionMs: ms(m.versionedMs, "versionedMs"), segmentIntervalMs: ms(m.segmentIntervalMs, "segmentIntervalMs") };
  return {
    storeName: m.storeName ?? "",
    keySerde: m.key ?? "",
    valueSerde: m.value ?? "",
    changelogConfig: { ...m.changelogConfig },
    retentionMs,
    ...(versioned ? { versioned } : {}),
  };
}

function callable(fn: unknown, method: string): AnyFunction {
  if (typeof fn !== "function") {
    throw new TypeError(`${method}: want a function, got ${fn === null ? "null" : typeof fn}`);
  }
  return fn as AnyFunction;
}

/**
 * A table's groupBy mapper that may return no pair (null or undefined):
 * Kafka Streams skips that side of the row's change
 * (KTableRepartitionMap), as it skips a pair with a null key, which is
 * what the engine is sent for it. Keeps the function's name.
 */
function pairOrSkip(fn: AnyFunction): AnyFunction {
  const orSkip = (p: unknown): unknown => (p === null || p === undefined ? [null, null] : p);
  // A mapper wrapped by withMetadata stays wrapped: its metadata argument passes through.
  const mapper = (key: unknown, value: unknown, ...metadata: unknown[]): unknown => {
    const p = fn(key, value, ...metadata);
    return isThenable(p) ? Promise.resolve(p).then(orSkip) : orSkip(p);
  };
  Object.defineProperty(mapper, "name", { value: fn.name });
  const asks = (fn as { [WITH_METADATA]?: unknown })[WITH_METADATA];
  if (asks !== undefined) {
    Object.defineProperty(mapper, WITH_METADATA, { value: asks });
  }
  return mapper;
}

/**
 * A joiner that runs in the engine and never crosses to this process, in
 * every kind of join: `"pair"` makes the JSON array `[value, otherValue]`
 * (each side decoded by its serde, which must not be `bytes`; null for a
 * missing side) with serde `json`; `"this"` keeps this side's value and
 * `"other"` the other side's (null when missing), in that side's serde.
 * With a built-in, a `value` serde other than its result's is refused.
 */
export type BuiltinJoiner = "pair" | "this" | "other";

const BUILTIN_JOINERS: Record<BuiltinJoiner, JoinerEnum> = {
  pair: JoinerEnum.PAIR,
  this: JoinerEnum.THIS,
  other: JoinerEnum.OTHER,
};

/** A join's joiner: a function to register, or a built-in's enum value. */
function joinerOf(joiner: unknown, method: string): { fns: AnyFunction[]; builtin: JoinerEnum } {
  if (typeof joiner === "string") {
    const builtin = Object.hasOwn(BUILTIN_JOINERS, joiner) ? BUILTIN_JOINERS[joiner as BuiltinJoiner] : undefined;
    if (builtin === undefined) {
      throw new TypeError(`${method}: unknown joiner ${JSON.stringify(joiner)} (want a function, or one of ${Object.keys(BUILTIN_JOINERS).join(", ")})`);
    }
    return { fns: [], builtin };
  }
  return { fns: [callable(joiner, method)], builtin: JoinerEnum.UNSPECIFIED };
}

/** What every node has: the App it belongs to and its handle. */
abstract class Node {
  /**
   * The engine's handle for this node. Rejects with the engine's error (a
   * PolystreamsError with its code and message) when the call that made it,
   * or one it was built from, was refused. Awaiting it is optional: a refused
   * call is reported by the next `describe()`, `start()`, `run()` or
   * `built()` unless its error was seen here first.
   */
  readonly handle: Promise<Handle>;
  /** @internal */
  readonly [SETTLED]: Settled;
  /** @internal */
  protected readonly builder: Builder;

  /** @internal */
  constructor(builder: Builder, outcome: { handle: Promise<Handle | undefined>; settled: Settled }) {
    this.builder = builder;
    this.handle = outcome.handle as Promise<Handle>;
    this[SETTLED] = outcome.settled;
  }

  /** @internal */
  callFor(
    method: string,
    functions: readonly AnyFunction[],
    operation: (input: bigint, tokens: readonly number[]) => Operation,
  ): { handle: Promise<Handle | undefined>; settled: Settled } {
    return this.builder.build(method, this, functions, operation);
  }

  /** @internal */
  protected call(
    method: string,
    functions: readonly AnyFunction[],
    operation: (input: bigint, tokens: readonly number[]) => Operation,
  ): { handle: Promise<Handle | undefined>; settled: Settled } {
    return this.builder.build(method, this, functions, operation);
  }
}

/** A stream of records (Kafka Streams' `KStream`). K and V are the types functions see. */
export class KStream<K, V> extends Node {
  /** `fn(value) -> new value`; keys are unchanged. */
  mapValues<VR>(fn: (value: V) => MaybePromise<VR>, options: ValueOptions = {}): KStream<K, VR> {
    const f = callable(fn, "mapValues");
    return new KStream(
      this.builder,
      this.call("mapValues", [f], (input, [token]) => ({
        case: "mapValues",
        value: { input, token: token!, valueSerde: options.value ?? "", name: options.name ?? "" },
      })),
    );
  }

  /** Keeps the records for which `predicate(key, value)` is truthy. */
  filter(predicate: (key: K, value: V) => unknown, options: NamedOptions = {}): KStream<K, V> {
    const f = callable(predicate, "filter");
    return new KStream(
      this.builder,
      this.call("filter", [f], (input, [token]) => ({
        case: "filter",
        value: { input, token: token!, name: options.name ?? "" },
      })),
    );
  }

  /** Drops the records for which `predicate(key, value)` is truthy. */
  filterNot(predicate: (key: K, value: V) => unknown, options: NamedOptions = {}): KStream<K, V> {
    const f = callable(predicate, "filterNot");
    return new KStream(
      this.builder,
      this.call("filterNot", [f], (input, [token]) => ({
        case: "filterNot",
        value: { input, token: token!, name: options.name ?? "" },
      })),
    );
  }

  /**
   * `fn(value) -> iterable of values` (an array, any iterable but a string, an
   * async iterable, or a promise of an iterable): zero, one or many records
   * per record, each with the input's key.
   */
  flatMapValues<VR>(
    fn: (value: V) => Iterable<VR> | AsyncIterable<VR> | PromiseLike<Iterable<VR>>,
    options: ValueOptions = {},
  ): KStream<K, VR> {
    const f = callable(fn, "flatMapValues");
    return new KStream(
      this.builder,
      this.call("flatMapValues", [f], (input, [token]) => ({
        case: "flatMapValues",
        value: { input, token: token!, valueSerde: options.value ?? "", name: options.name ?? "" },
      })),
    );
  }

  /**
   * `fn(key, value) -> new value` (Kafka Streams' `ValueMapperWithKey`):
   * reads the key, keeps it; no repartition follows.
   */
  mapValuesWithKey<VR>(fn: (key: K, value: V) => MaybePromise<VR>, options: ValueOptions = {}): KStream<K, VR> {
    const f = callable(fn, "mapValuesWithKey");
    return new KStream(
      this.builder,
      this.call("mapValuesWithKey", [f], (input, [token]) => ({
        case: "mapValues",
        value: { input, token: token!, valueSerde: options.value ?? "", name: options.name ?? "", withKey: true },
      })),
    );
  }

  /**
   * `fn(key, value) -> iterable of values` (`ValueMapperWithKey`), each a
   * record with the input's key and timestamp.
   */
  flatMapValuesWithKey<VR>(
    fn: (key: K, value: V) => Iterable<VR> | AsyncIterable<VR> | PromiseLike<Iterable<VR>>,
    options: ValueOptions = {},
  ): KStream<K, VR> {
    const f = callable(fn, "flatMapValuesWithKey");
    return new KStream(
      this.builder,
      this.call("flatMapValuesWithKey", [f], (input, [token]) => ({
        case: "flatMapValues",
        value: { input, token: token!, valueSerde: options.value ?? "", name: options.name ?? "", withKey: true },
      })),
    );
  }

  /**
   * `fn(key, value) -> iterable of [new key, new value]` (`KStream.flatMap`):
   * zero, one or many records per record, each with the input's timestamp
   * and headers. Like `map`, it marks the stream for repartitioning before a
   * grouping or join.
   */
  flatMap<KR, VR>(
    fn: (
      key: K,
      value: V,
    ) => Iterable<readonly [KR, VR]> | AsyncIterable<readonly [KR, VR]> | PromiseLike<Iterable<readonly [KR, VR]>>,
    options: KeyValueOptions = {},
  ): KStream<KR, VR> {
    const f = callable(fn, "flatMap");
    return new KStream(
      this.builder,
      this.call("flatMap", [f], (input, [token]) => ({
        case: "flatMap",
        value: { input, token: token!, keySerde: options.key ?? "", valueSerde: options.value ?? "", name: options.name ?? "" },
      })),
    );
  }

  /**
   * `fn(key, value) -> [new key, new value]`. Changing keys marks the stream
   * for repartitioning before a grouping.
   */
  map<KR, VR>(fn: (key: K, value: V) => MaybePromise<readonly [KR, VR]>, options: KeyValueOptions = {}): KStream<KR, VR> {
    const f = callable(fn, "map");
    return new KStream(
      this.builder,
      this.call("map", [f], (input, [token]) => ({
        case: "map",
        value: { input, token: token!, keySerde: options.key ?? "", valueSerde: options.value ?? "", name: options.name ?? "" },
      })),
    );
  }

  /** `fn(key, value) -> new key`; values are unchanged. */
  selectKey<KR>(fn: (key: K, value: V) => MaybePromise<KR>, options: KeyOptions = {}): KStream<KR, V> {
    const f = callable(fn, "selectKey");
    return new KStream(
      this.builder,
      this.call("selectKey", [f], (input, [token]) => ({
        case: "selectKey",
        value: { input, token: token!, keySerde: options.key ?? "", name: options.name ?? "" },
      })),
    );
  }

  /** Calls `fn(key, value)` for each record and passes it on unchanged. */
  peek(fn: (key: K, value: V) => unknown, options: NamedOptions = {}): KStream<K, V> {
    const f = callable(fn, "peek");
    return new KStream(
      this.builder,
      this.call("peek", [f], (input, [token]) => ({ case: "peek", value: { input, token: token!, name: options.name ?? "" } })),
    );
  }

  /**
   * Calls `fn(key, value)` for each record; terminal. The promise settles
   * when the engine has answered (awaiting it is optional).
   */
  foreach(fn: (key: K, value: V) => unknown, options: NamedOptions = {}): Promise<void> {
    const f = callable(fn, "foreach");
    return this.call("foreach", [f], (input, [token]) => ({
      case: "foreach",
      value: { input, token: token!, name: options.name ?? "" },
    })).handle as Promise<unknown> as Promise<void>;
  }

  /**
   * Writes `[<label>]: <key>, <value>` and a newline per record
   * (`KStream.print(Printed)`); terminal, node `KSTREAM-PRINTER-<n>`.
   * `label` is `Printed.withLabel` (default: the name of the node the stream
   * comes from, as in Kafka Streams); `mapper(key, value) → string` is
   * `Printed.withKeyValueMapper` (default: `"<key>, <value>"`, a null as
   * `null`); `to` is where lines go (default: `process.stdout`).
   */
  print(options: PrintOptions<K, V> = {}): Promise<void> {
    const text = options.mapper ?? ((k: K, v: V) => `${printText(k)}, ${printText(v)}`);
    const labelled: Promise<string> =
      options.label !== undefined ? Promise.resolve(options.label) : (this.handle as Promise<Handle>).then((h) => h.node);
    let label: string | undefined;
    void labelled.then(
      (l) => void (label = l),
      () => undefined, // a refused build rejects the call's promise instead
    );
    const write = (l: string, k: K, v: V): void => {
      (options.to ?? process.stdout).write(`[${l}]: ${text(k, v)}\n`);
    };
    const f = callable((k: K, v: V) => (label !== undefined ? write(label, k, v) : labelled.then((l) => write(l, k, v))), "print");
    return this.call("print", [f], (input, [token]) => ({
      case: "print",
      value: { input, token: token!, name: options.name ?? "" },
    })).handle as Promise<unknown> as Promise<void>;
  }

  /**
   * The stream as a table of upserts (`KStream.toTable`): a null value
   * deletes its key, a record with a null key is dropped. The node is
   * `KSTREAM-TOTABLE-<n>` unless `name` names it; a stream whose key changed
   * upstream is repartitioned first. `materialized` naming a store makes
   * the table's store exist and be queryable; otherwise it exists only if a
   * later operator needs it.
   */
  toTable(options: TableOperatorOptions = {}): KTable<K, V> {
    const m = materialized(options.materialized, "toTable");
    return new KTable(
      this.builder,
      this.call("toTable", [], (input) => ({ case: "toTable", value: { input, name: options.name ?? "", ...(m ? { materialized: m } : {}) } })),
    );
  }

  /** Groups by the current key (`Grouped.with(key, value)`, `Grouped.as(name)`). */
  groupByKey(options: KeyValueOptions = {}): KGroupedStream<K, V> {
    return new KGroupedStream(
      this.builder,
      this.call("groupByKey", [], (input) => ({
        case: "groupByKey",
        value: { input, keySerde: options.key ?? "", valueSerde: options.value ?? "", name: options.name ?? "" },
      })),
    );
  }

  /**
   * Groups by `fn(key, value) -> new key`; the records are repartitioned by
   * the new key (through `<application.id>-<name>-repartition`).
   */
  groupBy<KR>(fn: (key: K, value: V) => MaybePromise<KR>, options: KeyValueOptions = {}): KGroupedStream<KR, V> {
    const f = callable(fn, "groupBy");
    return new KGroupedStream(
      this.builder,
      this.call("groupBy", [f], (input, [token]) => ({
        case: "groupBy",
        value: { input, token: token!, keySerde: options.key ?? "", valueSerde: options.value ?? "", name: options.name ?? "" },
      })),
    );
  }

  /**
   * One stream of this stream's and `other`'s records (`KStream.merge`);
   * both must carry the same key and value serdes.
   */
  merge(other: KStream<K, V>, options: NamedOptions = {}): KStream<K, V> {
    if (!(other instanceof KStream)) {
      throw new TypeError(`merge: want a KStream to merge with, not ${other === null ? "null" : typeof other}`);
    }
    return new KStream(
      this.builder,
      this.builder.build(
        "merge",
        this,
        [],
        (input, _tokens, [otherId]) => ({ case: "merge", value: { input, other: otherId!, name: options.name ?? "" } }),
        [other],
      ),
    );
  }

  /**
   * Sends the stream through the topic `<application.id>-<name>-repartition`
   * and on from a new sub-topology (`KStream.repartition`): `name` is
   * `Repartitioned.as` (default `KSTREAM-REPARTITION-<n>`), `partitions` its
   * partition count (`withNumberOfPartitions`; absent: as many as the
   * sub-topology writing it). Records with a null key are dropped.
   */
  repartition(options: RepartitionOptions = {}): KStream<K, V> {
    const partitions = options.partitions ?? 0;
    if (!Number.isInteger(partitions) || partitions < 0 || partitions > 0x7fffffff) {
      throw new TypeError(`repartition: partitions must be a positive integer, not ${String(partitions)}`);
    }
    const fns = options.partitioner === undefined ? [] : [callable(options.partitioner, "repartition")];
    return new KStream(
      this.builder,
      this.call("repartition", fns, (input, tokens) => ({
        case: "repartition",
        value: { input, name: options.name ?? "", partitions, partitionerToken: tokens[0] ?? 0 },
      })),
    );
  }

  /**
   * Joins each record with the value `table` holds for its key now
   * (`KStream.join(KTable)`): `joiner(value, tableValue) -> new value`;
   * records whose key the table does not hold are dropped. The stream and
   * the table must be co-partitioned (one partition count); a stream whose
   * key changed upstream is repartitioned first. `value` is the joined
   * values' serde (default: the stream's); `name` is `Joined.as`.
   *
   * With another stream and {@link JoinWindows} (`KStream.join(KStream,
   * ValueJoiner, JoinWindows, StreamJoined)`): `joiner(value, otherValue)`
   * for each record of the other stream with the same key within the
   * windows, stamped with the later timestamp; both streams are kept in
   * window stores (`storeName`: `StreamJoined.withStoreName`).
   */
  join<VT, VR>(table: KTable<K, VT>, joiner: ((value: V, tableValue: VT) => MaybePromise<VR>) | BuiltinJoiner, options?: ValueOptions): KStream<K, VR>;
  join<VO, VR>(
    other: KStream<K, VO>,
    joiner: ((value: V, otherValue: VO) => MaybePromise<VR>) | BuiltinJoiner,
    windows: JoinWindows,
    options?: StreamJoinOptions,
  ): KStream<K, VR>;
  /**
   * Joins each record with the value `globalTable` holds for the key
   * `keyMapper(key, value)` gives (`KStream.join(GlobalKTable,
   * KeyValueMapper, ValueJoiner)`): records whose mapped key the global
   * table does not hold (or maps to null) are dropped; the output keeps
   * the record's key. No co-partitioning is needed.
   */
  join<KG, VG, VR>(
    globalTable: GlobalKTable<KG, VG>,
    keyMapper: (key: K, value: V) => MaybePromise<KG>,
    joiner: ((value: V, globalValue: VG) => MaybePromise<VR>) | BuiltinJoiner,
    options?: ValueOptions,
  ): KStream<K, VR>;
  join<VR>(other: KTable<K, unknown> | KStream<K, unknown> | GlobalKTable<unknown, unknown>, joiner: unknown, a?: unknown, b?: unknown): KStream<K, VR> {
    if (other instanceof GlobalKTable) {
      return joinGlobal(this, this.builder, "join", other, joiner, a, false, (b ?? {}) as ValueOptions);
    }
    return this.joinWith("join", other, joiner, false, false, a, b as StreamJoinOptions | undefined);
  }

  /**
   * {@link join} that keeps every record: `joiner` gets null for a key the
   * table does not hold (`KStream.leftJoin(KTable)`), or, joining a stream,
   * for a record no other record joined, once its window closed
   * (`KStream.leftJoin(KStream, ...)`; since Kafka 3.1 never earlier).
   */
  leftJoin<VT, VR>(
    table: KTable<K, VT>,
    joiner: ((value: V, tableValue: VT | null) => MaybePromise<VR>) | BuiltinJoiner,
    options?: ValueOptions,
  ): KStream<K, VR>;
  leftJoin<VO, VR>(
    other: KStream<K, VO>,
    joiner: ((value: V, otherValue: VO | null) => MaybePromise<VR>) | BuiltinJoiner,
    windows: JoinWindows,
    options?: StreamJoinOptions,
  ): KStream<K, VR>;
  /**
   * {@link join} with a global table that keeps every record whose mapped
   * key is not null: `joiner` gets null for a key the global table does not
   * hold (`KStream.leftJoin(GlobalKTable, KeyValueMapper, ValueJoiner)`).
   */
  leftJoin<KG, VG, VR>(
    globalTable: GlobalKTable<KG, VG>,
    keyMapper: (key: K, value: V) => MaybePromise<KG>,
    joiner: ((value: V, globalValue: VG | null) => MaybePromise<VR>) | BuiltinJoiner,
    options?: ValueOptions,
  ): KStream<K, VR>;
  leftJoin<VR>(other: KTable<K, unknown> | KStream<K, unknown> | GlobalKTable<unknown, unknown>, joiner: unknown, a?: unknown, b?: unknown): KStream<K, VR> {
    if (other instanceof GlobalKTable) {
      return joinGlobal(this, this.builder, "leftJoin", other, joiner, a, true, (b ?? {}) as ValueOptions);
    }
    return this.joinWith("leftJoin", other, joiner, true, false, a, b as StreamJoinOptions | undefined);
  }

  /**
   * {@link leftJoin} of two streams that keeps the other stream's unjoined
   * records too: `joiner(null, otherValue)` (`KStream.outerJoin(KStream,
   * ...)`).
   */
  outerJoin<VO, VR>(
    other: KStream<K, VO>,
    joiner: ((value: V | null, otherValue: VO | null) => MaybePromise<VR>) | BuiltinJoiner,
    windows: JoinWindows,
    options: StreamJoinOptions = {},
  ): KStream<K, VR> {
    if (!(other instanceof KStream)) {
      throw new TypeError(`outerJoin: want a KStream to join with, not ${other === null ? "null" : typeof other}`);
    }
    return this.joinWith("outerJoin", other, joiner, false, true, windows, options);
  }

  private joinWith<VR>(
    method: string,
    other: unknown,
    joiner: unknown,
    left: boolean,
    outer: boolean,
    a: unknown,
    b: StreamJoinOptions | undefined,
  ): KStream<K, VR> {
    if (!(other instanceof KTable) && !(other instanceof KStream)) {
      throw new TypeError(`${method}: want a KTable or a KStream to join with, not ${other === null ? "null" : typeof other}`);
    }
    let windows: JoinWindows | undefined;
    let options: StreamJoinOptions;
    if (a instanceof JoinWindows) {
      windows = a;
      options = b ?? {};
    } else if (typeof a === "function") {
      throw new TypeError(`${method}: a key mapper is for joins with a GlobalKTable`);
    } else if (other instanceof KStream) {
      throw new TypeError(`${method}: joining two streams takes JoinWindows (a stream-stream join is windowed), not ${a === null ? "null" : typeof a}`);
    } else {
      options = (a as StreamJoinOptions | undefined) ?? {};
    }
    const j = joinerOf(joiner, method);
    return new KStream(
      this.builder,
      this.builder.build(
        method,
        this,
        j.fns,
        (input, [token], [otherId]) => ({
          case: "join",
          value: {
            input,
            table: otherId!,
            joinerToken: token ?? 0,
            builtinJoiner: j.builtin,
            left,
            outer,
            valueSerde: options.value ?? "",
            name: options.name ?? "",
            storeName: options.storeName ?? "",
            windows: windows?.toMessage(),
          },
        }),
        [other],
      ),
    );
  }

  /**
   * Routes each record to the first branch whose predicate passes it
   * (`KStream.split`):
   *
   * ```ts
   * const branches = await orders
   *   .split({ name: "orders-" })
   *   .branch((k, v) => v.total > 100, { name: "big" })
   *   .branch((k, v) => v.country !== "NL", { name: "abroad" })
   *   .defaultBranch({ name: "rest" });
   * branches.get("orders-big")!.to("big-orders");
   * ```
   *
   * The streams are keyed as Kafka Streams keys them: the split's name
   * (default `KSTREAM-BRANCH-<n>`) followed by the branch's name or number.
   */
  split(options: NamedOptions = {}): BranchedKStream<K, V> {
    return new BranchedKStream(this, this.builder, options.name ?? "");
  }

  /**
   * Runs a processor (Kafka Streams' `process(ProcessorSupplier, Named,
   * stores)`): `supplier` makes one processor per task; its init(context)
   * may schedule punctuators and get the `stores` it names; process(record)
   * forwards zero or more records, with new keys, values, timestamps and
   * headers. The result is the stream of what it forwards (`key`/`value`:
   * their serdes; absent keeps the input's).
   */
  process<KR = unknown, VR = unknown>(supplier: ProcessorSupplier<K, V, KR, VR>, options: ProcessOptions = {}): KStream<KR, VR> {
    const f = callable(supplier, "process");
    const stores = storeNames(options.stores, "process");
    return new KStream(
      this.builder,
      this.call("process", [f], (input, [token]) => ({
        case: "process",
        value: { input, token: token!, name: options.name ?? "", stores, valuesOnly: false, keySerde: options.key ?? "", valueSerde: options.value ?? "" },
      })),
    );
  }

  /**
   * Runs a fixed-key processor (`processValues`): as process, but every
   * record it forwards keeps its input's key (a FixedKeyRecord has no
   * withKey), so the stream is not marked for repartitioning.
   */
  processValues<VR = unknown>(supplier: FixedKeyProcessorSupplier<K, V, VR>, options: ProcessOptions = {}): KStream<K, VR> {
    const f = callable(supplier, "processValues");
    const stores = storeNames(options.stores, "processValues");
    if (options.key !== undefined) {
      throw new TypeError("processValues: the keys are the input's; key is not an option (use process to change keys)");
    }
    return new KStream(
      this.builder,
      this.call("processValues", [f], (input, [token]) => ({
        case: "process",
        value: { input, token: token!, name: options.name ?? "", stores, valuesOnly: true, keySerde: "", valueSerde: options.value ?? "" },
      })),
    );
  }

  /**
   * Writes the records to `topic` (`Produced.with(key, value)`); terminal.
   * The promise settles when the engine has answered (awaiting it is optional).
   */
  to(topic: string | TopicNameExtractor, options: ToOptions = {}): Promise<void> {
    const fns: AnyFunction[] = [];
    if (typeof topic === "function") {
      fns.push(callable(topic, "to"));
    }
    if (options.partitioner !== undefined) {
      fns.push(callable(options.partitioner, "to"));
    }
    const extracts = typeof topic === "function";
    return this.call("to", fns, (input, tokens) => ({
      case: "to",
      value: {
        input,
        topic: extracts ? "" : topic,
        keySerde: options.key ?? "",
        valueSerde: options.value ?? "",
        name: options.name ?? "",
        topicExtractorToken: extracts ? tokens[0]! : 0,
        partitionerToken: options.partitioner !== undefined ? tokens[extracts ? 1 : 0]! : 0,
      },
    })).handle as Promise<unknown> as Promise<void>;
  }
}

/** Options of KStream.repartition (`Repartitioned`). */
export interface RepartitionOptions extends NamedOptions {
  /** The repartition topic's partition count; absent (or 0): as many as the sub-topology writing it. */
  partitions?: number;
  /** `Repartitioned.withStreamPartitioner`: see {@link StreamPartitioner}. */
  partitioner?: StreamPartitioner;
}

/**
 * The branches of a `KStream.split` being made (Kafka Streams'
 * `BranchedKStream`): add them with `branch`, then end with `defaultBranch`
 * or `noDefaultBranch`, which build the split. Their promise settles with the
 * branches' streams by name, or rejects with the engine's error when the
 * split is refused (e.g. two branches of one name).
 */
export class BranchedKStream<K, V> {
  readonly #stream: KStream<K, V>;
  readonly #builder: Builder;
  readonly #name: string;
  readonly #predicates: AnyFunction[] = [];
  readonly #names: string[] = [];
  #done = false;

  /** @internal */
  constructor(stream: KStream<K, V>, builder: Builder, name: string) {
    this.#stream = stream;
    this.#builder = builder;
    this.#name = name;
  }

  /**
   * A branch for the records `predicate(key, value)` passes, of those no
   * earlier branch took; `name` is `Branched.as` (default: its number, from 1).
   */
  branch(predicate: (key: K, value: V) => unknown, options: NamedOptions = {}): this {
    this.#check();
    this.#predicates.push(callable(predicate, "split: a branch's predicate"));
    this.#names.push(options.name ?? "");
    return this;
  }

  /**
   * Ends the split with a branch for the records no predicate passed (named
   * `name`, default `0`); settles with every branch's stream.
   */
  defaultBranch(options: NamedOptions = {}): Promise<Map<string, KStream<K, V>>> {
    return this.#build(true, options.name ?? "");
  }

  /** Ends the split; records no predicate passed are dropped. Settles with every branch's stream. */
  noDefaultBranch(): Promise<Map<string, KStream<K, V>>> {
    return this.#build(false, "");
  }

  #check(): void {
    if (this.#done) {
      throw new TypeError("split: this split is built already; start another with KStream.split()");
    }
  }

  #build(defaultBranch: boolean, defaultName: string): Promise<Map<string, KStream<K, V>>> {
    this.#check();
    this.#done = true;
    const builder = this.#builder;
    const names = this.#names;
    return builder.buildBranches(
      "split",
      this.#stream,
      this.#predicates,
      (input, tokens) => ({
        case: "split",
        value: {
          input,
          name: this.#name,
          branches: tokens.map((t, i) => ({ predicateToken: t, name: names[i]! })),
          defaultBranch,
          defaultName,
        },
      }),
      (handles) => new Map(handles.map((h) => [h.node, new KStream<K, V>(builder, { handle: Promise.resolve(h), settled: Promise.resolve(h) })])),
    );
  }
}

/** What KGroupedStream and KGroupedTable share. */
abstract class Grouped<K> extends Node {
  /**
   * Counts the records (a grouped table: the rows) per key into a table of
   * `long` counts (bigints). Runs in the engine: it never crosses. A grouped
   * table's group whose rows all left keeps a count of 0.
   */
  count(options: AggregationOptions = {}): KTable<K, bigint> {
    const m = materialized(options.materialized, "count");
    return new KTable(
      this.builder,
      this.call("count", [], (input) => ({
        case: "count",
        value: { input, name: options.name ?? "", ...(m ? { materialized: m } : {}) },
      })),
    );
  }
}

/** A stream grouped by key, ready to aggregate (`KGroupedStream`). */
export class KGroupedStream<K, V> extends Grouped<K> {

  /**
   * Combines each key's values: `reducer(aggregate, value) -> aggregate`
   * (the first value of a key becomes its aggregate without a call), or a
   * built-in reducer that runs in the engine. A host reducer's calls come in
   * bundles folded here: one crossing per bundle, however hot a key.
   */
  reduce(reducer: ((aggregate: V, value: V) => MaybePromise<V>) | Reducer, options: AggregationOptions = {}): KTable<K, V> {
    return new KTable(this.builder, reduceCall(this, reducer, options));
  }

  /**
   * Folds each key's values into an aggregate: `initializer()` starts a
   * key's aggregate, `aggregator(key, value, aggregate) -> aggregate` adds a
   * value. `materialized.value` is the aggregate's serde (default: the
   * values').
   */
  aggregate<VA>(
    initializer: () => MaybePromise<VA>,
    aggregator: (key: K, value: V, aggregate: VA) => MaybePromise<VA>,
    options: AggregationOptions = {},
  ): KTable<K, VA> {
    const m = materialized(options.materialized, "aggregate");
    const fns = [callable(initializer, "aggregate"), callable(aggregator, "aggregate")];
    return new KTable(
      this.builder,
      this.call("aggregate", fns, (input, [init, agg]) => ({
        case: "aggregate",
        value: { input, initializerToken: init!, aggregatorToken: agg!, name: options.name ?? "", ...(m ? { materialized: m } : {}) },
      })),
    );
  }

  /**
   * Starts a cogroup (`KGroupedStream.cogroup`, KIP-150): several grouped
   * streams aggregated into one table, each record folded in by
   * `aggregator(key, value, aggregate)` of the stream it came from. Add more
   * with `CogroupedKStream.cogroup`, then `aggregate`. Adds no node.
   */
  cogroup<VA>(aggregator: (key: K, value: V, aggregate: VA) => MaybePromise<VA>): CogroupedKStream<K, VA> {
    const f = callable(aggregator, "cogroup");
    return new CogroupedKStream(
      this.builder,
      this.call("cogroup", [f], (input, [token]) => ({ case: "cogroup", value: { input, grouped: 0n, aggregatorToken: token! } })),
    );
  }

  /**
   * Aggregates per key and window (`KGroupedStream.windowedBy`): TimeWindows
   * (tumbling or hopping) and SlidingWindows give a TimeWindowedKStream,
   * SessionWindows a SessionWindowedKStream. Their count, reduce and
   * aggregate make a table keyed by `Windowed` keys. The engine refuses bad
   * windows naming the field and value (e.g. `size_ms 0`): the result's
   * `handle` rejects with it.
   */
  windowedBy(windows: SessionWindows): SessionWindowedKStream<K, V>;
  windowedBy(windows: TimeWindows | SlidingWindows): TimeWindowedKStream<K, V>;
  windowedBy(windows: TimeWindows | SlidingWindows | SessionWindows): TimeWindowedKStream<K, V> | SessionWindowedKStream<K, V> {
    if (!(windows instanceof TimeWindows || windows instanceof SlidingWindows || windows instanceof SessionWindows)) {
      throw new TypeError(`windowedBy: want TimeWindows, SlidingWindows or SessionWindows, not ${typeof windows === "object" && windows !== null ? (windows as object).constructor.name : typeof windows}`);
    }
    const w = windows.toWindows();
    const outcome = this.call("windowedBy", [], (input) => ({ case: "windowedBy", value: { input, windows: w } }));
    return windows instanceof SessionWindows ? new SessionWindowedKStream(this.builder, outcome) : new TimeWindowedKStream(this.builder, outcome);
  }
}

/**
 * Grouped streams aggregated into one table, each with its own aggregator
 * (`CogroupedKStream`, KIP-150). Every record updates its key's one
 * aggregate, in one store, and the table forwards one update per record. The
 * grouped streams share their key type and are co-partitioned; one whose key
 * changed upstream is repartitioned first (through its `groupByKey({ name })`
 * topic, else `<store>-repartition`). VA is the aggregate's type.
 *
 * As in Kafka Streams a cogroup is one object: `cogroup` adds to it, and
 * every aggregation of it sees every grouped stream added so far.
 */
export class CogroupedKStream<K, VA> extends Node {
  /** Adds `grouped` with its `aggregator(key, value, aggregate)` (`CogroupedKStream.cogroup`). Adds no node. */
  cogroup<V>(grouped: KGroupedStream<K, V>, aggregator: (key: K, value: V, aggregate: VA) => MaybePromise<VA>): CogroupedKStream<K, VA> {
    if (!(grouped instanceof KGroupedStream)) {
      throw new TypeError(`cogroup: want a KGroupedStream, not ${grouped === null ? "null" : typeof grouped}`);
    }
    const f = callable(aggregator, "cogroup");
    return new CogroupedKStream(
      this.builder,
      this.builder.build(
        "cogroup",
        this,
        [f],
        (input, [token], [groupedId]) => ({ case: "cogroup", value: { input, grouped: groupedId!, aggregatorToken: token! } }),
        [grouped],
      ),
    );
  }

  /**
   * The cogroup's table: `initializer()` starts a key's aggregate, and each
   * record is folded in by its own stream's aggregator. `materialized.value`
   * is the aggregate's serde (default: the first grouped stream's values').
   * `name` names the nodes `<name>-cogroup-agg-<i>` and `<name>-cogroup-merge`.
   */
  aggregate(initializer: () => MaybePromise<VA>, options: AggregationOptions = {}): KTable<K, VA> {
    return new KTable(this.builder, cogroupAggregateCall(this, initializer, undefined, options));
  }

  /** Aggregates the cogroup per key and window (`CogroupedKStream.windowedBy`); every window update is forwarded. */
  windowedBy(windows: SessionWindows): SessionWindowedCogroupedKStream<K, VA>;
  windowedBy(windows: TimeWindows | SlidingWindows): TimeWindowedCogroupedKStream<K, VA>;
  windowedBy(windows: TimeWindows | SlidingWindows | SessionWindows): TimeWindowedCogroupedKStream<K, VA> | SessionWindowedCogroupedKStream<K, VA> {
    if (!(windows instanceof TimeWindows || windows instanceof SlidingWindows || windows instanceof SessionWindows)) {
      throw new TypeError(`windowedBy: want TimeWindows, SlidingWindows or SessionWindows, not ${typeof windows === "object" && windows !== null ? (windows as object).constructor.name : typeof windows}`);
    }
    const w = windows.toWindows();
    const outcome = this.call("windowedBy", [], (input) => ({ case: "windowedBy", value: { input, windows: w } }));
    return windows instanceof SessionWindows ? new SessionWindowedCogroupedKStream(this.builder, outcome) : new TimeWindowedCogroupedKStream(this.builder, outcome);
  }
}

/** A cogroup windowed by time or sliding windows (`TimeWindowedCogroupedKStream`). */
export class TimeWindowedCogroupedKStream<K, VA> extends Node {
  /** `initializer()` starts each window's aggregate; each record is folded in by its own stream's aggregator. */
  aggregate(initializer: () => MaybePromise<VA>, options: AggregationOptions = {}): KTable<Windowed<K>, VA> {
    return new KTable(this.builder, cogroupAggregateCall(this, initializer, undefined, options));
  }
}

/** A cogroup windowed by sessions (`SessionWindowedCogroupedKStream`). */
export class SessionWindowedCogroupedKStream<K, VA> extends Node {
  /**
   * `initializer()` starts each session's aggregate, each record is folded in
   * by its own stream's aggregator, and `merger(key, aggregate1, aggregate2)`
   * merges two sessions a record bridges.
   */
  aggregate(
    initializer: () => MaybePromise<VA>,
    merger: (key: K, aggregate1: VA, aggregate2: VA) => MaybePromise<VA>,
    options: AggregationOptions = {},
  ): KTable<Windowed<K>, VA> {
    return new KTable(this.builder, cogroupAggregateCall(this, initializer, merger, options));
  }
}

/** The Build call of a cogroup's aggregate (its aggregators came with cogroup). */
function cogroupAggregateCall(node: Node, initializer: () => unknown, merger: AnyFunction | undefined, options: AggregationOptions) {
  const m = materialized(options.materialized, "aggregate");
  const fns = [callable(initializer, "aggregate: the initializer")];
  if (merger !== undefined) {
    fns.push(callable(merger, "aggregate: the merger"));
  }
  return node.callFor("aggregate", fns, (input, [init, merge]) => ({
    case: "aggregate",
    value: { input, initializerToken: init!, mergerToken: merge ?? 0, name: options.name ?? "", ...(m ? { materialized: m } : {}) },
  }));
}

/** A Build call of reduce on a grouped or windowed stream: a host reducer or a built-in. */
function reduceCall(node: Node, reducer: ((aggregate: never, value: never) => unknown) | Reducer, options: AggregationOptions) {
  const m = materialized(options.materialized, "reduce");
  const builtin = typeof reducer === "string" ? BUILTINS[reducer] : undefined;
  if (typeof reducer === "string" && builtin === undefined) {
    throw new TypeError(`reduce: unknown reducer ${JSON.stringify(reducer)} (want a function, or one of ${Object.keys(BUILTINS).join(", ")})`);
  }
  const fns = builtin === undefined ? [callable(reducer, "reduce")] : [];
  return node.callFor("reduce", fns, (input, tokens) => ({
    case: "reduce",
    value: { input, token: tokens[0] ?? 0, builtin: builtin ?? ReducerEnum.UNSPECIFIED, name: options.name ?? "", ...(m ? { materialized: m } : {}) },
  }));
}

/** The Build call of emitStrategy on a windowed stream. */
function emitStrategyCall(node: Node, strategy: EmitStrategy) {
  if (!(strategy instanceof EmitStrategy)) {
    throw new TypeError(`emitStrategy: want an EmitStrategy, not ${strategy === null ? "null" : typeof strategy}`);
  }
  return node.callFor("emitStrategy", [], (input) => ({ case: "emitStrategy", value: { input, strategy: strategy.toProto() } }));
}

/** What TimeWindowedKStream and SessionWindowedKStream share: count and reduce per key and window. */
abstract class WindowedStream<K, V> extends Node {
  /** Counts the records per key and window into a table of `long` counts (bigints). Runs in the engine. */
  count(options: AggregationOptions = {}): KTable<Windowed<K>, bigint> {
    const m = materialized(options.materialized, "count");
    return new KTable(
      this.builder,
      this.call("count", [], (input) => ({ case: "count", value: { input, name: options.name ?? "", ...(m ? { materialized: m } : {}) } })),
    );
  }

  /**
   * `reducer(aggregate, value) -> aggregate` per key and window (sessions:
   * merging two sessions reduces their aggregates), or a built-in reducer
   * that runs in the engine.
   */
  reduce(reducer: ((aggregate: V, value: V) => MaybePromise<V>) | Reducer, options: AggregationOptions = {}): KTable<Windowed<K>, V> {
    return new KTable(this.builder, reduceCall(this, reducer, options));
  }
}

/**
 * A grouped stream windowed by time or sliding windows
 * (`TimeWindowedKStream`): its aggregations keep one aggregate per key and
 * window, in a table whose keys are `Windowed` (serde
 * `windowed(<key>,<size>)`). A record later than its window's end plus grace
 * (in stream time: the largest timestamp its partition has seen) is dropped
 * and counted in App.droppedRecords. Host functions fold per bundle, all
 * windows of a key at once.
 */
export class TimeWindowedKStream<K, V> extends WindowedStream<K, V> {
  /**
   * When this windowed stream's count, reduce and aggregate forward their
   * results (`emitStrategy`, KIP-825): `EmitStrategy.onWindowClose()` only
   * each window's final result, once it closes; `EmitStrategy.onWindowUpdate()`
   * (the default) every update. Adds no node.
   */
  emitStrategy(strategy: EmitStrategy): TimeWindowedKStream<K, V> {
    return new TimeWindowedKStream(this.builder, emitStrategyCall(this, strategy));
  }
  /**
   * `initializer()` starts each window's aggregate, `aggregator(key, value,
   * aggregate) -> aggregate` adds a value (the key is the grouped key).
   * `materialized.value` is the aggregate's serde (default: the values').
   */
  aggregate<VA>(
    initializer: () => MaybePromise<VA>,
    aggregator: (key: K, value: V, aggregate: VA) => MaybePromise<VA>,
    options: AggregationOptions = {},
  ): KTable<Windowed<K>, VA> {
    const m = materialized(options.materialized, "aggregate");
    const fns = [callable(initializer, "aggregate: the initializer"), callable(aggregator, "aggregate: the aggregator")];
    return new KTable(
      this.builder,
      this.call("aggregate", fns, (input, [init, agg]) => ({
        case: "aggregate",
        value: { input, initializerToken: init!, aggregatorToken: agg!, name: options.name ?? "", ...(m ? { materialized: m } : {}) },
      })),
    );
  }
}

/**
 * A grouped stream windowed by sessions (`SessionWindowedKStream`): one
 * aggregate per key and session, in a table whose keys are `Windowed`
 * (serde `session-windowed(<key>)`). A record that bridges sessions merges
 * them: the merged session's update comes out, and the sessions it replaces
 * are deleted (tombstones).
 */
export class SessionWindowedKStream<K, V> extends WindowedStream<K, V> {
  /**
   * When this windowed stream's count, reduce and aggregate forward their
   * results (`emitStrategy`, KIP-825): `EmitStrategy.onWindowClose()` only
   * each window's final result, once it closes; `EmitStrategy.onWindowUpdate()`
   * (the default) every update. Adds no node.
   */
  emitStrategy(strategy: EmitStrategy): SessionWindowedKStream<K, V> {
    return new SessionWindowedKStream(this.builder, emitStrategyCall(this, strategy));
  }
  /**
   * `initializer()` and `aggregator(key, value, aggregate)` as for time
   * windows; `merger(key, aggregate1, aggregate2) -> aggregate` merges two
   * sessions a record bridges.
   */
  aggregate<VA>(
    initializer: () => MaybePromise<VA>,
    aggregator: (key: K, value: V, aggregate: VA) => MaybePromise<VA>,
    merger: (key: K, aggregate1: VA, aggregate2: VA) => MaybePromise<VA>,
    options: AggregationOptions = {},
  ): KTable<Windowed<K>, VA> {
    const m = materialized(options.materialized, "aggregate");
    const fns = [
      callable(initializer, "aggregate: the initializer"),
      callable(aggregator, "aggregate: the aggregator"),
      callable(merger, "aggregate: the merger"),
    ];
    return new KTable(
      this.builder,
      this.call("aggregate", fns, (input, [init, agg, merge]) => ({
        case: "aggregate",
        value: {
          input,
          initializerToken: init!,
          aggregatorToken: agg!,
          mergerToken: merge!,
          name: options.name ?? "",
          ...(m ? { materialized: m } : {}),
        },
      })),
    );
  }
}

const BUILTINS: Record<Reducer, ReducerEnum> = {
  sum: ReducerEnum.SUM,
  min: ReducerEnum.MIN,
  max: ReducerEnum.MAX,
  latest: ReducerEnum.LATEST,
};

/** Options of App.table (`StreamsBuilder.table`). */
export interface TableOptions<KS extends SerdeName | TopicSerde, VS extends SerdeName | TopicSerde> extends NamedOptions {
  /** The topic's key serde (default `bytes`). */
  key?: KS;
  /** The topic's value serde (default `bytes`). */
  value?: VS;
  /**
   * `Consumed.withOffsetResetPolicy`: where a partition with no committed
   * offset starts (default: the config's `autoOffsetReset`).
   */
  offsetReset?: OffsetReset;
  /** `Consumed.withTimestampExtractor`, as App.stream's `timestampExtractor`. */
  timestampExtractor?: TimestampExtractor<SerdeType<KS>, SerdeType<VS>> | BuiltinTimestampExtractor;
  /**
   * The table's store: a name (which makes the table queryable), or a
   * Materialized. Absent: the store is named `<topic>-STATE-STORE-<n>` and
   * exists only when an operator downstream needs it.
   */
  materialized?: string | Materialized;
}

/** App.table's Build call. @internal */
export function table<KS extends SerdeName | TopicSerde, VS extends SerdeName | TopicSerde>(
  builder: Builder,
  topic: string,
  options: TableOptions<KS, VS>,
): KTable<SerdeType<KS>, SerdeType<VS>> {
  if (typeof topic !== "string") {
    throw new TypeError(`table: the topic must be a string, not ${typeof topic}`);
  }
  const m = materialized(options.materialized, "table");
  const ex = extractorOf("table", options.timestampExtractor);
  return new KTable(
    builder,
    builder.build("table", null, ex.functions, (_, tokens) => ({
      case: "table",
      value: {
        topic,
        keySerde: options.key ?? "",
        valueSerde: options.value ?? "",
        name: options.name ?? "",
        offsetReset: options.offsetReset ?? "",
        ...ex.op(tokens),
        ...(m ? { materialized: m } : {}),
      },
    })),
  );
}

/**
 * A changelog table: the latest value per key (`KTable`).
 *
 * A table's records are updates: a null value deletes its key (a
 * tombstone). Functions never see a tombstone (filter and mapValues pass
 * one on as one), but `toStream()` forwards them as records with a null
 * value.
 */
export class KTable<K, V> extends Node {
  /**
   * The name of the store the table is kept in (generated, as Kafka Streams
   * does, when not given with `materialized`), or undefined when it has
   * none. Rejects as `handle` does when the call that made the table was
   * refused.
   */
  get store(): Promise<string | undefined> {
    return this.handle.then((h) => h.store || undefined);
  }

  /**
   * The table's store, for interactive queries while the app runs
   * (`app.store(await table.store)`), typed with the table's key and value
   * types. Rejects with a TypeError when the table is kept in no store.
   */
  async query(options: StoreOptions = {}): Promise<KeyValueStore<K, V>> {
    const h = await this.handle;
    if (!h.store) {
      throw new TypeError(`query: table ${h.node} (handle ${h.id}) is kept in no store, so it cannot be queried`);
    }
    if (isWindowedSerde(h.keySerde)) {
      throw new TypeError(`query: table ${h.node} (handle ${h.id}) is a windowed aggregation's table: query it with windowStore()`);
    }
    return this.builder.store<K, V>(h.store, options);
  }

  /**
   * A windowed aggregation's window (or session) store, for interactive
   * queries while the app runs (`app.windowStore(await table.store)`).
   * Rejects with a TypeError when the table is kept in no store.
   */
  async windowStore(): Promise<WindowStore<K extends Windowed<infer KI> ? KI : K, V>> {
    const h = await this.handle;
    if (!h.store) {
      throw new TypeError(`windowStore: table ${h.node} (handle ${h.id}) is kept in no store, so it cannot be queried`);
    }
    return this.builder.windowStore(h.store);
  }

  /**
   * Holds back the table's updates (`KTable.suppress`): with
   * `Suppressed.untilWindowCloses()` (a windowed aggregation's table), each
   * window's final result comes out once, when its partition's stream time
   * passes the window's end plus grace; with `Suppressed.untilTimeLimit(ms)`,
   * each key's latest update comes out once stream time reaches its first
   * held update's time plus the limit, or earlier when a bounded buffer is
   * full. Stream time moves only with records: a partition that receives
   * none keeps its updates held, and they come when a later record moves it.
   */
  suppress(suppressed: Suppressed): KTable<K, V> {
    if (!(suppressed instanceof Suppressed)) {
      throw new TypeError(`suppress: want a Suppressed, not ${suppressed === null ? "null" : typeof suppressed}`);
    }
    return new KTable(
      this.builder,
      this.call("suppress", [], (input) => ({ case: "suppress", value: { input, name: suppressed.name, ...suppressed.toOp() } })),
    );
  }

  /**
   * Keeps the rows for which `predicate(key, value)` is truthy; a row that
   * does not pass is deleted, so the result forwards a tombstone for it
   * (Kafka Streams' KTableFilter). `materialized` keeps the result in a
   * store (queryable when named).
   */
  filter(predicate: (key: K, value: V) => unknown, options: TableOperatorOptions = {}): KTable<K, V> {
    return this.#filter("filter", predicate, options);
  }

  /** Deletes the rows for which `predicate(key, value)` is truthy (a tombstone for each). */
  filterNot(predicate: (key: K, value: V) => unknown, options: TableOperatorOptions = {}): KTable<K, V> {
    return this.#filter("filterNot", predicate, options);
  }

  #filter(method: "filter" | "filterNot", predicate: (key: K, value: V) => unknown, options: TableOperatorOptions): KTable<K, V> {
    const f = callable(predicate, method);
    const m = materialized(options.materialized, method);
    return new KTable(
      this.builder,
      this.call(method, [f], (input, [token]) => ({
        case: method,
        value: { input, token: token!, name: options.name ?? "", ...(m ? { materialized: m } : {}) },
      })),
    );
  }

  /** `fn(value) -> new value` for each row (never called for a tombstone, which passes on as one). */
  mapValues<VR>(fn: (value: V) => MaybePromise<VR>, options: TableValueOptions = {}): KTable<K, VR> {
    const f = callable(fn, "mapValues");
    const m = materialized(options.materialized, "mapValues");
    return new KTable(
      this.builder,
      this.call("mapValues", [f], (input, [token]) => ({
        case: "mapValues",
        value: { input, token: token!, valueSerde: options.value ?? "", name: options.name ?? "", ...(m ? { materialized: m } : {}) },
      })),
    );
  }

  /**
   * Transforms each row's value with a value transformer
   * (`KTable.transformValues`): `supplier` makes one per task, and
   * transform(key, value) returns the new value, a tombstone's null
   * included. `stores` names the stores (added by addStateStore) it may use
   * through the context init gets. When an operator downstream needs old
   * values (groupBy), the old value is transformed too, unless
   * `materialized` names a store: the result is then kept there
   * (queryable) and the old values are read from it. The node is
   * `KTABLE-TRANSFORMVALUES-<n>` unless `name` names it. A join of a result
   * that is not materialized is refused (Kafka Streams would run the
   * transformer on each lookup).
   */
  transformValues<VR = unknown>(supplier: ValueTransformerWithKeySupplier<K, V, VR>, options: TransformValuesOptions = {}): KTable<K, VR> {
    callable(supplier, "transformValues");
    const stores = storeNames(options.stores, "transformValues");
    const m = materialized(options.materialized, "transformValues");
    return new KTable(
      this.builder,
      this.call("transformValues", [transformerProcessor(supplier)], (input, [token]) => ({
        case: "transformValues",
        value: { input, token: token!, name: options.name ?? "", stores, valueSerde: options.value ?? "", ...(m ? { materialized: m } : {}) },
      })),
    );
  }

  /**
   * Regroups the table: `fn(key, value) -> [new key, new value]`. Each
   * update removes the row's old pair from its group and then adds the new
   * one (Kafka Streams' KTableRepartitionMap), so aggregations of the result
   * take an adder and a subtractor. A pair with a null key or value is
   * skipped, and so is a row for which `fn` returns no pair (null or
   * undefined); the other side of the change still applies (a row that
   * maps to nothing any more is removed from its old group). `key`/`value`
   * are the new pairs' serdes; `name` names the repartition topic
   * (`<application.id>-<name>-repartition`).
   */
  groupBy<KR, VR>(
    fn: (key: K, value: V) => MaybePromise<readonly [KR, VR] | null | undefined>,
    options: KeyValueOptions = {},
  ): KGroupedTable<KR, VR> {
    const f = pairOrSkip(callable(fn, "groupBy"));
    return new KGroupedTable(
      this.builder,
      this.call("groupBy", [f], (input, [token]) => ({
        case: "groupBy",
        value: { input, token: token!, keySerde: options.key ?? "", valueSerde: options.value ?? "", name: options.name ?? "" },
      })),
    );
  }

  /**
   * Joins each row with the row of `other` whose key `foreignKey(value)`
   * names (`KTable.join(other, foreignKeyExtractor, joiner)`, KIP-213):
   * `joiner(value, otherValue) -> new value`. The result is keyed as this
   * table and updated when either side changes; a row whose foreign key is
   * null, or names no row of `other`, has no result. The tables need not be
   * co-partitioned: subscriptions travel through the internal topics
   * `KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-<n>-topic` and
   * `-RESPONSE-<n>-topic`. `value` is the joined values' serde; `name` is
   * `TableJoined.as` (it names every node, store and topic of the join);
   * `materialized` keeps the result in a store.
   */
  foreignKeyJoin<KO, VO, VR>(
    other: KTable<KO, VO>,
    foreignKey: (value: V) => MaybePromise<KO | null | undefined>,
    joiner: ((value: V, otherValue: VO) => MaybePromise<VR>) | BuiltinJoiner,
    options: TableValueOptions = {},
  ): KTable<K, VR> {
    return this.#foreignKeyJoin("foreignKeyJoin", other, foreignKey, joiner, false, options);
  }

  /**
   * {@link foreignKeyJoin} that keeps every row: `joiner` gets null when the
   * foreign key is null or names no row of `other`
   * (`KTable.leftJoin(other, foreignKeyExtractor, joiner)`).
   */
  leftForeignKeyJoin<KO, VO, VR>(
    other: KTable<KO, VO>,
    foreignKey: (value: V) => MaybePromise<KO | null | undefined>,
    joiner: ((value: V, otherValue: VO | null) => MaybePromise<VR>) | BuiltinJoiner,
    options: TableValueOptions = {},
  ): KTable<K, VR> {
    return this.#foreignKeyJoin("leftForeignKeyJoin", other, foreignKey, joiner, true, options);
  }

  #foreignKeyJoin<VR>(
    method: string,
    other: KTable<unknown, unknown>,
    foreignKey: unknown,
    joiner: unknown,
    left: boolean,
    options: TableValueOptions,
  ): KTable<K, VR> {
    if (!(other instanceof KTable)) {
      throw new TypeError(`${method}: want a KTable to join with, not ${other === null ? "null" : typeof other}`);
    }
    const fk = callable(foreignKey, method);
    const j = joinerOf(joiner, method);
    const m = materialized(options.materialized, method);
    return new KTable(
      this.builder,
      this.builder.build(
        method,
        this,
        [fk, ...j.fns],
        (input, [fkToken, joinerToken], [otherId]) => ({
          case: "join",
          value: {
            input,
            table: otherId!,
            foreignKeyToken: fkToken!,
            joinerToken: joinerToken ?? 0,
            builtinJoiner: j.builtin,
            left,
            valueSerde: options.value ?? "",
            name: options.name ?? "",
            ...(m ? { materialized: m } : {}),
          },
        }),
        [other],
      ),
    );
  }

  /**
   * The table's changes as a stream; a deleted row comes as a record with a
   * null value. With `mapper`, `mapper(key, value) -> new key` keys the
   * stream (`KTable.toStream(KeyValueMapper)`): as in Kafka Streams, a
   * toStream node (named `options.name`) then a selectKey node, so a
   * grouping downstream repartitions; `options.key` is the new keys' serde.
   */
  toStream(options?: NamedOptions): KStream<K, V>;
  toStream<KR>(mapper: (key: K, value: V) => MaybePromise<KR>, options?: KeyOptions): KStream<KR, V>;
  toStream<KR>(
    mapperOrOptions?: NamedOptions | ((key: K, value: V) => MaybePromise<KR>),
    maybeOptions: KeyOptions = {},
  ): KStream<K, V> | KStream<KR, V> {
    const mapper = typeof mapperOrOptions === "function" ? mapperOrOptions : undefined;
    const options: KeyOptions = typeof mapperOrOptions === "function" ? maybeOptions : (mapperOrOptions ?? {});
    if (mapper === undefined && options.key !== undefined) {
      throw new TypeError(`toStream: key names the serde of a mapper's keys, but no mapper was given`);
    }
    const f = mapper === undefined ? undefined : callable(mapper, "toStream");
    const stream = new KStream<K, V>(
      this.builder,
      this.call("toStream", [], (input) => ({ case: "toStream", value: { input, name: options.name ?? "" } })),
    );
    if (f === undefined) {
      return stream;
    }
    return stream.selectKey(f as (key: K, value: V) => MaybePromise<KR>, options.key === undefined ? {} : { key: options.key });
  }

  /**
   * Joins the table with `other` on the key (`KTable.join(KTable)`): the
   * result holds `joiner(value, otherValue)` for each key both tables
   * hold, updated whenever either side changes; deleting either side's row
   * deletes the joined one. Both tables must be co-partitioned (one
   * partition count) and kept in a store (a table read from a topic always
   * is; a filtered or mapped one needs `materialized`). `value` is the
   * joined values' serde (default: this table's); `materialized` keeps the
   * result in a store (queryable when named); `name` names the join's
   * nodes (`<name>-join-this`, `<name>-join-other`, and `name` for the merge).
   */
  join<VO, VR>(other: KTable<K, VO>, joiner: ((value: V, otherValue: VO) => MaybePromise<VR>) | BuiltinJoiner, options: TableValueOptions = {}): KTable<K, VR> {
    return this.#tableJoin("join", other, joiner, options);
  }

  /**
   * {@link join} that keeps every row of this table: `joiner` gets null for
   * a key `other` does not hold (`KTable.leftJoin(KTable)`).
   */
  leftJoin<VO, VR>(
    other: KTable<K, VO>,
    joiner: ((value: V, otherValue: VO | null) => MaybePromise<VR>) | BuiltinJoiner,
    options: TableValueOptions = {},
  ): KTable<K, VR> {
    return this.#tableJoin("leftJoin", other, joiner, options);
  }

  /**
   * {@link join} that keeps every row of either table: `joiner` gets null
   * for the side that does not hold the key (`KTable.outerJoin(KTable)`).
   */
  outerJoin<VO, VR>(
    other: KTable<K, VO>,
    joiner: ((value: V | null, otherValue: VO | null) => MaybePromise<VR>) | BuiltinJoiner,
    options: TableValueOptions = {},
  ): KTable<K, VR> {
    return this.#tableJoin("outerJoin", other, joiner, options);
  }

  #tableJoin<VR>(method: "join" | "leftJoin" | "outerJoin", other: KTable<K, unknown>, joiner: unknown, options: TableValueOptions): KTable<K, VR> {
    if (!(other instanceof KTable)) {
      throw new TypeError(`${method}: want a KTable to join with, not ${other === null ? "null" : (other as object).constructor?.name ?? typeof other}`);
    }
    const j = joinerOf(joiner, method);
    const m = materialized(options.materialized, method);
    return new KTable(
      this.builder,
      this.builder.build(
        method,
        this,
        j.fns,
        (input, [token], [otherId]) => ({
          case: "join",
          value: {
            input,
            table: otherId!,
            joinerToken: token ?? 0,
            builtinJoiner: j.builtin,
            left: method === "leftJoin",
            outer: method === "outerJoin",
            valueSerde: options.value ?? "",
            name: options.name ?? "",
            ...(m ? { materialized: m } : {}),
          },
        }),
        [other],
      ),
    );
  }
}

/**
 * A table regrouped by `KTable.groupBy`, ready to aggregate
 * (`KGroupedTable`). Each update of the source table removes its old value
 * from its group (the subtractor) and adds its new one (the adder), as Kafka
 * Streams' KTableAggregate and KTableReduce do. Host adders and subtractors
 * run in bundles folded here: one crossing per bundle.
 */
export class KGroupedTable<K, V> extends Grouped<K> {

  /**
   * Combines each group's values: `adder(aggregate, value) -> aggregate`
   * adds a new value, `subtractor(aggregate, oldValue) -> aggregate` removes
   * one the table replaced or deleted (returning null leaves the group with
   * no aggregate); a group's first value becomes its aggregate without a
   * call. The built-in `"sum"` (`long`/`double` values) runs in the engine
   * and brings its own subtractor; the other built-ins cannot remove values.
   */
  reduce(adder: "sum", options?: AggregationOptions): KTable<K, V>;
  reduce(
    adder: (aggregate: V, value: V) => MaybePromise<V>,
    subtractor: (aggregate: V, oldValue: V) => MaybePromise<V | null>,
    options?: AggregationOptions,
  ): KTable<K, V>;
  reduce(
    adder: ((aggregate: V, value: V) => MaybePromise<V>) | Reducer,
    subtractor?: ((aggregate: V, oldValue: V) => MaybePromise<V | null>) | AggregationOptions,
    options: AggregationOptions = {},
  ): KTable<K, V> {
    let builtin = ReducerEnum.UNSPECIFIED;
    if (typeof adder === "string") {
      const b = BUILTINS[adder];
      if (b === undefined) {
        throw new TypeError(`reduce: unknown reducer ${JSON.stringify(adder)} (want an adder and a subtractor, or "sum")`);
      }
      builtin = b;
      if (typeof subtractor !== "function") {
        options = subtractor ?? {};
        subtractor = undefined;
      }
    } else {
      callable(adder, "reduce");
    }
    // A missing subtractor (or one beside a built-in) goes to the engine as
    // given, and the engine refuses it with its reason.
    const add = typeof adder === "string" ? undefined : adder;
    const sub = subtractor === undefined ? undefined : callable(subtractor, "reduce");
    const fns = [add, sub].filter((f): f is AnyFunction => f !== undefined);
    const m = materialized(options.materialized, "reduce");
    const name = options.name ?? "";
    return new KTable(
      this.builder,
      this.call("reduce", fns, (input, tokens) => ({
        case: "reduce",
        value: {
          input,
          token: add === undefined ? 0 : tokens[0]!,
          subtractorToken: sub === undefined ? 0 : tokens[fns.length - 1]!,
          builtin,
          name,
          ...(m ? { materialized: m } : {}),
        },
      })),
    );
  }

  /**
   * Folds each group's values into an aggregate: `initializer()` starts a
   * group's aggregate, `adder(key, value, aggregate) -> aggregate` adds a new
   * value and `subtractor(key, oldValue, aggregate) -> aggregate` removes one
   * (returning null leaves the group with no aggregate). `materialized.value`
   * is the aggregate's serde (default: the grouped values').
   */
  aggregate<VA>(
    initializer: () => MaybePromise<VA>,
    adder: (key: K, value: V, aggregate: VA) => MaybePromise<VA>,
    subtractor: (key: K, oldValue: V, aggregate: VA) => MaybePromise<VA | null>,
    options: AggregationOptions = {},
  ): KTable<K, VA> {
    const m = materialized(options.materialized, "aggregate");
    const fns = [
      callable(initializer, "aggregate: the initializer"),
      callable(adder, "aggregate: the adder"),
      callable(subtractor, "aggregate: the subtractor"),
    ];
    return new KTable(
      this.builder,
      this.call("aggregate", fns, (input, [init, add, sub]) => ({
        case: "aggregate",
        value: { input, initializerToken: init!, aggregatorToken: add!, subtractorToken: sub!, name: options.name ?? "", ...(m ? { materialized: m } : {}) },
      })),
    );
  }
}

/** Options of App.globalTable (`StreamsBuilder.globalTable`). */
export interface GlobalTableOptions<KS extends SerdeName | TopicSerde, VS extends SerdeName | TopicSerde> extends NamedOptions {
  /** The topic's key serde (default `bytes`). */
  key?: KS;
  /** The topic's value serde (default `bytes`). */
  value?: VS;
  /**
   * The store: a name, or a Materialized (serdes only). Absent: it is named
   * `<topic>-STATE-STORE-<n>`. A global table's store is always queryable.
   */
  materialized?: string | Materialized;
}

/** App.globalTable's Build call. @internal */
export function globalTable<KS extends SerdeName | TopicSerde, VS extends SerdeName | TopicSerde>(
  builder: Builder,
  topic: string,
  options: GlobalTableOptions<KS, VS>,
): GlobalKTable<SerdeType<KS>, SerdeType<VS>> {
  if (typeof topic !== "string") {
    throw new TypeError(`globalTable: the topic must be a string, not ${typeof topic}`);
  }
  const m = materialized(options.materialized, "globalTable");
  return new GlobalKTable(
    builder,
    builder.build("globalTable", null, [], () => ({
      case: "globalTable",
      value: { topic, keySerde: options.key ?? "", valueSerde: options.value ?? "", name: options.name ?? "", ...(m ? { materialized: m } : {}) },
    })),
  );
}

/**
 * A table of every partition of its topic, kept whole by every engine
 * instance (`GlobalKTable`), from App.globalTable. A stream joins it
 * through a key mapper (`stream.join(globalTable, keyMapper, joiner)`),
 * with no co-partitioning; it is restored before any record is processed,
 * and then follows its topic (the store's changelog).
 */
export class GlobalKTable<K, V> extends Node {
  /** The name of the global table's store. Rejects as `handle` does. */
  get store(): Promise<string> {
    return this.handle.then((h) => h.store);
  }

  /** The global table's store, for interactive queries while the app runs. */
  async query(options: StoreOptions = {}): Promise<KeyValueStore<K, V>> {
    const h = await this.handle;
    return this.builder.store<K, V>(h.store, options);
  }
}

/** KStream.join / leftJoin of a GlobalKTable. */
function joinGlobal<K, VR>(
  stream: Node,
  builder: Builder,
  method: string,
  global: GlobalKTable<unknown, unknown>,
  keyMapper: unknown,
  joiner: unknown,
  left: boolean,
  options: ValueOptions,
): KStream<K, VR> {
  const m = callable(keyMapper, `${method} (key mapper)`);
  const j = joinerOf(joiner, method);
  return new KStream(
    builder,
    builder.build(
      method,
      stream,
      [m, ...j.fns],
      (input, [mapper, token], [globalId]) => ({
        case: "join",
        value: {
          input,
          table: globalId!,
          keyMapperToken: mapper!,
          joinerToken: token ?? 0,
          builtinJoiner: j.builtin,
          left,
          valueSerde: options.value ?? "",
          name: options.name ?? "",
        },
      }),
      [global],
    ),
  );
}

/**
 * A source's TimestampExtractor (`Consumed.withTimestampExtractor`): the
 * record's timestamp in epoch ms; `partitionTime` is the largest timestamp
 * extracted from the record's partition so far (-1 before any). A negative
 * answer drops the record; a throw stops the application naming the record.
 */
export type TimestampExtractor<K, V> = (key: K, value: V, metadata: RecordMetadata, partitionTime: number) => number | bigint | PromiseLike<number | bigint>;

/** Kafka Streams' built-in timestamp extractors, by class name. */
export type BuiltinTimestampExtractor =
  | "FailOnInvalidTimestamp"
  | "LogAndSkipOnInvalidTimestamp"
  | "UsePartitionTimeOnInvalidTimestamp"
  | "WallclockTimestampExtractor";

/** A source's extractor option as functions to register and the op's field. @internal */
export function extractorOf(
  call: string,
  extractor: AnyFunction | string | undefined,
): { functions: AnyFunction[]; op: (tokens: readonly number[]) => { timestampExtractor?: { token: number; builtin: string } } } {
  if (extractor === undefined) {
    return { functions: [], op: () => ({}) };
  }
  if (typeof extractor === "string") {
    return { functions: [], op: () => ({ timestampExtractor: { token: 0, builtin: extractor } }) };
  }
  if (typeof extractor !== "function") {
    throw new TypeError(`${call}: timestampExtractor must be a function or a built-in extractor's name, not ${typeof extractor}`);
  }
  return { functions: [extractor], op: (tokens) => ({ timestampExtractor: { token: tokens[0]!, builtin: "" } }) };
}
