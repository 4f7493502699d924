/**
 * Interactive queries: read a table's key-value store while the app runs
 * (Kafka Streams' `ReadOnlyKeyValueStore`), or a windowed aggregation's
 * window or session store (`ReadOnlyWindowStore`, `ReadOnlySessionStore`).
 */

import { Buffer } from "node:buffer";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { PolystreamsError, typeName } from "./errors.js";
import type { QueryRequestSchema, QueryResponse } from "./gen/polystreams/v1alpha1/engine_pb.js";
import { decodeColumn, encode } from "./serde.js";
import { Windowed } from "./windows.js";

/** Entries asked for per Query call by default; longer answers are read page by page. */
export const DEFAULT_PAGE_SIZE = 10_000;
/** The most entries the engine answers in one Query call. */
export const MAX_PAGE_SIZE = 100_000;

/** Options of App.store. */
export interface StoreOptions {
  /**
   * Entries asked of the engine per Query call (default 10000, at most
   * 100000). An answer the engine truncates at this limit is continued with
   * the next page, so it bounds memory and the length of one call, not what
   * range(), prefix() and all() yield.
   */
  pageSize?: number;
  /**
   * Let standby copies answer (Kafka Streams'
   * `StoreQueryParameters.enableStaleStores()`): a key whose active instance
   * cannot answer is read from a standby, which may lag; the answer of
   * query() says so (`fromStandby`).
   */
  enableStaleStores?: boolean;
}

/** An instance's `application.server` (Kafka Streams' `HostInfo`). */
export interface HostInfo {
  host: string;
  port: number;
}

/**
 * Where a key of a store lives (Kafka Streams' `KeyQueryMetadata`):
 * `activeHost` is undefined while no instance holds the key's partition
 * (`NOT_AVAILABLE`, e.g. during a rebalance); `partition` is murmur2 of the
 * serialized key modulo the partitions of the store's source topic (-1 for
 * a global store).
 */
export interface KeyQueryMetadata {
  activeHost: HostInfo | undefined;
  standbyHosts: HostInfo[];
  partition: number;
}

/** One instance of the application (Kafka Streams' `StreamsMetadata`). */
export interface StreamsMetadata {
  hostInfo: HostInfo;
  stateStoreNames: string[];
  topicPartitions: [topic: string, partition: number][];
  standbyStateStoreNames: string[];
  standbyTopicPartitions: [topic: string, partition: number][];
}

/**
 * The answer of KeyValueStore.query (an IQv2 `KeyQuery` result): the value
 * (undefined when the store holds none), the timestamp of the record that
 * last wrote it, the key's partition, whether a standby answered, and the
 * instances that answered (their `application.server`).
 */
export interface KeyQueryResult<V> {
  value: V | undefined;
  timestamp: bigint | undefined;
  partition: number | undefined;
  fromStandby: boolean;
  servedBy: string[];
}

/** Bounds of KeyValueStore.range: both inclusive; an absent bound is open. */
export interface RangeOptions<K> {
  from?: K;
  to?: K;
}

/** The Query requests a store makes, without session and store. */
type Query = MessageInitShape<typeof QueryRequestSchema>["query"];

/** What a store needs of its App. Not part of the public API. */
export interface QueryTarget {
  /** Runs one Query for the store (session id filled in). */
  query(store: string, query: Query, limit: number, enableStaleStores?: boolean): Promise<QueryResponse>;
  /** The key serde of a store the app built, if known; and a setter for what the engine answers. */
  keySerde(store: string): string | undefined;
  learnKeySerde(store: string, serde: string): void;
}

/** One page of a query: the raw keys and the decoded entries. */
interface Page<K, V> {
  raw: Buffer[];
  entries: [K, V][];
  truncated: boolean;
  resp: QueryResponse;
}

/**
 * The entries of a range, prefix or all query: iterate with `for await`
 * (pages are read from the engine as you go, so a long answer never sits in
 * memory at once), or collect them with `toArray()`. Each iteration queries
 * the engine afresh. Errors (an unknown store, a query before the topology
 * runs) reject the first step of the iteration.
 */
export class Entries<K, V> implements AsyncIterable<[K, V]> {
  readonly #pages: () => AsyncGenerator<[K, V]>;

  /** @internal */
  constructor(pages: () => AsyncGenerator<[K, V]>) {
    this.#pages = pages;
  }

  [Symbol.asyncIterator](): AsyncIterator<[K, V]> {
    return this.#pages();
  }

