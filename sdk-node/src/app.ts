/** App: one polystreams application — its engine session, its builder and its host loop. */

import { randomUUID } from "node:crypto";
import { Executor } from "./bundle.js";
import { type StoreBuilder, addStateStoreOp, metadataOf } from "./processor.js";
import { type SourceOptions, Topology, patternOf } from "./topology.js";
import type { AnyFunction } from "./outcomes.js";
import { type Client, Client as EngineClient, type Input, type Method, type Output } from "./client.js";
import { type Config, type OffsetReset, properties, redact } from "./config.js";
import {
  type Builder,
  type GlobalKTable,
  type GlobalTableOptions,
  type Handle,
  KStream,
  type KTable,
  type NamedOptions,
  type Operation,
  SETTLED,
  type Settled,
  type TableOptions,
  type BuiltinTimestampExtractor,
  type TimestampExtractor,
  extractorOf,
  globalTable,
  handleFrom,
  table,
} from "./dsl.js";
import { type EngineLogger, EngineProcess, checkEngineVersion, feedHint, findEngine } from "./engine.js";
import { FailedPreconditionError, NotFoundError, PolystreamsError, ProcessingError } from "./errors.js";
import { type DescribeFormat, type Metrics, metricsFrom } from "./metrics.js";
import {
  type BuildResponse,
  type BundleResult,
  type QueryResponse,
  type RestoreProgress as RestoreProgressMessage,
  State as StateEnum,
} from "./gen/polystreams/v1alpha1/engine_pb.js";
import { encode, type SerdeName, type SerdeType, type TopicSerde } from "./serde.js";
import { VERSION } from "./version.js";
import {
  type HostInfo,
  innerSerde,
  type KeyQueryMetadata,
  KeyValueStore,
  type QueryTarget,
  type StoreOptions,
  type StreamsMetadata,
  VersionedKeyValueStore,
  WindowStore,
} from "./store.js";

// App and TestDriver implement `await using` ([Symbol.asyncDispose]), which
// Node >= 20.4 provides at run time. Declared here too (as @types/node and
// TypeScript's esnext.disposable lib do, which merge with it) so that the
// published types check in a project that has neither.
declare global {
  interface SymbolConstructor {
    readonly asyncDispose: unique symbol;
  }
}

/**
 * The state of an application, as the engine reports it: `created` (being
 * built), `rebalancing` (joining the group), `restoring` (restoring stores
 * from their changelogs before processing; see App.restoreProgress),
 * `running`, `degraded` (no Kafka broker has answered the engine for 10 s:
 * processing waits, and the state goes back to `running` or `rebalancing`
 * by itself once one answers; see App.brokerOutage), `stopped`, `error`.
 */
export type State = "created" | "rebalancing" | "restoring" | "running" | "degraded" | "stopped" | "error";

const STATES: Partial<Record<StateEnum, State>> = {
  [StateEnum.CREATED]: "created",
  [StateEnum.REBALANCING]: "rebalancing",
  [StateEnum.RESTORING]: "restoring",
  [StateEnum.RUNNING]: "running",
  [StateEnum.DEGRADED]: "degraded",
  [StateEnum.STOPPED]: "stopped",
  [StateEnum.ERROR]: "error",
};

/**
 * How far restoring stores from their changelogs has come, over the store
 * partitions this engine restores or restored since its last rebalance.
 * `restoredRecords` counts the changelog records read so far; `totalRecords`
 * is what the restore had to read when it began (changelog end offset minus
 * checkpoint), so the restore is done when both are equal (0 of 0: nothing
 * had to be restored). `restoringPartitions` of `totalPartitions` store
 * partitions are still restoring. Record counts are numbers (exact below
 * 2^53).
 */
export interface RestoreProgress {
  readonly restoredRecords: number;
  readonly totalRecords: number;
  readonly restoringPartitions: number;
  readonly totalPartitions: number;
}

/**
 * This session's host as its engine sees it: whether the host processes
 * (this one and any other serving the same session) take the bundles the
 * engine's tasks hand them (docs/scale-out.md). `bundlesWaiting` counts the
 * bundles handed to the host and not answered yet, whether queued for a
 * worker or being processed by one; `idleMs` is how long no worker has
 * called the engine for bundles (0 while one waits for them); `stalled` is
 * set once bundles have waited 5 s with no worker calling: the tasks make no
 * progress until a host serves them or the session expires, while state()
 * stays `running`. All zero before start().
 */
export interface HostHealth {
  readonly bundlesWaiting: number;
  readonly idleMs: number;
  readonly stalled: boolean;
}

/**
 * No Kafka broker has answered the application for 10 s or more: the state
 * is `degraded` (see App.brokerOutage). `brokers` are the application's
 * `bootstrap.servers`; `sinceMs` is when a broker last answered (epoch
 * milliseconds); `lastError` the last error a request to a broker ended with
 * (`""` when the requests hang, as with a frozen broker); `outages` counts
 * the outages since the topology started, this one included.
 */
export interface BrokerOutage {
  readonly brokers: readonly string[];
  readonly sinceMs: number;
  readonly lastError: string;
  readonly outages: number;
}

/** A callback of App.onStateChange: `(newState, oldState)`. */
export type StateListener = (newState: State, oldState: State) => unknown;

