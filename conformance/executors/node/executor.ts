/**
 * The conformance executor for Node.js: builds one case with the polystreams
 * SDK's public API (sdk-node's `polystreams` package, its sources run by
 * tsx), runs it, and reports to the runner as JSON lines on stdout.
 *
 * Usage: node --import tsx executor.ts SPEC.json (the runner writes the spec:
 * the case, the engine's URL, the application.id, the topic prefix and the
 * configuration). Events: built (with describe), build_error (step, code,
 * message), started, failed (code, message, topic, partition, offset, node),
 * dropped_records (count, when told to stop a started app), stopped. It stops its application when stdin says "stop" or closes. It
 * asserts nothing: the runner owns every assertion.
 */

import { readFileSync } from "node:fs";
import {
  App,
  type BuiltinJoiner,
  CogroupedKStream,
  type Config,
  EmitStrategy,
  JoinWindows,
  type GlobalKTable,
  KGroupedStream,
  KGroupedTable,
  KStream,
  KTable,
  type Materialized,
  SessionWindowedCogroupedKStream,
  TimeWindowedCogroupedKStream,
  PolystreamsError,
  ProcessingError,
  type Reducer,
  type SerdeName,
  SessionWindowedKStream,
  SessionWindows,
  SlidingWindows,
  type StoreBuilder,
  Stores,
  Suppressed,
  TimeWindowedKStream,
  TimeWindows,
  type TimestampExtractor,
} from "../../../sdk-node/src/index.js";
import { type Fn, type FnRef, fn, processor, transformer } from "./catalogue.js";


interface Step {
  op: string;
  timestamp_extractor?: "FailOnInvalidTimestamp" | "LogAndSkipOnInvalidTimestamp" | "UsePartitionTimeOnInvalidTimestamp";
  timestamp_extractor_fn?: FnRef;
  time_limit_ms?: number;
  buffer?: { max_records?: number; max_bytes?: number; when_full?: "emit_early" | "shut_down" };
  as?: string;
  from?: string;
  name?: string;
  topics?: string[];
  topic?: string;
  extract?: "key";
  label?: string;
  key?: SerdeName;
  value?: SerdeName;
  fn?: FnRef;
  init?: FnRef;
  subtractor?: FnRef;
  merger?: FnRef;
  foreign_key?: FnRef;
  builtin?: Reducer;
  builtin_joiner?: BuiltinJoiner;
  materialized?: { store?: string; key?: SerdeName; value?: SerdeName; retention_ms?: number; versioned?: { history_retention_ms: number; segment_interval_ms?: number } };
  branch?: string;
  other?: string;
  table?: string;
  join_windows?: { time_difference_ms: number; grace_ms?: number; before_ms?: number; after_ms?: number };
  store_name?: string;
  key_mapper?: FnRef;
  partitions?: number;
  strategy?: "on_window_update" | "on_window_close";
  branches?: { fn: FnRef; name?: string }[];
  default_branch?: boolean;
  default_name?: string;
  windows?: { type: "time" | "sliding" | "session"; size_ms?: number; advance_ms?: number; time_difference_ms?: number; inactivity_gap_ms?: number; grace_ms?: number };
  processor?: FnRef;
  transformer?: FnRef;
  stores?: string[];
  type?: "key_value" | "timestamped_key_value" | "window";
  retention_ms?: number;
  window_size_ms?: number;
  retain_duplicates?: boolean;
  versioned?: { history_retention_ms: number; segment_interval_ms?: number };
  logging?: boolean;
  caching?: boolean;
}