  /** Every entry, in key order, as an array of `[key, value]`. */
  async toArray(): Promise<[K, V][]> {
    const out: [K, V][] = [];
    for await (const e of this) {
      out.push(e);
    }
    return out;
  }
}

/**
 * A read-only view of a key-value store of the running topology
 * (`app.store(name)`, or `await table.query()`).
 *
 * Keys are encoded with the store's key serde; entries come back decoded with
 * the store's serdes (the engine names them in each answer), in the order of
 * their **serialized** keys, as in Kafka Streams' RocksDB stores: byte order
 * of UTF-8 for string keys, big-endian two's complement for long and integer
 * keys (so negative numbers sort after positive ones). The entries are those
 * of the store partitions this engine holds, as committed.
 *
 * Queries may be made at any time while `run()` serves the topology (they
 * share the engine connection with it and do not wait for it). Before the
 * topology runs they reject with a FailedPreconditionError naming the store;
 * a store that does not exist rejects with a NotFoundError naming it and the
 * stores that do.
 */
export class KeyValueStore<K = unknown, V = unknown> {
  /** The store's name, as describe() shows it. */
  readonly name: string;
  readonly #target: QueryTarget;
  readonly #pageSize: number;
  readonly #stale: boolean;

  /** @internal */
  constructor(target: QueryTarget, name: string, options: StoreOptions = {}) {
    if (typeof name !== "string" || name === "") {
      throw new TypeError(`store: want a store name, got ${typeof name === "string" ? '""' : typeName(name)}`);
    }
    const pageSize = options.pageSize ?? DEFAULT_PAGE_SIZE;
    if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_PAGE_SIZE) {
      throw new RangeError(`store ${JSON.stringify(name)}: pageSize ${String(pageSize)} is out of range (1..${MAX_PAGE_SIZE})`);
    }
    this.name = name;
    this.#target = target;
    this.#pageSize = pageSize;
    this.#stale = options.enableStaleStores ?? false;
  }

  toString(): string {
    return `KeyValueStore(${JSON.stringify(this.name)})`;
  }

  /** The store's key serde (asked of the engine when the app did not build the store). */
  async keySerde(): Promise<string> {
    const known = this.#target.keySerde(this.name);
    if (known !== undefined) {
      return known;
    }
    await this.#query({ case: "all", value: true }, 1);
    return this.#target.keySerde(this.name) ?? "bytes";
  }

  /** The value of `key`, or undefined when the store holds none. */
  async get(key: K): Promise<V | undefined> {
    const page = await this.#query({ case: "get", value: await this.#encode(key, "get") }, 1);
    return page.entries[0]?.[1];
  }

  /**
   * The value of `key` with its timestamp, partition and whether a standby
   * answered (Kafka Streams' IQv2 `KeyQuery`). With `application.server`
   * set on the instances, the engine answers from the instance holding the
   * key; while the group moves its partition this rejects with an
   * UnavailableError naming store, key and partition: retry.
   */
  async query(key: K): Promise<KeyQueryResult<V>> {
    const page = await this.#query({ case: "get", value: await this.#encode(key, "query") }, 1);
    const found = page.entries.length > 0;
    return {
      value: page.entries[0]?.[1],
      timestamp: found ? page.resp.timestamps[0] : undefined,
      partition: page.resp.partition,
      fromStandby: page.resp.fromStandby,
      servedBy: [...page.resp.servedBy],
    };
  }

  /** The entries with keys from `from` to `to`, both inclusive; an absent bound is open. */
  range(bounds: RangeOptions<K> = {}): Entries<K, V> {
    if (typeof bounds !== "object" || bounds === null) {
      throw new TypeError(`store ${JSON.stringify(this.name)}: range: want { from?, to? }, got ${typeName(bounds)}`);
    }
    return new Entries(() => this.#scan(async () => ({
      lo: bounds.from === undefined ? undefined : await this.#encode(bounds.from, "range"),
      hi: bounds.to === undefined ? undefined : await this.#encode(bounds.to, "range"),
      prefix: undefined,
    })));
  }

  /**
   * The entries whose serialized key starts with the serialized `prefix`. A
   * string is taken as UTF-8 (so for string keys this is a text prefix);
   * a Uint8Array as its bytes; anything else is encoded with the key serde
   * (a long prefix is all 8 bytes, so one key).
   */
  prefix(prefix: K | string | Uint8Array): Entries<K, V> {
    return new Entries(() => this.#scan(async () => {
      let p: Buffer;
      if (prefix instanceof Uint8Array) {
        p = Buffer.from(prefix);
      } else if (typeof prefix === "string") {
        p = Buffer.from(prefix, "utf8");
      } else {
        p = await this.#encode(prefix as K, "prefix");
      }
      return { lo: undefined, hi: undefined, prefix: p };
    }));
  }

  /** Every entry. */
  all(): Entries<K, V> {
    return new Entries(() => this.#scan(async () => ({ lo: undefined, hi: undefined, prefix: undefined })));
  }

  /** The number of entries, counted by reading the keys (the store is not locked: it may change meanwhile). */
  async approximateNumEntries(): Promise<number> {
    let n = 0;
    for await (const _ of this.all()) {
      n++;
    }
    return n;
  }

  // Internals.

  async #encode(key: K, what: string): Promise<Buffer> {
    if (key === null || key === undefined) {
      throw new TypeError(`store ${JSON.stringify(this.name)}: ${what}: a key must not be ${String(key)}`);
    }
    const ks = await this.keySerde();
    let b: Uint8Array | null;
    try {
      b = encode(ks, key);
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      throw new TypeError(`store ${JSON.stringify(this.name)}: ${what}: cannot encode key ${show(key)} with key serde ${JSON.stringify(ks)}: ${msg}`);
    }
    return Buffer.from(b!.buffer, b!.byteOffset, b!.byteLength);
  }

  async #query(query: Query, limit: number): Promise<Page<K, V>> {
    const resp = await this.#target.query(this.name, query, limit, this.#stale);
    if (resp.keySerde) {
      this.#target.learnKeySerde(this.name, resp.keySerde);
    }
    const keys = decodeColumn(resp.keySerde || "bytes", resp.keys, resp.keyLengths);
    const values = decodeColumn(resp.valueSerde || "bytes", resp.values, resp.valueLengths);
    if (keys.failures.size > 0 || values.failures.size > 0 || keys.items.length !== values.items.length) {
      const detail = [...keys.failures.values(), ...values.failures.values()][0] ?? `${keys.items.length} keys, ${values.items.length} values`;
      throw new PolystreamsError("internal", `Query ${JSON.stringify(this.name)}: the engine's answer does not decode: ${detail}`);
    }
    const raw: Buffer[] = [];
    const all = Buffer.from(resp.keys.buffer, resp.keys.byteOffset, resp.keys.byteLength);
    let pos = 0;
    for (const n of resp.keyLengths) {
      raw.push(all.subarray(pos, pos + Math.max(n, 0)));
      pos += Math.max(n, 0);
    }
    const entries = keys.items.map((k, i) => [k, values.items[i]] as [K, V]);
    return { raw, entries, truncated: resp.truncated, resp };
  }

  /**
   * Entries from lo to hi (inclusive; undefined: open), or with a prefix,
   * read page by page: a truncated page is continued from just after its
   * last key (key + 0x00 is the next possible key in byte order).
   */
  async *#scan(bounds: () => Promise<{ lo: Buffer | undefined; hi: Buffer | undefined; prefix: Buffer | undefined }>): AsyncGenerator<[K, V]> {
    const { lo, hi, prefix } = await bounds();
    let query: Query;
    if (prefix !== undefined) {
      query = { case: "prefix", value: prefix };
    } else if (lo === undefined && hi === undefined) {
      query = { case: "all", value: true };
    } else {
      query = { case: "range", value: { ...(lo ? { from: lo } : {}), ...(hi ? { to: hi } : {}) } };
    }
    for (;;) {
      const page = await this.#query(query, this.#pageSize);
      for (let i = 0; i < page.entries.length; i++) {
        if (prefix !== undefined && !startsWith(page.raw[i]!, prefix)) {
          return;
        }
        yield page.entries[i]!;
      }
      const last = page.raw[page.raw.length - 1];
      if (!page.truncated || last === undefined) {
        return;
      }
      const from = Buffer.concat([last, ZERO]);
      query = { case: "range", value: { from, ...(hi ? { to: hi } : {}) } };
    }
  }
}