/** A callback of App.onRestoreProgress. */
export type RestoreListener = (progress: RestoreProgress) => unknown;

function restoreFrom(m: RestoreProgressMessage | undefined): RestoreProgress | undefined {
  if (m === undefined) {
    return undefined;
  }
  return Object.freeze({
    restoredRecords: Number(m.restoredRecords),
    totalRecords: Number(m.totalRecords),
    restoringPartitions: m.restoringPartitions,
    totalPartitions: m.totalPartitions,
  });
}

function sameRestore(a: RestoreProgress | undefined, b: RestoreProgress | undefined): boolean {
  return (
    a === b ||
    (a !== undefined &&
      b !== undefined &&
      a.restoredRecords === b.restoredRecords &&
      a.totalRecords === b.totalRecords &&
      a.restoringPartitions === b.restoringPartitions &&
      a.totalPartitions === b.totalPartitions)
  );
}

/** Options of App.create. */
export interface AppOptions {
  /** A running engine's URL (also `$POLYSTREAMS_URL`); absent: spawn one. */
  engine?: string;
  /** Kafka bootstrap servers; the spawned engine is `serve --brokers` these. Absent: `dev`, with an embedded broker. */
  brokers?: string;
  /** Kafka Streams configuration (application.id is the App's). */
  config?: Config;
  /** Bounds each call to the engine, in milliseconds (default 120000). */
  timeoutMs?: number;
  /** A running engine's bearer token (default `$POLYSTREAMS_TOKEN`). */
  token?: string;
  /** PEM CA file to verify an `https://` engine with (default `$POLYSTREAMS_CA_FILE`). */
  caFile?: string;
  /** Receives the spawned engine's log lines (default: warnings and errors to stderr). */
  logger?: EngineLogger;
}

/** Options of App.stream. */
export interface StreamOptions<KS extends SerdeName | TopicSerde, VS extends SerdeName | TopicSerde> extends NamedOptions {
  /** The topics' key serde (default `bytes`). */
  key?: KS;
  /** The topics' value serde (default `bytes`). */
  value?: VS;
  /**
   * `Consumed.withOffsetResetPolicy`: where a partition with no committed
   * offset starts (default: the config's `autoOffsetReset`).
   */
  offsetReset?: OffsetReset;
  /**
   * `Consumed.withTimestampExtractor`: `(key, value, metadata,
   * partitionTime) => timestamp` (epoch ms) gives each record's timestamp
   * (a negative one drops the record; a throw stops the application), or
   * one of Kafka Streams' built-in extractors by class name.
   */
  timestampExtractor?: TimestampExtractor<SerdeType<KS>, SerdeType<VS>> | BuiltinTimestampExtractor;
}

/** Options of App.run. */
export interface RunOptions {
  /**
   * Whether SIGINT and SIGTERM stop the app while run() serves (default
   * true). After the first signal the handlers are removed, so a second
   * Ctrl-C ends the process as usual.
   */
  signals?: boolean;
}

/** Options of App.close. */
export interface CloseOptions {
  /** How long to wait for run() to return (default 60000 ms). */
  timeoutMs?: number;
}

// What this host understands beyond the protocol's base (OpenSession): fold
// bundles over windows that send each record once (Bundle.valueRefs), and
// fold programs over session and sliding windows (Bundle.foldBases).
// Processor bundles (Bundle.stores, inits, after; BundleResult ops:
// processor.ts), and metadata for functions registered with it (header
// columns in, output timestamps and headers out: bundle.ts).
export const HOST_FEATURES: readonly string[] = ["fold_value_refs", "fold_programs", "processors", "metadata"];

// The host loop's Exchange: bundles taken per call, and how long the engine
// may hold a call open waiting for one (also how soon stop() is noticed).
const MAX_BUNDLES = 8;
const WAIT_MS = 500;
// When the bundles in hand take longer than this, the results so far are
// delivered before going on (the engine re-dispatches the bundles of a worker
// silent for 30 s).
const DELIVER_AFTER_MS = 5_000;

const noop = (): void => {};

/**
 * The promise of a builder call's outcome. It tells the App when someone
 * awaits it (then/catch/finally/await), so that an error seen here is not
 * reported a second time by describe()/start()/run()/built().
 */
class Outcome<T> extends Promise<T> {
  static override get [Symbol.species](): PromiseConstructor {
    return Promise;
  }

  private onObserve: (() => void) | undefined;

  static make<T>(source: Promise<T>, onObserve: () => void): Outcome<T> {
    let resolve!: (v: T) => void;
    let reject!: (e: unknown) => void;
    const o = new Outcome<T>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    o.onObserve = onObserve;
    source.then(resolve, reject);
    Promise.prototype.then.call(o, undefined, noop); // never an unhandled rejection
    return o;
  }

  override then<R1 = T, R2 = never>(
    onfulfilled?: ((value: T) => R1 | PromiseLike<R1>) | null,
    onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    const observe = this.onObserve;
    if (observe !== undefined) {
      this.onObserve = undefined;
      observe();
    }
    return super.then(onfulfilled, onrejected);
  }
}

/** One queued builder call. */
interface Call {
  observed: boolean;
  error: PolystreamsError | undefined;
}

