/** Application configuration, named as Kafka Streams names it. */

/** Kafka Streams' `processing.guarantee`. */
export type ProcessingGuarantee = "at_least_once" | "exactly_once_v2";

/** Kafka Streams' `auto.offset.reset` (and `Consumed.withOffsetResetPolicy`). */
export type OffsetReset = "earliest" | "latest" | "none";

/** Kafka Streams' `default.production.exception.handler`. */
export type ProductionExceptionHandler = "fail" | "continue";

/**
 * Kafka Streams configuration for an App.
 *
 * The common settings are fields; anything else goes in `extra` under its
 * Kafka Streams (or `polystreams.*`) name, e.g. `{ extra: { "sasl.mechanism":
 * "PLAIN", "sasl.username": "u", "sasl.password": "p",
 * "polystreams.bundle.max.records": 5000 } }`. An absent field leaves the
 * setting at the engine's documented default (`processing.guarantee`
 * at_least_once; `commit.interval.ms` 30000, or 100 under exactly_once_v2;
 * `num.standby.replicas` 0; `max.task.idle.ms` 0).
 * What a failed record does is set in `extra` too, by Kafka Streams' names:
 * `default.deserialization.exception.handler` and
 * `processing.exception.handler` (`fail`, `log_and_continue` or
 * `dead_letter`) and `errors.deadletterqueue.topic.name` (docs/errors.md).
 */
export interface Config {
  processingGuarantee?: ProcessingGuarantee;
  commitIntervalMs?: number;
  /**
   * `statestore.cache.max.bytes` (default 10 MiB): tables forward the latest
   * update per key at each commit; 0 forwards every update at once.
   */
  statestoreCacheMaxBytes?: number;
  /**
   * `num.standby.replicas` (default 0): warm copies of each task's stores
   * kept on that many other instances, so that a task moving there restores
   * little (docs/scale-out.md).
   */
  numStandbyReplicas?: number;
  /**
   * `max.task.idle.ms` (default 0): a task reading several partitions (a
   * join's, a merge's) waits for the records already on the broker of each
   * before it picks the next record by timestamp; -1 never waits; a positive
   * value also waits that long for new records (docs/design/joins.md).
   */
  maxTaskIdleMs?: number;
  /**
   * `auto.offset.reset` (default `earliest`, Kafka Streams'): where a source
   * partition with no committed offset starts; `none` fails the application
   * naming the partition. A source's `offsetReset` overrides it.
   */
  autoOffsetReset?: OffsetReset;
  /**
   * `default.key.serde` / `default.value.serde` (default `bytes`): the serdes
   * of a source that names none. Give the matching type parameters to
   * stream()/table() (`app.stream<"string", "json">("t")`) to type them.
   */
  defaultKeySerde?: string;
  defaultValueSerde?: string;
  /**
   * `default.production.exception.handler` (default `fail`): a record the
   * broker refuses for good (too large, invalid) fails the application naming
   * topic and partition; `continue` logs, counts and skips it.
   */
  defaultProductionExceptionHandler?: ProductionExceptionHandler;
  /**
   * `num.stream.threads` (default: no bound): how many of the engine's tasks
   * process a batch at once for this application.
   */
  numStreamThreads?: number;
  stateDir?: string;
  extra?: Readonly<Record<string, string | number | boolean>>;
}

/** The configuration as the engine takes it: Kafka Streams' dotted names, string values. */
export function properties(config: Config = {}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(config.extra ?? {})) {
    out[k] = String(v);
  }
  if (config.processingGuarantee !== undefined) {
    out["processing.guarantee"] = config.processingGuarantee;
  }
  if (config.statestoreCacheMaxBytes !== undefined) {
    out["statestore.cache.max.bytes"] = String(config.statestoreCacheMaxBytes);
  }
  if (config.commitIntervalMs !== undefined) {
    out["commit.interval.ms"] = String(config.commitIntervalMs);
  }
  if (config.numStandbyReplicas !== undefined) {
    out["num.standby.replicas"] = String(config.numStandbyReplicas);
  }
  if (config.maxTaskIdleMs !== undefined) {
    out["max.task.idle.ms"] = String(config.maxTaskIdleMs);
  }
  if (config.stateDir !== undefined) {
    out["state.dir"] = config.stateDir;
  }
  if (config.autoOffsetReset !== undefined) {
    out["auto.offset.reset"] = config.autoOffsetReset;
  }
  if (config.defaultKeySerde !== undefined) {
    out["default.key.serde"] = config.defaultKeySerde;
  }
  if (config.defaultValueSerde !== undefined) {
    out["default.value.serde"] = config.defaultValueSerde;
  }
  if (config.defaultProductionExceptionHandler !== undefined) {
    out["default.production.exception.handler"] = config.defaultProductionExceptionHandler;
  }
  if (config.numStreamThreads !== undefined) {
    out["num.stream.threads"] = String(config.numStreamThreads);
  }
  return out;
}

/**
 * Whether a configuration key holds a credential, whose value is never
 * printed (the engine applies the same rule).
 */
export function isSecret(key: string): boolean {
  const k = key.toLowerCase();
  return k.includes("password") || k.includes("secret") || k.includes("jaas") || k.includes("token") || k.endsWith(".key");
}

/** The configuration with credential values replaced by `[hidden]`. */
export function redact(config: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(config)) {
    out[k] = isSecret(k) ? "[hidden]" : v;
  }
  return out;
}