/** An add_state_store step's store: name and serdes (a key-value store; type, window retention and size, logging and caching when given). */
function storeBuilder(step: Step): StoreBuilder {
  const options = {
    ...(step.key !== undefined ? { key: step.key } : {}),
    ...(step.value !== undefined ? { value: step.value } : {}),
    ...(step.logging === false ? { loggingDisabled: true } : {}),
    ...(step.caching ? { caching: true } : {}),
  };
  if (step.versioned !== undefined) {
    return Stores.versionedKeyValueStore(step.name!, {
      ...options,
      historyRetentionMs: step.versioned.history_retention_ms,
      ...(step.versioned.segment_interval_ms ? { segmentIntervalMs: step.versioned.segment_interval_ms } : {}),
    });
  }
  if (step.type === "window") {
    return Stores.windowStore(step.name!, {
      ...options,
      retentionMs: step.retention_ms!,
      windowSizeMs: step.window_size_ms!,
      ...(step.retain_duplicates ? { retainDuplicates: true } : {}),
    });
  }
  if (step.type === "timestamped_key_value") {
    return Stores.timestampedKeyValueStore(step.name!, options);
  }
  return Stores.keyValueStore(step.name!, options);
}

interface Spec {
  case: { topology: Step[] };
  engine: string;
  application_id: string;
  topic_prefix: string;
  config: Record<string, string>;
  start: boolean;
}

function emit(event: string, fields: Record<string, unknown> = {}): void {
  process.stdout.write(JSON.stringify({ event, ...fields }) + "\n");
}

/** The step's joiner: its built-in (builtin_joiner), else fn. */
function joinerOf(step: Step): any {
  return step.builtin_joiner ?? fn(step.fn!, "joiner");
}

type AnyNode =
  | KStream<any, any>
  | KGroupedStream<any, any>
  | KTable<any, any>
  | KGroupedTable<any, any>
  | TimeWindowedKStream<any, any>
  | SessionWindowedKStream<any, any>
  | CogroupedKStream<any, any>
  | TimeWindowedCogroupedKStream<any, any>
  | SessionWindowedCogroupedKStream<any, any>
  | GlobalKTable<any, any>;

function materialized(step: Step): Materialized | undefined {
  const m = step.materialized;
  if (m === undefined) return undefined;
  return {
    storeName: m.store ?? "",
    ...(m.key ? { key: m.key } : {}),
    ...(m.value ? { value: m.value } : {}),
    ...(m.retention_ms !== undefined ? { retentionMs: m.retention_ms } : {}),
    ...(m.versioned !== undefined ? { versionedMs: m.versioned.history_retention_ms } : {}),
    ...(m.versioned?.segment_interval_ms !== undefined ? { segmentIntervalMs: m.versioned.segment_interval_ms } : {}),
  };
}

/** windowedBy's windows, with the factory Kafka Streams users call: ...WithNoGrace when the case gives no grace. */
function windows(w: NonNullable<Step["windows"]>): TimeWindows | SlidingWindows | SessionWindows {
  const grace = w.grace_ms;
  if (w.type === "time") {
    const t = grace === undefined ? TimeWindows.ofSizeWithNoGrace(w.size_ms!) : TimeWindows.ofSizeAndGrace(w.size_ms!, grace);
    return w.advance_ms === undefined ? t : t.advanceBy(w.advance_ms);
  }
  if (w.type === "sliding") {
    return grace === undefined
      ? SlidingWindows.ofTimeDifferenceWithNoGrace(w.time_difference_ms!)
      : SlidingWindows.ofTimeDifferenceAndGrace(w.time_difference_ms!, grace);
  }
  return grace === undefined
    ? SessionWindows.ofInactivityGapWithNoGrace(w.inactivity_gap_ms!)
    : SessionWindows.ofInactivityGapAndGrace(w.inactivity_gap_ms!, grace);
}

/** KStream.split: the branches in order, then the default branch or none. */
function split(node: KStream<any, any>, step: Step): Promise<Map<string, KStream<any, any>>> {
  const b = node.split(step.name !== undefined ? { name: step.name } : {});
  for (const br of step.branches ?? []) {
    b.branch(fn(br.fn, "predicate"), br.name !== undefined ? { name: br.name } : {});
  }
  return step.default_branch ? b.defaultBranch(step.default_name !== undefined ? { name: step.default_name } : {}) : b.noDefaultBranch();
}

/** A stream-table join's method, when the SDK has it (it comes with branch joinsdk; until then the case fails, listed in known-failures/node.json). */
type JoinMethod = (table: KTable<any, any>, joiner: Fn, options: { value?: SerdeName; name?: string }) => KStream<any, any>;