const ZERO = Buffer.from([0]);

function startsWith(b: Buffer, prefix: Buffer): boolean {
  return b.length >= prefix.length && b.subarray(0, prefix.length).equals(prefix);
}

function show(v: unknown): string {
  if (typeof v === "bigint") {
    return `${v}n`;
  }
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

/** A point in time: epoch milliseconds, or a Date. */
export type Time = number | Date;

function timeMs(t: Time, what: string): bigint {
  const n = t instanceof Date ? t.getTime() : t;
  if (typeof n !== "number" || !Number.isSafeInteger(n)) {
    throw new TypeError(`${what}: want epoch milliseconds (an integer) or a Date, got ${t instanceof Date ? "an invalid Date" : typeName(t)}`);
  }
  return BigInt(n);
}

/** The inner serde of a windowed serde name (`windowed(string,60000)` -> `string`); another name is its own. */
export function innerSerde(serde: string): string {
  const open = serde.indexOf("(");
  return open >= 0 && serde.endsWith(")") ? serde.slice(open + 1, -1).split(",")[0]! : serde;
}

/**
 * A read-only view of a windowed aggregation's store of the running
 * topology (`app.windowStore(name)`, or `await table.windowStore()`): a
 * window store (time and sliding windows) or a session store.
 *
 * Entries come back as `[Windowed(key, start, end), value]`. For a window
 * store, `fetch` and `fetchAll` answer the windows whose start is from
 * `from` to `to` (both inclusive; Kafka Streams' `WindowStore.fetch` and
 * `fetchAll`); for a session store, the sessions that end at or after
 * `from` and start at or before `to` (`SessionStore.findSessions`). Times
 * are epoch milliseconds or Dates. Windows past the store's retention are
 * gone. Errors are as for KeyValueStore; an answer of more than 100,000
 * windows rejects: ask for a shorter time range.
 */
/**
 * One version of a versioned store's value (Kafka Streams'
 * `VersionedRecord`): valid from `timestamp` (epoch ms) until `validTo`
 * (exclusive; undefined for the latest version).
 */
export interface VersionedRecord<V = unknown> {
  value: V;
  timestamp: number;
  validTo: number | undefined;
}

/**
 * A read-only view of a versioned store of the running topology
 * (`app.versionedStore(name)`): a table materialized with `versionedMs`
 * (Kafka Streams' `VersionedKeyValueStore`, KIP-889). `get(key)` answers
 * the latest version, `get(key, { asOf })` the version valid at `asOf`
 * (epoch ms or a Date). A read as of a time older than the store's history
 * retention (behind the newest timestamp the store saw) finds nothing,
 * unless the key's latest version is older still; a deleted key (a
 * tombstone) finds nothing. Errors are as for KeyValueStore.
 */
export class VersionedKeyValueStore<K = unknown, V = unknown> {
  /** The store's name, as describe() shows it. */
  readonly name: string;
  readonly #target: QueryTarget;
  readonly #stale: boolean;

  /** @internal */
  constructor(target: QueryTarget, name: string, options: { enableStaleStores?: boolean } = {}) {
    if (typeof name !== "string" || name === "") {
      throw new TypeError(`versionedStore: want a store name, got ${typeof name === "string" ? '""' : typeName(name)}`);
    }
    this.name = name;
    this.#target = target;
    this.#stale = options.enableStaleStores ?? false;
  }

  toString(): string {
    return `VersionedKeyValueStore(${JSON.stringify(this.name)})`;
  }

  /** The store's key serde (asked of the engine when the app did not build the store). */
  async keySerde(): Promise<string> {
    const known = this.#target.keySerde(this.name);
    if (known !== undefined) {
      return known;
    }
    await this.#get(new Uint8Array(0), undefined);
    return this.#target.keySerde(this.name) ?? "bytes";
  }

  /** The latest version of `key`, or with `asOf` the version valid then; undefined when there is none. */
  async get(key: K, options: { asOf?: Time } = {}): Promise<VersionedRecord<V> | undefined> {
    if (key === null || key === undefined) {
      throw new TypeError(`store ${JSON.stringify(this.name)}: get: a key must not be ${String(key)}`);
    }
    const ks = await this.keySerde();
    let b: Uint8Array | null;
    try {
      b = encode(ks, key);
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      throw new TypeError(`store ${JSON.stringify(this.name)}: get: cannot encode key ${show(key)} with key serde ${JSON.stringify(ks)}: ${msg}`);
    }
    return this.#get(b!, options.asOf === undefined ? undefined : timeMs(options.asOf, "get: asOf"));
  }

  async #get(key: Uint8Array, asOfMs: bigint | undefined): Promise<VersionedRecord<V> | undefined> {
    const resp = await this.#target.query(this.name, { case: "versionedGet", value: { key, ...(asOfMs !== undefined ? { asOfMs } : {}) } }, 1, this.#stale);
    if (resp.keySerde) {
      this.#target.learnKeySerde(this.name, resp.keySerde);
    }
    const values = decodeColumn(resp.valueSerde || "bytes", resp.values, resp.valueLengths);
    if (values.failures.size > 0) {
      throw new PolystreamsError("internal", `Query ${JSON.stringify(this.name)}: the engine's answer does not decode: ${[...values.failures.values()][0]}`);
    }
    if (resp.keyLengths.length === 0) {
      return undefined;
    }
    return {
      value: values.items[0] as V,
      timestamp: Number(resp.timestamps[0] ?? 0n),
      validTo: resp.validToMs === undefined ? undefined : Number(resp.validToMs),
    };
  }
}

