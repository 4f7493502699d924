/**
 * Unit-testing topologies: TopologyTestDriver, as Kafka Streams'.
 *
 * A test builds a topology with the normal API on the driver, pipes input
 * records one at a time, and reads what the topology wrote. The driver runs
 * the topology on an engine session in test driver mode
 * (`polystreams.test.driver=true`, docs/design/test-driver.md): the session
 * has its own in-process broker (topics of one partition) and state, and
 * pipeInput() resolves once the record is processed completely, through
 * repartition topics, and committed (the record cache flushed), as
 * TopologyTestDriver does.
 */

import { App, type AppOptions, type StreamOptions } from "./app.js";
import { properties } from "./config.js";
import type { GlobalKTable, GlobalTableOptions, KStream, KTable, TableOptions } from "./dsl.js";
import { ProcessingError } from "./errors.js";
import type { TestHeader, TestRecord as TestRecordProto } from "./gen/polystreams/v1alpha1/engine_pb.js";
import { type SerdeName, type SerdeType, decode, encode } from "./serde.js";
import type { KeyValueStore, VersionedKeyValueStore, WindowStore } from "./store.js";
import type { StoreBuilder } from "./processor.js";
import type { Topology } from "./topology.js";

/** Record headers: an object, or [key, value] pairs when a key repeats. */
export type Headers = Readonly<Record<string, string | Uint8Array | null>> | readonly (readonly [string, string | Uint8Array | null])[];

/** A record the topology wrote (Kafka Streams' `TestRecord`). */
export interface TestRecord<K = unknown, V = unknown> {
  key: K;
  value: V;
  /** Epoch milliseconds. */
  timestamp: number;
  /** [key, value] pairs in order. */
  headers: [string, Uint8Array | null][];
}

/** Options of TopologyTestDriver.pipeInput. */
export interface PipeOptions {
  /** Epoch ms or a Date; default: the driver's wall clock (see advanceWallClock). */
  timestamp?: number | Date;
  headers?: Headers;
}

/** Options of TopologyTestDriver.create: App's, without brokers. */
export type TestDriverOptions = Omit<AppOptions, "brokers">;

/**
 * Kafka Streams' TopologyTestDriver over an App: build the topology with
 * stream(), table() and globalTable() (and the operators of what they return), then
 * pipeInput(), readOutput(), readKeyValuesToMap(), getStore() and
 * advanceWallClock(); the first of those starts it. `config` is the App's
 * (e.g. `{ statestoreCacheMaxBytes: 0 }` turns the record cache off; it is
 * on by default, as in Kafka Streams, and flushed after each piped record).
 *
 * `await using driver = await TopologyTestDriver.create("wordcount")` closes
 * it at the end of the block; so does close(). Nothing is left running after
 * it: the session, its broker and state, and the engine it spawned.
 *
 * Calls are made one at a time (await each): a test drives the topology.
 */
export class TopologyTestDriver {
  /** The App the topology runs in. */
  readonly app: App;
  /** Source topic -> its serdes, to encode piped records. */
  readonly #serdes = new Map<string, Promise<[string, string]>>();
  /** Pattern sources (anchored) and their serdes, for topics no source names. */
  readonly #patterns: [RegExp, Promise<[string, string]>][] = [];
  #started: Promise<void> | undefined;
  #run: Promise<void> | undefined;
  #runError: unknown;

  private constructor(app: App) {
    this.app = app;
  }

  /** Opens a test driver session on a running engine or one it spawns (see App.create). */
  static async create(applicationId = "test-driver", options: TestDriverOptions = {}): Promise<TopologyTestDriver> {
    const extra = { ...properties(options.config), "polystreams.test.driver": "true" };
    return new TopologyTestDriver(await App.create(applicationId, { ...options, config: { extra } }));
  }

  /** App.stream, remembering the topics' serdes. */
  stream<KS extends SerdeName = "bytes", VS extends SerdeName = "bytes">(
    topics: string | readonly string[] | RegExp,
    options: StreamOptions<KS, VS> = {},
  ): KStream<SerdeType<KS>, SerdeType<VS>> {
    const s = this.app.stream(topics, options);
    if (topics instanceof RegExp) {
      const whole = new RegExp(`^(?:${topics.source})$`, topics.flags.replace(/[gy]/g, ""));
      this.#patterns.push([whole, serdesOf(s.handle)]);
      return s;
    }
    for (const t of typeof topics === "string" ? [topics] : topics) {
      this.#serdes.set(t, serdesOf(s.handle));
    }
    return s;
  }