/**
 * A polystreams application: a Kafka Streams topology whose functions run in
 * this process.
 *
 * `await App.create("wordcount")` spawns an engine with an embedded Kafka
 * broker (`polystreams dev`); `{ brokers: "host:9092" }` spawns one against
 * that Kafka; `{ engine: "http://127.0.0.1:8086" }` (or the environment
 * variable `POLYSTREAMS_URL`) uses a running engine. The engine binary is
 * `$POLYSTREAMS_ENGINE`, else `polystreams` on PATH, else `bin/polystreams`
 * of the repository this package sits in.
 *
 * Build the topology with stream() and the returned KStream's operators (they
 * return at once; the calls go to the engine in order), then run() serves it
 * until stopped. close() stops the session and the spawned engine.
 */
export class App implements Builder {
  /** The application.id. */
  readonly applicationId: string;
  /** Where the engine serves the protocol. */
  readonly engineUrl: string;
  /** The Kafka bootstrap servers the application uses (the embedded broker's address under `dev`). */
  readonly brokers: string | undefined;
  /** The effective configuration the engine reports (credentials hidden). */
  readonly config: Readonly<Record<string, string>>;
  /** The process id of the engine this App spawned (undefined when it uses a running engine). */
  readonly enginePid: number | undefined;

  readonly #client: Client;
  readonly #session: string;
  readonly #engine: EngineProcess | undefined;
  readonly #functions = new Map<number, AnyFunction>();
  /** The stores addStateStore declared, by name: processors' window stores need their sizes. */
  readonly #storeSpecs = new Map<string, StoreBuilder>();
  #queue: Promise<void> = Promise.resolve();
  readonly #unreported = new Set<PolystreamsError>();
  #started = false;
  #running = false;
  #stopRequested = false;
  #stopSent: Promise<void> | undefined;
  #closed: Promise<void> | undefined;
  #idle: Promise<void> = Promise.resolve();
  /** Store name -> key serde, of the tables this app built (and what queries learned). */
  readonly #storeKeySerdes = new Map<string, string>();
  /** The topics streams and tables read, in builder order (for the embedded broker's hint). */
  readonly #sources: string[] = [];
  readonly #stateListeners: StateListener[] = [];
  readonly #restoreListeners: RestoreListener[] = [];
  #lastState: State = "created"; // as run() last saw it
  #restore: RestoreProgress | undefined;

  private constructor(init: {
    applicationId: string;
    client: Client;
    session: string;
    engine: EngineProcess | undefined;
    config: Record<string, string>;
    brokers: string | undefined;
  }) {
    this.applicationId = init.applicationId;
    this.#client = init.client;
    this.#session = init.session;
    this.#engine = init.engine;
    this.engineUrl = init.client.url;
    this.config = Object.freeze(redact(init.config));
    this.brokers = init.brokers;
    this.enginePid = init.engine?.pid;
  }

  /** Opens a session for `applicationId` on a running engine or one it spawns (see the class doc). */
  static async create(applicationId: string, options: AppOptions = {}): Promise<App> {
    const props = properties(options.config);
    if (options.brokers) {
      props["bootstrap.servers"] = options.brokers;
    }
    let engine: EngineProcess | undefined;
    let url = options.engine ?? process.env["POLYSTREAMS_URL"];
    if (!url) {
      engine = await EngineProcess.start(findEngine(), { brokers: options.brokers, logger: options.logger });
      url = engine.url;
    }
    let client: Client | undefined;
    try {
      client = new EngineClient(url, {
        ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
        ...(options.token !== undefined ? { token: options.token } : {}),
        ...(options.caFile !== undefined ? { caFile: options.caFile } : {}),
      });
      const resp = await client.call("openSession", { applicationId, config: props, hostFeatures: [...HOST_FEATURES] });
      checkEngineVersion(resp.version, VERSION);
      const brokers = engine?.broker || resp.config["bootstrap.servers"] || options.brokers || undefined;
      return new App({ applicationId, client, session: resp.sessionId, engine, config: resp.config, brokers });
    } catch (e) {
      client?.close();
      await engine?.close();
      throw e;
    }
  }

  /** A string for logs: the application.id and the engine. */
  toString(): string {
    return `App(${JSON.stringify(this.applicationId)}, engine=${JSON.stringify(this.engineUrl)})`;
  }

  // The builder.

  /**
   * A stream of the records of one or more topics (`StreamsBuilder.stream`).
   * `key` and `value` name the topics' serdes (default `bytes`) and type the
   * keys and values your functions see; `name` names the source node
   * (`Consumed.as`).
   *
   * A `RegExp` (`/orders-.*\/`) reads every topic whose whole name it
   * matches (`StreamsBuilder.stream(Pattern)`): those that exist at the
   * start and those created later, found at the next metadata refresh
   * (`metadata.max.age.ms`, 5 minutes by default). The engine matches its
   * source with Go's RE2 (no lookaround or backreferences); the `i` and `s`
   * flags become `(?i)` and `(?s)`, others are refused.
   */
  stream<KS extends SerdeName | TopicSerde = "bytes", VS extends SerdeName | TopicSerde = "bytes">(
    topics: string | readonly string[] | RegExp,
    options: StreamOptions<KS, VS> = {},
  ): KStream<SerdeType<KS>, SerdeType<VS>> {
    const pattern = topics instanceof RegExp ? patternOf(topics) : "";
    const list = topics instanceof RegExp ? [] : typeof topics === "string" ? [topics] : [...topics];
    for (const t of list) {
      if (typeof t !== "string") {
        throw new TypeError(`stream: topics must be strings, not ${typeof t}`);
      }
    }
    this.#sources.push(...list);
    const ex = extractorOf("stream", options.timestampExtractor);
    return new KStream(
      this,
      this.build("stream", null, ex.functions, (_, tokens) => ({
        case: "stream",
        value: {
          topics: list,
          topicPattern: pattern,
          keySerde: options.key ?? "",
          valueSerde: options.value ?? "",
          name: options.name ?? "",
          offsetReset: options.offsetReset ?? "",
          ...ex.op(tokens),
        },
      })),
    );
  }