export class WindowStore<K = unknown, V = unknown> {
  /** The store's name, as describe() shows it. */
  readonly name: string;
  readonly #target: QueryTarget;

  /** @internal */
  constructor(target: QueryTarget, name: string) {
    if (typeof name !== "string" || name === "") {
      throw new TypeError(`windowStore: want a store name, got ${typeof name === "string" ? '""' : typeName(name)}`);
    }
    this.name = name;
    this.#target = target;
  }

  toString(): string {
    return `WindowStore(${JSON.stringify(this.name)})`;
  }

  /** The store's windowed key serde, e.g. `windowed(string,60000)` (asked of the engine when the app did not build the store). */
  async keySerde(): Promise<string> {
    const known = this.#target.keySerde(this.name);
    if (known !== undefined) {
      return known;
    }
    await this.#fetch(undefined, 0n, 0n, 1, "keySerde");
    return this.#target.keySerde(this.name) ?? "bytes";
  }

  /** The windows of `key` in the time range, by start time. */
  async fetch(key: K, from: Time, to: Time): Promise<[Windowed<K>, V][]> {
    if (key === null || key === undefined) {
      throw new TypeError(`store ${JSON.stringify(this.name)}: fetch: a key must not be ${String(key)}`);
    }
    const f = timeMs(from, "fetch: from");
    const t = timeMs(to, "fetch: to");
    const inner = innerSerde(await this.keySerde());
    let b: Uint8Array | null;
    try {
      b = encode(inner, key);
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      throw new TypeError(`store ${JSON.stringify(this.name)}: fetch: cannot encode key ${String(key)} with key serde ${JSON.stringify(inner)}: ${msg}`);
    }
    return this.#fetch(b!, f, t, MAX_PAGE_SIZE, "fetch");
  }