function join(node: KStream<any, any>, method: "join" | "leftJoin", table: KTable<any, any>, joiner: Fn, options: { value?: SerdeName; name?: string }): KStream<any, any> {
  const m = (node as unknown as Partial<Record<typeof method, JoinMethod>>)[method];
  if (m === undefined) {
    throw new Error(`executor: the Node SDK has no KStream.${method} yet`);
  }
  return m.call(node, table, joiner, options);
}

/** Performs one step; resolves with its node (undefined for a terminal step) once the engine has answered. labels are the labelled nodes so far (merge's other stream, a join's table). */
async function apply(app: App, step: Step, node: AnyNode | undefined, prefix: string, labels: Map<string, AnyNode>): Promise<AnyNode | undefined> {
  const named = step.name !== undefined ? { name: step.name } : {};
  const key = step.key !== undefined ? { key: step.key } : {};
  const value = step.value !== undefined ? { value: step.value } : {};
  let out: AnyNode | undefined;
  const extractor =
    step.timestamp_extractor_fn !== undefined
      ? { timestampExtractor: fn(step.timestamp_extractor_fn, "extractor") as TimestampExtractor<unknown, unknown> }
      : step.timestamp_extractor !== undefined
        ? { timestampExtractor: step.timestamp_extractor }
        : {};
  if (step.op === "stream") {
    out = app.stream((step.topics ?? []).map((t) => prefix + t), { ...key, ...value, ...named, ...extractor });
  } else if (step.op === "table") {
    const m = materialized(step);
    out = app.table(prefix + step.topic, { ...key, ...value, ...named, ...extractor, ...(m !== undefined ? { materialized: m } : {}) });
  } else if (step.op === "global_table") {
    const m = materialized(step);
    out = app.globalTable(prefix + step.topic, { ...key, ...value, ...named, ...(m !== undefined ? { materialized: m } : {}) });
  } else if (step.op === "add_state_store") {
    // The Processor API (docs/design/processor.md): a store processors name.
    await app.addStateStore(storeBuilder(step));
    return undefined;
  } else if (node instanceof KStream) {
    const f = step.fn;
    switch (step.op) {
      case "process":
      case "process_values": {
        const stores = step.stores ?? [];
        const supplier = processor(step.processor!, stores) as () => any;
        const options = { stores, ...value, ...named };
        out = step.op === "process" ? node.process(supplier, { ...key, ...options }) : node.processValues(supplier, options);
        break;
      }
      case "to":
        if (step.extract === "key") {
          // Named topic_by_key: describe() prints it, as the Java executor's toString().
          const topic = prefix + step.topic;
          const topic_by_key = (k: unknown): string => topic + String(k);
          await node.to(topic_by_key, { ...key, ...value, ...named });
          return undefined;
        }
        await node.to(prefix + step.topic, { ...key, ...value, ...named });
        return undefined;
      case "foreach":
        await node.foreach(fn(f!, "action"), named);
        return undefined;
      case "print":
        await node.print({ ...(step.label === undefined ? {} : { label: step.label }), ...named });
        return undefined;
      case "group_by_key":
        out = node.groupByKey({ ...key, ...value, ...named });
        break;
      case "merge":
        out = node.merge(labels.get(step.other!) as KStream<any, any>, named);
        break;
      case "to_table": {
        const m = materialized(step);
        out = node.toTable({ ...named, ...(m !== undefined ? { materialized: m } : {}) });
        break;
      }
      case "repartition":
        out = node.repartition({ ...named, ...(step.partitions !== undefined ? { partitions: step.partitions } : {}) });
        break;
      case "join":
      case "left_join":
      case "outer_join":
        if (step.other !== undefined) {
          const jw = step.join_windows!;
          let w =
            jw.grace_ms !== undefined
              ? JoinWindows.ofTimeDifferenceAndGrace(jw.time_difference_ms, jw.grace_ms)
              : JoinWindows.ofTimeDifferenceWithNoGrace(jw.time_difference_ms);
          if (jw.before_ms !== undefined) {
            w = w.before(jw.before_ms);
          }
          if (jw.after_ms !== undefined) {
            w = w.after(jw.after_ms);
          }
          const other = labels.get(step.other) as KStream<any, any>;
          const options = { ...value, ...named, ...(step.store_name !== undefined ? { storeName: step.store_name } : {}) };
          const joiner = joinerOf(step);
          out =
            step.op === "join"
              ? node.join(other, joiner, w, options)
              : step.op === "left_join"
                ? node.leftJoin(other, joiner, w, options)
                : node.outerJoin(other, joiner, w, options);
          break;
        }
        if (step.key_mapper !== undefined) {
          const g = labels.get(step.table!) as GlobalKTable<any, any>;
          const km = fn(step.key_mapper, "key") as (k: any, v: any) => unknown;
          out = step.op === "join" ? node.join(g, km, joinerOf(step), { ...value, ...named }) : node.leftJoin(g, km, joinerOf(step), { ...value, ...named });
          break;
        }
        out = join(node, step.op === "join" ? "join" : "leftJoin", labels.get(step.table!) as KTable<any, any>, joinerOf(step), { ...value, ...named });
        break;
      case "map_values":
        out = node.mapValues(fn(f!, "mapper"), { ...value, ...named });
        break;
      case "flat_map_values":
        out = node.flatMapValues(fn(f!, "flat") as (v: unknown) => Iterable<unknown>, { ...value, ...named });
        break;
      case "map_values_with_key":
        out = node.mapValuesWithKey(fn(f!, "mapper_with_key"), { ...value, ...named });
        break;
      case "flat_map_values_with_key":
        out = node.flatMapValuesWithKey(fn(f!, "flat_with_key") as (k: unknown, v: unknown) => Iterable<unknown>, { ...value, ...named });
        break;
      case "flat_map":
        out = node.flatMap(fn(f!, "flat_map") as (k: unknown, v: unknown) => Iterable<readonly [unknown, unknown]>, {
          ...key,
          ...value,
          ...named,
        });
        break;
      case "filter":
        out = node.filter(fn(f!, "predicate"), named);
        break;
      case "filter_not":
        out = node.filterNot(fn(f!, "predicate"), named);
        break;
      case "map":
        out = node.map(fn(f!, "map") as (k: unknown, v: unknown) => readonly [unknown, unknown], { ...key, ...value, ...named });
        break;
      case "select_key":
        out = node.selectKey(fn(f!, "key"), { ...key, ...named });
        break;
      case "group_by":
        out = node.groupBy(fn(f!, "key"), { ...key, ...value, ...named });
        break;
      case "peek":
        out = node.peek(fn(f!, "action"), named);
        break;
    }
  } else if (node instanceof TimeWindowedKStream || node instanceof SessionWindowedKStream) {
    const m = materialized(step);
    const opts = { ...named, ...(m !== undefined ? { materialized: m } : {}) };
    switch (step.op) {
      case "emit_strategy": {
        const strategy = step.strategy === "on_window_close" ? EmitStrategy.onWindowClose() : EmitStrategy.onWindowUpdate();
        out = node instanceof SessionWindowedKStream ? node.emitStrategy(strategy) : node.emitStrategy(strategy);
        break;
      }
      case "count":
        out = node.count(opts);
        break;
      case "reduce":
        out = node.reduce(step.builtin ?? (fn(step.fn!, "reducer") as (a: unknown, v: unknown) => unknown), opts);
        break;
      case "aggregate":
        if (node instanceof SessionWindowedKStream) {
          // Undefined when the case leaves it out: the SDK or the engine refuses it.
          const merger = step.merger !== undefined ? fn(step.merger, "merger") : undefined;
          out = node.aggregate(fn(step.init!, "init"), fn(step.fn!, "aggregator"), merger as Fn, opts);
        } else {
          out = node.aggregate(fn(step.init!, "init"), fn(step.fn!, "aggregator"), opts);
        }
        break;
    }
  } else if (node instanceof CogroupedKStream || node instanceof TimeWindowedCogroupedKStream || node instanceof SessionWindowedCogroupedKStream) {
    const m = materialized(step);
    const opts = { ...named, ...(m !== undefined ? { materialized: m } : {}) };
    switch (step.op) {
      case "cogroup":
        if (node instanceof CogroupedKStream) {
          out = node.cogroup(labels.get(step.other!) as KGroupedStream<any, any>, fn(step.fn!, "aggregator"));
        }
        break;
      case "windowed_by":
        if (node instanceof CogroupedKStream) {
          const w = windows(step.windows!);
          out = w instanceof SessionWindows ? node.windowedBy(w) : node.windowedBy(w);
        }
        break;
      case "aggregate":
        if (node instanceof SessionWindowedCogroupedKStream) {
          // Undefined when the case leaves it out: the SDK or the engine refuses it.
          const merger = step.merger !== undefined ? fn(step.merger, "merger") : undefined;
          out = node.aggregate(fn(step.init!, "init"), merger as Fn, opts);
        } else {
          out = node.aggregate(fn(step.init!, "init"), opts);
        }
        break;
    }
  } else if (node instanceof KGroupedStream) {
    const m = materialized(step);
    const opts = { ...named, ...(m !== undefined ? { materialized: m } : {}) };
    switch (step.op) {
      case "cogroup":
        out = node.cogroup(fn(step.fn!, "aggregator"));
        break;
      case "windowed_by": {
        const w = windows(step.windows!);
        out = w instanceof SessionWindows ? node.windowedBy(w) : node.windowedBy(w);
        break;
      }
      case "count":
        out = node.count(opts);
        break;
      case "reduce":
        out = node.reduce(step.builtin ?? (fn(step.fn!, "reducer") as (a: unknown, v: unknown) => unknown), opts);
        break;
      case "aggregate":
        out = node.aggregate(fn(step.init!, "init"), fn(step.fn!, "aggregator"), opts);
        break;
    }
  } else if (node instanceof KTable) {
    const m = materialized(step);
    const opts = { ...named, ...(m !== undefined ? { materialized: m } : {}) };
    switch (step.op) {
      case "transform_values": {
        const stores = step.stores ?? [];
        out = node.transformValues(transformer(step.transformer!, stores), { stores, ...value, ...opts });
        break;
      }
      case "to_stream":
        out = step.fn === undefined ? node.toStream(named) : node.toStream(fn(step.fn, "key"), { ...key, ...named });
        break;
      case "suppress": {
        const b = step.buffer;
        const buffer =
          b !== undefined && (b.max_records !== undefined || b.max_bytes !== undefined)
            ? { maxRecords: b.max_records, maxBytes: b.max_bytes, whenFull: b.when_full ?? "emit_early" }
            : undefined;
        const so = { ...named, ...(buffer !== undefined ? { buffer } : {}) };
        out = node.suppress(step.time_limit_ms !== undefined ? Suppressed.untilTimeLimit(step.time_limit_ms, so) : Suppressed.untilWindowCloses(so));
        break;
      }
      case "filter":
        out = node.filter(fn(step.fn!, "predicate"), opts);
        break;
      case "filter_not":
        out = node.filterNot(fn(step.fn!, "predicate"), opts);
        break;
      case "map_values":
        out = node.mapValues(fn(step.fn!, "mapper"), { ...value, ...opts });
        break;
      case "join":
      case "left_join":
      case "outer_join": {
        const other = labels.get(step.table!) as KTable<any, any>;
        const j = joinerOf(step);
        const o = { ...value, ...opts };
        out = step.op === "join" ? node.join(other, j, o) : step.op === "left_join" ? node.leftJoin(other, j, o) : node.outerJoin(other, j, o);
        break;
      }
      case "foreign_key_join":
      case "left_foreign_key_join": {
        const other = labels.get(step.table!) as KTable<any, any>;
        const join = step.op === "foreign_key_join" ? node.foreignKeyJoin.bind(node) : node.leftForeignKeyJoin.bind(node);
        out = join(other, fn(step.foreign_key!, "mapper"), joinerOf(step), { ...value, ...opts });
        break;
      }
      case "group_by":
        out = node.groupBy(fn(step.fn!, "map") as (k: unknown, v: unknown) => readonly [unknown, unknown], { ...key, ...value, ...named });
        break;
    }
  } else if (node instanceof KGroupedTable) {
    const m = materialized(step);
    const opts = { ...named, ...(m !== undefined ? { materialized: m } : {}) };
    // Undefined when the case leaves it out: the SDK or the engine refuses it.
    const sub = step.subtractor !== undefined ? fn(step.subtractor, step.op === "reduce" ? "reducer" : "aggregator") : undefined;
    switch (step.op) {
      case "count":
        out = node.count(opts);
        break;
      case "reduce":
        if (step.builtin !== undefined) {
          // Only "sum" type-checks on a grouped table; the engine refuses the others.
          out = node.reduce(step.builtin as "sum", opts);
        } else {
          out = node.reduce(fn(step.fn!, "reducer"), sub as Fn, opts);
        }
        break;
      case "aggregate":
        out = node.aggregate(fn(step.init!, "init"), fn(step.fn!, "aggregator"), sub as Fn, opts);
        break;
    }
  }
  if (out === undefined) {
    throw new Error(`executor: ${step.op} cannot apply to ${String(node)}`);
  }
  await out.handle;
  return out;
}