  /** App.table, remembering the topic's serdes. */
  table<KS extends SerdeName = "bytes", VS extends SerdeName = "bytes">(
    topic: string,
    options: TableOptions<KS, VS> = {},
  ): KTable<SerdeType<KS>, SerdeType<VS>> {
    const t = this.app.table(topic, options);
    this.#serdes.set(topic, serdesOf(t.handle));
    return t;
  }

  /**
   * App.globalTable, remembering the topic's serdes. A record piped into
   * `topic` is in the global store when pipeInput() resolves, so the next
   * stream record joins with it (TopologyTestDriver updates a global store
   * at once).
   */
  globalTable<KS extends SerdeName = "bytes", VS extends SerdeName = "bytes">(
    topic: string,
    options: GlobalTableOptions<KS, VS> = {},
  ): GlobalKTable<SerdeType<KS>, SerdeType<VS>> {
    const g = this.app.globalTable(topic, options);
    this.#serdes.set(topic, serdesOf(g.handle));
    return g;
  }

  /** App.addStateStore: a store for the topology's processors. */
  addStateStore(store: StoreBuilder): Promise<void> {
    return this.app.addStateStore(store);
  }

  /** App.topology (a topology built without the DSL), remembering its sources' serdes. */
  topology(): Topology {
    return this.app.topologyWith((topics, options, pattern) => {
      if (pattern !== undefined) {
        const whole = new RegExp(`^(?:${pattern.source})$`, pattern.flags.replace(/[gy]/g, ""));
        this.#patterns.push([whole, Promise.resolve([options.key ?? "bytes", options.value ?? "bytes"])]);
      }
      for (const t of topics) {
        this.#serdes.set(t, Promise.resolve([options.key ?? "bytes", options.value ?? "bytes"]));
      }
    });
  }