  /**
   * A table of the latest value per key of `topic` (`StreamsBuilder.table`):
   * each record upserts its key, a null value deletes it. `key` and `value`
   * name the topic's serdes (default `bytes`) and type what your functions
   * see; `materialized` names the table's store (which makes it queryable);
   * `name` names the source node (`Consumed.as`).
   */
  table<KS extends SerdeName | TopicSerde = "bytes", VS extends SerdeName | TopicSerde = "bytes">(
    topic: string,
    options: TableOptions<KS, VS> = {},
  ): KTable<SerdeType<KS>, SerdeType<VS>> {
    this.#sources.push(topic);
    return table(this, topic, options);
  }

  /**
   * A table of every partition of `topic`, kept whole by every engine
   * instance (`StreamsBuilder.globalTable`): each record upserts its key, a
   * null value deletes it. It is restored from `topic` (its changelog)
   * before any record is processed, then kept up to date. Streams join it
   * with `stream.join(globalTable, keyMapper, joiner)`, with no
   * co-partitioning. `materialized` names its store (default
   * `<topic>-STATE-STORE-<n>`), always queryable; `name` names the
   * processor and, suffixed `-source`, the source node (`Consumed.as`).
   */
  globalTable<KS extends SerdeName | TopicSerde = "bytes", VS extends SerdeName | TopicSerde = "bytes">(
    topic: string,
    options: GlobalTableOptions<KS, VS> = {},
  ): GlobalKTable<SerdeType<KS>, SerdeType<VS>> {
    this.#sources.push(topic);
    return globalTable(this, topic, options);
  }

  /**
   * Declares a state store for the processors of this topology
   * (`StreamsBuilder.addStateStore`): processors name it in
   * `process(supplier, { stores: [name] })`. The promise settles when the
   * engine has answered (awaiting it is optional).
   */
  addStateStore(store: StoreBuilder): Promise<void> {
    const op = addStateStoreOp(store, []);
    this.#storeSpecs.set(store.name, store);
    return this.build("addStateStore", null, [], () => ({ case: "addStateStore", value: op })).handle as Promise<unknown> as Promise<void>;
  }

  /**
   * Builds this app's topology node by node, without the DSL (Kafka
   * Streams' `Topology`): addSource, addProcessor, addSink, addStateStore.
   */
  topology(): Topology {
    return this.topologyWith(() => {});
  }

  /**
   * topology(), telling `onSource` each source's topics and serdes (the test driver's).
   * @internal
   */
  topologyWith(onSource: (topics: readonly string[], options: SourceOptions, pattern?: RegExp) => void): Topology {
    return new Topology(
      this,
      (topics, options, pattern) => {
        this.#sources.push(...topics);
        onSource(topics, options, pattern);
      },
      (store) => void this.#storeSpecs.set(store.name, store),
    );
  }