function codeOf(e: unknown): string {
  if (e instanceof PolystreamsError) return e.code;
  if (e instanceof TypeError || e instanceof RangeError) return "invalid_argument"; // the SDK's own argument checks
  return "unknown";
}

async function main(): Promise<void> {
  const spec = JSON.parse(readFileSync(process.argv[2]!, "utf8")) as Spec;
  const { "processing.guarantee": guarantee, "commit.interval.ms": commit, "state.dir": stateDir, ...extra } = spec.config;
  const config: Config = {
    ...(guarantee !== undefined ? { processingGuarantee: guarantee as Config["processingGuarantee"] & string } : {}),
    ...(commit !== undefined ? { commitIntervalMs: Number(commit) } : {}),
    ...(stateDir !== undefined ? { stateDir } : {}),
    extra,
  };
  let told!: () => void;
  const stop = new Promise<void>((resolve) => (told = resolve));
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (chunk: string) => {
    if (chunk.split("\n").some((l) => l.trim() === "stop")) told();
  });
  process.stdin.on("end", () => told());

  const app = await App.create(spec.application_id, { engine: spec.engine, config });
  try {
    const labels = new Map<string, AnyNode>();
    const splits = new Map<string, Map<string, KStream<any, any>>>(); // a split's streams, by its label
    let prev: AnyNode | undefined;
    for (const [i, step] of spec.case.topology.entries()) {
      const input = step.branch !== undefined ? splits.get(step.from!)!.get(step.branch) : step.from !== undefined ? labels.get(step.from) : prev;
      let out: AnyNode | undefined;
      try {
        if (step.op === "split") {
          // Reached only through its label.
          splits.set(step.as!, await split(input as KStream<any, any>, step));
          continue;
        }
        out = await apply(app, step, input, spec.topic_prefix, labels);
      } catch (e) {
        emit("build_error", { step: i, code: codeOf(e), message: e instanceof Error ? e.message : String(e) });
        await stop;
        return;
      }
      if (out !== undefined) {
        prev = out;
        if (step.as !== undefined) labels.set(step.as, out);
      }
    }
    emit("built", { describe: await app.describe() });
    if (!spec.start) {
      await stop;
      return;
    }
    await app.start();
    emit("started", { session: app.sessionId }); // test driver mode (runner -driver) pipes into it
    void stop.then(async () => {
      try {
        emit("dropped_records", { count: await app.droppedRecords() });
      } catch (e) {
        process.stderr.write(`executor: droppedRecords: ${e instanceof Error ? e.message : String(e)}\n`);
      }
      await app.stop();
    });
    try {
      await app.run({ signals: false });
    } catch (e) {
      if (!(e instanceof ProcessingError)) throw e;
      emit("failed", {
        code: e.code,
        message: e.message,
        topic: e.topic ?? "",
        partition: e.partition ?? 0,
        offset: Number(e.offset ?? 0n),
        node: e.node ?? "",
      });
      await stop;
      return;
    }
    emit("stopped");
  } finally {
    await app.close();
    process.stdin.destroy();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`executor: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