  #start(): Promise<void> {
    this.#started ??= (async () => {
      await this.app.start();
      this.#run = this.app.run({ signals: false }).catch((e: unknown) => {
        if (!(e instanceof ProcessingError)) {
          this.#runError = e; // pipeInput reports a ProcessingError itself, naming the record
        }
      });
      // Resolves once the tasks are assigned (the session waits for them).
      await this.app.sessionCall("advanceWallClock", { millis: 0n });
    })();
    return this.#started;
  }

  /**
   * Writes one record to `topic` and resolves once the topology has
   * processed it completely (TestInputTopic.pipeInput): through every
   * repartition topic, with the record cache flushed. Key and value are
   * encoded with the serdes the topic's stream()/table() named. Rejects with
   * InvalidArgumentError naming the topic when the topology does not read
   * it, and with ProcessingError naming the record and node when a function
   * threw for it (the topology is then stopped, as a Kafka Streams
   * application is).
   */
  async pipeInput(topic: string, key: unknown, value: unknown, options: PipeOptions = {}): Promise<void> {
    await this.pipeRecords([{ topic, key, value, ...options }]);
  }

  /** Pipes records in one call, each processed completely before the next. */
  async pipeRecords(records: readonly ({ topic: string; key: unknown; value: unknown } & PipeOptions)[]): Promise<void> {
    await this.#start();
    const protos: Partial<TestRecordProto>[] = [];
    for (const r of records) {
      protos.push(await this.#record(r));
    }
    const resp = await this.app.sessionCall("pipeInput", { records: protos as TestRecordProto[] });
    if (resp.error) {
      const f = resp.failedRecord;
      throw new ProcessingError(resp.error, f ? { topic: f.topic, partition: f.partition, offset: f.offset, node: f.node } : {});
    }
    this.#raiseRunError();
  }

  async #record(r: { topic: string; key: unknown; value: unknown } & PipeOptions): Promise<Partial<TestRecordProto>> {
    const serdes = this.#serdes.get(r.topic) ?? this.#patterns.find(([re]) => re.test(r.topic))?.[1];
    if (serdes === undefined) {
      return { topic: r.topic }; // the engine names the topics the topology reads
    }
    const [ks, vs] = await serdes;
    const out: Partial<TestRecordProto> = { topic: r.topic, headers: [] };
    const k = encode(ks, r.key);
    const v = encode(vs, r.value);
    if (k !== null) {
      out.key = k;
    }
    if (v !== null) {
      out.value = v;
    }
    if (r.timestamp !== undefined) {
      out.timestampMs = BigInt(r.timestamp instanceof Date ? r.timestamp.getTime() : r.timestamp);
    }
    const pairs = r.headers === undefined ? [] : Array.isArray(r.headers) ? r.headers : Object.entries(r.headers);
    for (const [hk, hv] of pairs as [string, string | Uint8Array | null][]) {
      const h: Partial<TestHeader> = { key: hk };
      if (hv !== null) {
        h.value = typeof hv === "string" ? new TextEncoder().encode(hv) : hv;
      }
      out.headers!.push(h as TestHeader);
    }
    return out;
  }

  /**
   * The records the topology wrote to `topic` since the last read of it,
   * oldest first (TestOutputTopic.readRecordsToList), decoded with the
   * sink's serdes. Rejects with InvalidArgumentError naming the topic when
   * the topology does not write it.
   */
  async readOutput<K = unknown, V = unknown>(topic: string): Promise<TestRecord<K, V>[]> {
    await this.#start();
    const resp = await this.app.sessionCall("readOutput", { topic });
    const ks = resp.keySerde || "bytes";
    const vs = resp.valueSerde || "bytes";
    return resp.records.map((r) => ({
      key: decode(ks, r.key ?? null) as K,
      value: decode(vs, r.value ?? null) as V,
      timestamp: Number(r.timestampMs ?? 0n),
      headers: r.headers.map((h): [string, Uint8Array | null] => [h.key, h.value ?? null]),
    }));
  }

  /**
   * The latest value per key the topology wrote to `topic` since the last
   * read (TestOutputTopic.readKeyValuesToMap): a later record of a key
   * replaces an earlier one; a tombstone maps its key to null. Rejects with
   * a TypeError for a record with a null key, as Kafka Streams does.
   */
  async readKeyValuesToMap<K = unknown, V = unknown>(topic: string): Promise<Map<K, V>> {
    const out = new Map<K, V>();
    for (const r of await this.readOutput<K, V>(topic)) {
      if (r.key === null) {
        throw new TypeError(`readKeyValuesToMap(${JSON.stringify(topic)}): a record has a null key; use readOutput`);
      }
      out.set(r.key, r.value);
    }
    return out;
  }

  /**
   * The key-value store `name` (TopologyTestDriver.getKeyValueStore), to
   * query. Rejects with NotFoundError naming the store (and those that
   * exist) when there is none of that name, and with InvalidArgumentError
   * for a window or session store (see getWindowStore).
   */
  async getStore<K = unknown, V = unknown>(name: string): Promise<KeyValueStore<K, V>> {
    await this.#start();
    await this.app.sessionCall("query", { store: name, query: { case: "all", value: true }, limit: 1 });
    return this.app.store<K, V>(name);
  }

  /**
   * The versioned store `name` (a table materialized with `versionedMs`).
   * Rejects with NotFoundError naming the store when there is none of that
   * name, and with InvalidArgumentError when it is not versioned.
   */
  async getVersionedStore<K = unknown, V = unknown>(name: string): Promise<VersionedKeyValueStore<K, V>> {
    await this.#start();
    await this.app.sessionCall("query", { store: name, query: { case: "versionedGet", value: { key: new Uint8Array(0) } }, limit: 1 });
    return this.app.versionedStore<K, V>(name);
  }

  /**
   * The window store `name` of a windowed aggregation
   * (TopologyTestDriver.getWindowStore). Rejects with NotFoundError naming
   * the store when there is none of that name.
   */
  async getWindowStore<K = unknown, V = unknown>(name: string): Promise<WindowStore<K, V>> {
    await this.#start();
    await this.app.sessionCall("query", { store: name, query: { case: "windowFetch", value: { fromMs: 0n, toMs: 0n } }, limit: 1 });
    return this.app.windowStore<K, V>(name);
  }

  /**
   * Moves the driver's wall clock forward (TopologyTestDriver.advanceWallClockTime)
   * and commits; resolves to the new wall clock in epoch ms. Records piped
   * without a timestamp take the wall clock's.
   */
  async advanceWallClock(millis: number): Promise<number> {
    await this.#start();
    const resp = await this.app.sessionCall("advanceWallClock", { millis: BigInt(millis) });
    this.#raiseRunError();
    return Number(resp.wallClockMs);
  }

  #raiseRunError(): void {
    if (this.#runError !== undefined) {
      const e = this.#runError;
      this.#runError = undefined;
      throw e;
    }
  }

  /** Stops the session (its broker and state go with it) and the engine the driver spawned. */
  async close(): Promise<void> {
    await this.app.stopNow();
    await this.#run;
    await this.app.close();
  }

  /** `await using driver = await TopologyTestDriver.create(...)` closes it at the end of the block. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/**
 * The serdes a source's handle names. The promise is marked handled: a
 * refused source rejects its own handle (which the caller awaits), and
 * pipeInput to its topic rejects again; it is no unhandled rejection.
 */
function serdesOf(handle: Promise<{ keySerde: string; valueSerde: string }>): Promise<[string, string]> {
  const p = handle.then((h): [string, string] => [h.keySerde || "bytes", h.valueSerde || "bytes"]);
  p.catch(() => undefined);
  return p;
}