  /**
   * Queues one Build call (see Builder). The calls run one at a time in
   * program order, so the engine numbers nodes as Kafka Streams would.
   * @internal
   */
  build(
    method: string,
    input: { readonly [SETTLED]: Settled } | null,
    functions: readonly AnyFunction[],
    operation: (input: bigint, tokens: readonly number[], others: readonly bigint[]) => Operation,
    others: readonly { readonly [SETTLED]: Settled }[] = [],
  ): { handle: Promise<Handle | undefined>; settled: Settled } {
    const site: { stack?: string } = {};
    Error.captureStackTrace(site, this.build);
    const { outcome, result } = this.#build(site, method, input, others, functions, operation, (resp) => {
      if (resp.handle === undefined) {
        return undefined;
      }
      const h = handleFrom(resp.handle);
      if (h.store && h.keySerde) {
        this.#storeKeySerdes.set(h.store, h.keySerde);
      }
      return h;
    });
    const settled: Settled = result.catch((e: unknown) => e as PolystreamsError);
    return { handle: outcome, settled };
  }

  /**
   * Queues one Build call whose answer is the handles of a split's branches
   * (see Builder).
   * @internal
   */
  buildBranches<T>(
    method: string,
    input: { readonly [SETTLED]: Settled },
    functions: readonly AnyFunction[],
    operation: (input: bigint, tokens: readonly number[]) => Operation,
    answer: (branches: readonly Handle[]) => T,
  ): Promise<T> {
    const site: { stack?: string } = {};
    Error.captureStackTrace(site, this.buildBranches);
    return this.#build(site, method, input, [], functions, operation, (resp) => answer(resp.branches.map(handleFrom))).outcome;
  }

  #build<T>(
    site: { stack?: string },
    method: string,
    input: { readonly [SETTLED]: Settled } | null,
    others: readonly { readonly [SETTLED]: Settled }[],
    functions: readonly AnyFunction[],
    operation: (input: bigint, tokens: readonly number[], others: readonly bigint[]) => Operation,
    answer: (resp: BuildResponse) => T,
  ): { outcome: Promise<T>; result: Promise<T> } {
    const call: Call = { observed: false, error: undefined };
    const run = async (): Promise<T> => {
      const ids: bigint[] = [];
      for (const node of input === null ? others : [input, ...others]) {
        const h = await node[SETTLED];
        if (h instanceof PolystreamsError) {
          throw h; // built from a refused call: refused for the same reason, without asking the engine
        }
        if (h === undefined) {
          throw new PolystreamsError("internal", `${method}: its input has no handle`);
        }
        ids.push(h.id);
      }
      const [inputId = 0n, ...otherIds] = input === null ? [0n, ...ids] : ids;
      const tokens: number[] = [];
      try {
        for (const fn of functions) {
          const metadata = metadataOf(fn);
          const resp = await this.#client.call("registerFunction", { sessionId: this.#session, name: fn.name || "anonymous", metadata });
          this.#functions.set(resp.token, fn);
          tokens.push(resp.token);
        }
        const resp = await this.#client.call("build", { sessionId: this.#session, operation: operation(inputId, tokens, otherIds) });
        return answer(resp);
      } catch (e) {
        for (const t of tokens) {
          this.#functions.delete(t); // registered for this call only
        }
        if (e instanceof PolystreamsError && site.stack !== undefined) {
          // Point at the builder call, not at the queue that ran it.
          e.stack = `${e.name}: ${e.message} [${e.code}]\n${site.stack.split("\n").slice(1).join("\n")}`;
        }
        throw e;
      }
    };
    const result = this.#queue.then(run).catch((e: unknown) => {
      const err = e instanceof PolystreamsError ? e : new PolystreamsError("internal", `${method}: ${String(e)}`, { cause: e });
      call.error = err;
      if (call.observed) {
        this.#unreported.delete(err);
      } else {
        this.#unreported.add(err);
      }
      throw err;
    });
    this.#queue = result.then(noop, noop);
    const outcome = Outcome.make(result, () => {
      call.observed = true;
      if (call.error !== undefined) {
        this.#unreported.delete(call.error);
      }
    });
    return { outcome, result };
  }

  /**
   * Waits until every builder call so far has been answered. Rejects with the
   * first refused call's error (a PolystreamsError with the engine's code and
   * message) unless that error was already seen through the node's `handle`
   * or the promise `to()`/`foreach()` returned; an error is reported once,
   * and the session stays usable.
   */
  async built(): Promise<void> {
    await this.#queue;
    const [first] = this.#unreported;
    if (first !== undefined) {
      const more = this.#unreported.size - 1;
      this.#unreported.clear();
      if (more > 0) {
        first.message += ` (and ${more} more refused builder call${more > 1 ? "s" : ""})`;
      }
      throw first;
    }
  }

  /**
   * The topology as Kafka Streams' `Topology.describe().toString()` prints
   * it, or in another `format`: `json` (structured; the topology file of
   * `polystreams describe`), `mermaid`, `dot` or `svg` (a picture laid out
   * by the engine).
   */
  async describe(options: { format?: DescribeFormat } = {}): Promise<string> {
    await this.built();
    const format = options.format ?? "text";
    if (format === "text") {
      return (await this.#client.call("describe", { sessionId: this.#session })).text;
    }
    return (await this.#client.call("describe", { sessionId: this.#session, format })).output;
  }

  /**
   * A summary of the engine's metrics for this application now: state,
   * records per node, lag and store entries per task, restore progress,
   * dropped and failed records.
   */
  async metrics(): Promise<Metrics> {
    const resp = await this.#client.call("getMetrics", { sessionId: this.#session });
    return metricsFrom(resp, STATES[resp.state] ?? "created");
  }

  // Running.

  /**
   * Pauses processing (`KafkaStreams.pause`, KIP-834): the engine fetches
   * nothing more and its tasks take no new records, while the application
   * stays in the group with its tasks. Before run() it starts paused.
   */
  async pause(): Promise<void> {
    await this.#client.call("pauseProcessing", { sessionId: this.#session });
  }

  /** Resumes processing where pause() left it (`KafkaStreams.resume`). */
  async resume(): Promise<void> {
    await this.#client.call("resumeProcessing", { sessionId: this.#session });
  }

  /** Whether pause() was called and resume() not since (`KafkaStreams.isPaused`). */
  async isPaused(): Promise<boolean> {
    return (await this.#client.call("getState", { sessionId: this.#session })).paused;
  }

  /**
   * Deletes the application's local state directory,
   * `<state.dir>/<application.id>` (`KafkaStreams.cleanUp`), so that the next
   * start restores every store from its changelog; resolves to the directory
   * deleted, or undefined when there was none. Refused (a PolystreamsError
   * with code `failed_precondition`) while the application runs: call it
   * before run() or after stop().
   */
  async cleanUp(): Promise<string | undefined> {
    const resp = await this.#client.call("cleanUpState", { sessionId: this.#session });
    return resp.deleted === "" ? undefined : resp.deleted;
  }

  /**
   * The application's state, as the engine reports it now (also updates
   * restoreProgress; the listeners of onStateChange are driven by run()).
   */
  async state(): Promise<State> {
    const resp = await this.#client.call("getState", { sessionId: this.#session });
    const restore = restoreFrom(resp.restore);
    if (restore !== undefined) {
      this.#restore = restore;
    }
    return STATES[resp.state] ?? "created";
  }

  /**
   * Records the engine's tasks dropped since the topology started, as the
   * engine reports it now (Kafka Streams' `dropped-records-total`): records
   * too late for every window they fall in (past the window's end plus
   * grace), and records with a null key or value an aggregation skips.
   */
  async droppedRecords(): Promise<number> {
    const resp = await this.#client.call("getState", { sessionId: this.#session });
    return Number(resp.droppedRecords);
  }

  /**
   * Whether this session's host takes its bundles, as the engine reports it
   * now; e.g. a health check that fails while `(await app.hostHealth()).stalled`.
   * See HostHealth.
   */
  async hostHealth(): Promise<HostHealth> {
    const resp = await this.#client.call("getState", { sessionId: this.#session });
    return Object.freeze({ bundlesWaiting: resp.bundlesWaiting, idleMs: Number(resp.hostIdleMs), stalled: resp.hostStalled });
  }

  /**
   * The outage that makes the application `degraded` now: which brokers do
   * not answer, and since when; undefined in any other state. See
   * BrokerOutage.
   */
  async brokerOutage(): Promise<BrokerOutage | undefined> {
    const resp = await this.#client.call("getState", { sessionId: this.#session });
    const o = resp.brokerOutage;
    if (resp.state !== StateEnum.DEGRADED || o === undefined) {
      return undefined;
    }
    return Object.freeze({ brokers: Object.freeze([...o.brokers]), sinceMs: Number(o.sinceMs), lastError: o.lastError, outages: Number(o.outages) });
  }

  /**
   * Restore progress as the engine last reported it (to run()'s exchanges or
   * to state()): undefined before the topology started. See RestoreProgress.
   */
  get restoreProgress(): RestoreProgress | undefined {
    return this.#restore;
  }

  /**
   * Calls `listener(newState, oldState)` whenever the application's state
   * changes (Kafka Streams' `setStateListener`): typically `created` ->
   * `rebalancing` -> (`restoring` ->) `running` (and back through
   * `rebalancing` when the group rebalances, and through `degraded` while
   * no broker answers) -> `stopped` or `error`. The
   * listeners see the states the engine reports to run(), in order, each
   * change once; when run() returns cleanly they see `stopped`. A listener
   * that throws (or whose promise rejects) is reported with
   * process.emitWarning and ignored. Returns `listener`.
   */
  onStateChange(listener: StateListener): StateListener {
    if (typeof listener !== "function") {
      throw new TypeError(`onStateChange: want a function, got ${listener === null ? "null" : typeof listener}`);
    }
    this.#stateListeners.push(listener);
    return listener;
  }

  /**
   * Calls `listener(progress)` whenever the restore progress the engine
   * reports to run() changes (Kafka Streams' `StateRestoreListener`, in
   * one callback): while the app is `restoring`, as records are restored,
   * and once more with the final figures. Errors are handled as for
   * onStateChange. Returns `listener`.
   */
  onRestoreProgress(listener: RestoreListener): RestoreListener {
    if (typeof listener !== "function") {
      throw new TypeError(`onRestoreProgress: want a function, got ${listener === null ? "null" : typeof listener}`);
    }
    this.#restoreListeners.push(listener);
    return listener;
  }

  #setState(next: State): void {
    const old = this.#lastState;
    if (next === old) {
      return;
    }
    this.#lastState = next;
    for (const listener of [...this.#stateListeners]) {
      this.#notify(`state listener ${listener.name || "(anonymous)"} on ${old} -> ${next}`, () => listener(next, old));
    }
  }

  #setRestore(progress: RestoreProgress | undefined): void {
    if (progress === undefined || sameRestore(progress, this.#restore)) {
      return;
    }
    this.#restore = progress;
    for (const listener of [...this.#restoreListeners]) {
      this.#notify(`restore listener ${listener.name || "(anonymous)"}`, () => listener(progress));
    }
  }

  #notify(what: string, call: () => unknown): void {
    const warn = (e: unknown): void => {
      process.emitWarning(`polystreams: app ${JSON.stringify(this.applicationId)}: ${what} failed: ${String(e)}`);
    };
    try {
      const r = call();
      if (r instanceof Promise) {
        r.catch(warn);
      }
    } catch (e) {
      warn(e);
    }
  }

  // Interactive queries.

  /**
   * The key-value store `name` (a table's `await table.store`, or a
   * `materialized` name), for interactive queries while run() serves the
   * topology. `K` and `V` are the types of its keys and values as decoded
   * with the store's serdes. See KeyValueStore.
   */
  store<K = unknown, V = unknown>(name: string, options: StoreOptions = {}): KeyValueStore<K, V> {
    return new KeyValueStore<K, V>(this.#queries, name, options);
  }

  /**
   * The window or session store `name` of a windowed aggregation (a table's
   * `await table.store`, or a `materialized` name), for interactive queries
   * while run() serves the topology. `K` is the type of the grouped keys, `V`
   * of the values. See WindowStore.
   */
  windowStore<K = unknown, V = unknown>(name: string): WindowStore<K, V> {
    return new WindowStore<K, V>(this.#queries, name);
  }

  /**
   * The versioned store `name` (a table materialized with `versionedMs`),
   * for interactive queries as of a time while run() serves the topology.
   * See VersionedKeyValueStore.
   */
  versionedStore<K = unknown, V = unknown>(name: string, options: { enableStaleStores?: boolean } = {}): VersionedKeyValueStore<K, V> {
    return new VersionedKeyValueStore<K, V>(this.#queries, name, options);
  }

  /**
   * Which instance of the application holds `key` of `store` (Kafka
   * Streams' `queryMetadataForKey`); needs `application.server` on the
   * instances. A window or session store's key is the inner key.
   */
  async queryMetadataForKey<K>(store: string, key: K): Promise<KeyQueryMetadata> {
    const ks = innerSerde(await this.store(store).keySerde());
    let b: Uint8Array | null;
    try {
      b = encode(ks, key);
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      throw new TypeError(`queryMetadataForKey: store ${JSON.stringify(store)}: cannot encode key with key serde ${JSON.stringify(ks)}: ${msg}`);
    }
    const resp = await this.#client.call("queryMetadataForKey", { sessionId: this.#session, store, key: b ?? new Uint8Array() });
    const host = (h: { host: string; port: number }): HostInfo => ({ host: h.host, port: h.port });
    return { activeHost: resp.activeHost ? host(resp.activeHost) : undefined, standbyHosts: resp.standbyHosts.map(host), partition: resp.partition };
  }

  /** The instances holding `store`, active or standby (Kafka Streams' `streamsMetadataForStore`). */
  streamsMetadataForStore(store: string): Promise<StreamsMetadata[]> {
    return this.#streamsMetadata(store);
  }

  /** Every instance with an `application.server` (Kafka Streams' `metadataForAllStreamsClients`). */
  metadataForAllStreamsClients(): Promise<StreamsMetadata[]> {
    return this.#streamsMetadata("");
  }

  async #streamsMetadata(store: string): Promise<StreamsMetadata[]> {
    const resp = await this.#client.call("streamsMetadata", { sessionId: this.#session, store });
    const tps = (l: { topic: string; partition: number }[]): [string, number][] => l.map((tp) => [tp.topic, tp.partition]);
    return resp.metadata.map((m) => ({
      hostInfo: { host: m.hostInfo?.host ?? "", port: m.hostInfo?.port ?? 0 },
      stateStoreNames: [...m.stateStoreNames],
      topicPartitions: tps(m.topicPartitions),
      standbyStateStoreNames: [...m.standbyStateStoreNames],
      standbyTopicPartitions: tps(m.standbyTopicPartitions),
    }));
  }

  /** What the stores of this app query through. */
  readonly #queries: QueryTarget = {
    query: (store, query, limit, enableStaleStores = false): Promise<QueryResponse> => {
      if (this.#closed !== undefined) {
        const app = JSON.stringify(this.applicationId);
        return Promise.reject(new FailedPreconditionError("failed_precondition", `Query: store ${JSON.stringify(store)}: app ${app} is closed`));
      }
      return this.#client.call("query", { sessionId: this.#session, store, query, limit, enableStaleStores });
    },
    keySerde: (store) => this.#storeKeySerdes.get(store),
    learnKeySerde: (store, serde) => void this.#storeKeySerdes.set(store, serde),
  };


  /**
   * Starts processing (creates internal topics, joins the group) once the
   * builder calls are answered. Called by run(); builder calls are refused
   * afterwards.
   */
  async start(): Promise<void> {
    if (this.#closed !== undefined || this.#stopSent !== undefined) {
      throw new FailedPreconditionError("failed_precondition", `start: app ${JSON.stringify(this.applicationId)} is stopped`);
    }
    if (this.#started) {
      return;
    }
    await this.built();
    await this.#client.call("start", { sessionId: this.#session });
    this.#started = true;
    if (this.#engine?.broker) {
      process.stderr.write(feedHint(this.#engine.broker, this.#sources, this.config["commit.interval.ms"] ?? "?") + "\n");
    }
  }

  /**
   * Starts the topology and serves its bundles until it stops.
   *
   * Resolves when stop() is called (at once if it was called before), on
   * SIGINT or SIGTERM (unless `signals: false`), or when the engine stops the
   * session; rejects with a ProcessingError when the topology fails (e.g. a
   * function threw for a record; the error names node, topic, partition and
   * offset), or with the error of a refused builder call.
   */
  async run(options: RunOptions = {}): Promise<void> {
    if (this.#running) {
      throw new FailedPreconditionError("failed_precondition", "run: the app is already running");
    }
    if (this.#closed !== undefined) {
      throw new FailedPreconditionError("failed_precondition", `run: app ${JSON.stringify(this.applicationId)} is closed`);
    }
    if (this.#stopSent !== undefined) {
      return; // stop() came first
    }
    if (!this.#started) {
      await this.built(); // a refused builder call rejects here and leaves the session usable
      if (this.#running) {
        throw new FailedPreconditionError("failed_precondition", "run: the app is already running");
      }
    }
    this.#running = true;
    let idle = noop;
    this.#idle = new Promise((resolve) => (idle = resolve));
    const onSignal = (): void => {
      removeSignals();
      void this.stop();
    };
    const removeSignals = (): void => {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    };
    if (options.signals ?? true) {
      process.on("SIGINT", onSignal);
      process.on("SIGTERM", onSignal);
    }
    try {
      if (!this.#stopRequested) {
        await this.start();
        await this.#serve();
      }
      await this.#sendStop();
      if (this.#started && this.#lastState !== "stopped" && this.#lastState !== "error") {
        this.#setState("stopped"); // the engine may not have said so in the last Exchange
      }
    } catch (e) {
      await this.#sendStop(); // best effort: the session must not outlive the host
      throw e;
    } finally {
      removeSignals();
      this.#running = false;
      idle();
    }
  }

  async #serve(): Promise<void> {
    const worker = randomUUID();
    const executor = new Executor(this.#functions, (req) => this.#client.call("read", { ...req, sessionId: this.#session }), this.#storeSpecs);
    let results: BundleResult[] = [];
    for (;;) {
      const stopping = this.#stopRequested;
      let resp;
      try {
        resp = await this.#client.call("exchange", {
          sessionId: this.#session,
          workerId: worker,
          results,
          maxBundles: stopping ? 0 : MAX_BUNDLES,
          waitMs: stopping ? 0 : WAIT_MS,
        });
      } catch (e) {
        if (e instanceof NotFoundError && (this.#stopRequested || this.#stopSent !== undefined)) {
          return; // the session ended as asked
        }
        throw e;
      }
      results = [];
      this.#setRestore(restoreFrom(resp.restore));
      const state = STATES[resp.state];
      if (state !== undefined) {
        this.#setState(state);
      }
      if (resp.state === StateEnum.ERROR) {
        await this.#sendStop();
        const message = resp.error || `app ${JSON.stringify(this.applicationId)} failed (the engine gave no reason)`;
        const r = resp.failedRecord;
        throw new ProcessingError(message, r ? { topic: r.topic, partition: r.partition, offset: r.offset, node: r.node } : {});
      }
      if (resp.state === StateEnum.STOPPED || stopping) {
        return;
      }
      if (resp.bundles.length === 0) {
        continue;
      }
      const done: BundleResult[] = [];
      const all = Promise.all(resp.bundles.map((b) => executor.process(b).then((r) => void done.push(r))));
      for (;;) {
        let timer: NodeJS.Timeout | undefined;
        const finished = await Promise.race([
          all.then(() => true),
          new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), DELIVER_AFTER_MS))),
        ]);
        clearTimeout(timer);
        if (finished) {
          break;
        }
        if (done.length > 0) {
          // Slow functions: hand over what is done, so the engine's tasks go
          // on and it does not take this worker for dead.
          await this.#client.call("exchange", {
            sessionId: this.#session,
            workerId: worker,
            results: done.splice(0),
            maxBundles: 0,
            waitMs: 0,
          });
        }
      }
      results = done;
    }
  }

  /**
   * Stops the application: run() delivers what it has processed, the engine
   * commits it and leaves the group, and run() resolves. Safe to call more
   * than once, and from inside a function of the topology (it does not wait
   * for run() to return).
   */
  async stop(): Promise<void> {
    this.#stopRequested = true;
    if (this.#running) {
      return; // run() sends Stop itself
    }
    await this.#sendStop();
  }

  #sendStop(): Promise<void> {
    if (this.#stopSent === undefined) {
      this.#stopSent = this.#client.call("stop", { sessionId: this.#session }).then(noop, (e: unknown) => {
        if (!(e instanceof NotFoundError)) {
          process.emitWarning(`polystreams: stopping app ${JSON.stringify(this.applicationId)}: ${String(e)}`);
        }
      });
    }
    return this.#stopSent;
  }

  /**
   * Stops the application (see stop()), waits for run() to return, and ends
   * the engine this App spawned. Safe to call more than once.
   */
  close(options: CloseOptions = {}): Promise<void> {
    this.#closed ??= this.#close(options.timeoutMs ?? 60_000);
    return this.#closed;
  }

  async #close(timeoutMs: number): Promise<void> {
    await this.stop();
    let timer: NodeJS.Timeout | undefined;
    const returned = await Promise.race([
      this.#idle.then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (!returned) {
      process.emitWarning(`polystreams: app ${JSON.stringify(this.applicationId)}: run() did not return within ${timeoutMs} ms of close()`);
    }
    await this.#sendStop();
    this.#client.close();
    await this.#engine?.close();
  }

  /**
   * The engine session this app runs in (the conformance runner's test
   * driver mode pipes into it).
   * @internal
   */
  get sessionId(): string {
    return this.#session;
  }

  /**
   * Calls an RPC for this app's session: the test driver's calls
   * (test_driver.ts), and Stop, which ends run()'s wait at once.
   * @internal
   */
  sessionCall<M extends "pipeInput" | "readOutput" | "advanceWallClock" | "query">(method: M, request: Omit<Input<M>, "sessionId">): Promise<Output<M>> {
    return this.#client.call<Method & M>(method, { ...request, sessionId: this.#session } as Input<M>);
  }

  /**
   * Sends Stop now, even while run() serves: the engine ends run()'s
   * Exchange at once (a test driver closes without waiting out its wait).
   * @internal
   */
  stopNow(): Promise<void> {
    this.#stopRequested = true;
    return this.#sendStop();
  }

  /** `await using app = await App.create(...)` closes the app at the end of the block. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