  /** The windows of every key in the time range. */
  async fetchAll(from: Time, to: Time): Promise<[Windowed<K>, V][]> {
    return this.#fetch(undefined, timeMs(from, "fetchAll: from"), timeMs(to, "fetchAll: to"), MAX_PAGE_SIZE, "fetchAll");
  }

  async #fetch(key: Uint8Array | undefined, fromMs: bigint, toMs: bigint, limit: number, what: string): Promise<[Windowed<K>, V][]> {
    const resp = await this.#target.query(this.name, { case: "windowFetch", value: { ...(key ? { key } : {}), fromMs, toMs } }, limit);
    if (resp.keySerde) {
      this.#target.learnKeySerde(this.name, resp.keySerde);
    }
    const keys = decodeColumn(resp.keySerde || "bytes", resp.keys, resp.keyLengths);
    const values = decodeColumn(resp.valueSerde || "bytes", resp.values, resp.valueLengths);
    if (keys.failures.size > 0 || values.failures.size > 0 || keys.items.length !== values.items.length) {
      const detail = [...keys.failures.values(), ...values.failures.values()][0] ?? `${keys.items.length} keys, ${values.items.length} values`;
      throw new PolystreamsError("internal", `Query ${JSON.stringify(this.name)}: the engine's answer does not decode: ${detail}`);
    }
    if (resp.truncated && limit === MAX_PAGE_SIZE) {
      throw new PolystreamsError(
        "resource_exhausted",
        `store ${JSON.stringify(this.name)}: ${what}: more than ${MAX_PAGE_SIZE} windows from ${fromMs} to ${toMs}; ask for a shorter range`,
      );
    }
    return keys.items.map((k, i) => {
      if (!(k instanceof Windowed)) {
        throw new PolystreamsError("internal", `store ${JSON.stringify(this.name)} answered key ${String(k)}, not a windowed key: it is no window store`);
      }
      return [k as Windowed<K>, values.items[i] as V];
    });
  }
}
