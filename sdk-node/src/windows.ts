/**
 * Windows: the window specs of `windowedBy`, `Suppressed` (and its
 * `BufferConfig`), and the
 * `Windowed` keys of a windowed aggregation (Kafka Streams' `TimeWindows`,
 * `SlidingWindows`, `SessionWindows`, `Suppressed` and `Windowed`).
 *
 * Durations are numbers of milliseconds. The specs check types only; the
 * engine checks values and names the field and value it refuses (`size_ms
 * 0`, `advance_ms 90000 > size_ms 60000`, `grace_ms -1`), rejecting the
 * windowed stream's `handle` with an InvalidArgumentError.
 */

import type { MessageInitShape } from "@bufbuild/protobuf";
import { BufferFull as BufferFullEnum, EmitStrategy as EmitStrategyEnum, type SuppressBufferSchema, type WindowedByOpSchema } from "./gen/polystreams/v1alpha1/engine_pb.js";
import { typeName } from "./errors.js";

/**
 * A key of a windowed aggregation: the grouped key and its window, `start`
 * and `end` in epoch milliseconds (Kafka Streams' `Windowed<K>`). Time
 * windows end at `start + size` (exclusive); sliding windows' bounds are
 * both inclusive; a session spans its first record's time to its last's.
 *
 * On a topic, a time-windowed key is the inner key's bytes and the start as
 * 8 big-endian bytes (serde `windowed(<inner>,<size ms>)`, Kafka's
 * `TimeWindowedSerializer`); a session-windowed key is the inner key's
 * bytes, the end, then the start (`session-windowed(<inner>)`,
 * `SessionWindowedSerializer`).
 */
export class Windowed<K = unknown> {
  constructor(
    readonly key: K,
    readonly start: number,
    readonly end: number,
  ) {
    Object.freeze(this);
  }

  toString(): string {
    return `Windowed(${String(this.key)}, ${this.start}, ${this.end})`;
  }
}

function ms(v: unknown, what: string): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v)) {
    throw new TypeError(`${what}: want an integer number of milliseconds, got ${typeof v === "number" ? String(v) : typeName(v)}`);
  }
  return v;
}

/** The window oneof of a WindowedByOp. @internal */
export type WindowsMessage = MessageInitShape<typeof WindowedByOpSchema>["windows"];

/**
 * Fixed-size windows aligned to the epoch: tumbling, or hopping with
 * `advanceBy`. A record at `ts` belongs to every window with `start <= ts <
 * start + size`.
 */
export class TimeWindows {
  private constructor(
    readonly sizeMs: number,
    readonly advanceMs: number,
    readonly graceMs: number,
  ) {
    Object.freeze(this);
  }

  /** Tumbling windows of `sizeMs` that accept no record after their end. */
  static ofSizeWithNoGrace(sizeMs: number): TimeWindows {
    const s = ms(sizeMs, "TimeWindows.ofSizeWithNoGrace: size");
    return new TimeWindows(s, s, 0);
  }

  /** Tumbling windows of `sizeMs` that accept records up to `graceMs` after their end (in stream time). */
  static ofSizeAndGrace(sizeMs: number, graceMs: number): TimeWindows {
    const s = ms(sizeMs, "TimeWindows.ofSizeAndGrace: size");
    return new TimeWindows(s, s, ms(graceMs, "TimeWindows.ofSizeAndGrace: grace"));
  }

  /** Hopping windows: a new window starts every `advanceMs` (at most the size). */
  advanceBy(advanceMs: number): TimeWindows {
    return new TimeWindows(this.sizeMs, ms(advanceMs, "TimeWindows.advanceBy: advance"), this.graceMs);
  }

  /** @internal */
  toWindows(): WindowsMessage {
    return { case: "time", value: { sizeMs: BigInt(this.sizeMs), advanceMs: BigInt(this.advanceMs), graceMs: BigInt(this.graceMs) } };
  }
}

/**
 * A stream-stream join's windows (Kafka Streams' `JoinWindows`): a record
 * at `ts` joins the other stream's records of its key at `[ts - before, ts +
 * after]` (the other stream's records see the mirrored window). Records
 * later than stream time minus `before + after + grace` are dropped; a
 * left/outer join emits a record that joined nothing once its window closed.
 */
export class JoinWindows {
  private constructor(
    readonly beforeMs: number,
    readonly afterMs: number,
    readonly graceMs: number,
  ) {
    Object.freeze(this);
  }

  /** Records at most `timeDifferenceMs` apart join; no late record does. */
  static ofTimeDifferenceWithNoGrace(timeDifferenceMs: number): JoinWindows {
    const d = ms(timeDifferenceMs, "JoinWindows.ofTimeDifferenceWithNoGrace: time difference");
    return new JoinWindows(d, d, 0);
  }

  /** Records at most `timeDifferenceMs` apart join; records up to `graceMs` late (in stream time) still do. */
  static ofTimeDifferenceAndGrace(timeDifferenceMs: number, graceMs: number): JoinWindows {
    const d = ms(timeDifferenceMs, "JoinWindows.ofTimeDifferenceAndGrace: time difference");
    return new JoinWindows(d, d, ms(graceMs, "JoinWindows.ofTimeDifferenceAndGrace: grace"));
  }

  /** How much earlier the other stream's records may be (`JoinWindows.before`). */
  before(timeDifferenceMs: number): JoinWindows {
    return new JoinWindows(ms(timeDifferenceMs, "JoinWindows.before: time difference"), this.afterMs, this.graceMs);
  }

  /** How much later the other stream's records may be (`JoinWindows.after`). */
  after(timeDifferenceMs: number): JoinWindows {
    return new JoinWindows(this.beforeMs, ms(timeDifferenceMs, "JoinWindows.after: time difference"), this.graceMs);
  }

  /** @internal */
  toMessage(): { beforeMs: bigint; afterMs: bigint; graceMs: bigint } {
    return { beforeMs: BigInt(this.beforeMs), afterMs: BigInt(this.afterMs), graceMs: BigInt(this.graceMs) };
  }
}

/**
 * Windows of a fixed time difference that slide with the records (Kafka
 * Streams' KStreamSlidingWindowAggregate): two records share a window when
 * at most `timeDifferenceMs` apart; both bounds are inclusive.
 */
export class SlidingWindows {
  private constructor(
    readonly timeDifferenceMs: number,
    readonly graceMs: number,
  ) {
    Object.freeze(this);
  }

  static ofTimeDifferenceWithNoGrace(timeDifferenceMs: number): SlidingWindows {
    return new SlidingWindows(ms(timeDifferenceMs, "SlidingWindows.ofTimeDifferenceWithNoGrace: time difference"), 0);
  }

  static ofTimeDifferenceAndGrace(timeDifferenceMs: number, graceMs: number): SlidingWindows {
    return new SlidingWindows(
      ms(timeDifferenceMs, "SlidingWindows.ofTimeDifferenceAndGrace: time difference"),
      ms(graceMs, "SlidingWindows.ofTimeDifferenceAndGrace: grace"),
    );
  }

  /** @internal */
  toWindows(): WindowsMessage {
    return { case: "sliding", value: { timeDifferenceMs: BigInt(this.timeDifferenceMs), graceMs: BigInt(this.graceMs) } };
  }
}

/**
 * Sessions: a key's records at most `inactivityGapMs` apart share one; a
 * record between two sessions merges them (an aggregate's merger runs).
 */
export class SessionWindows {
  private constructor(
    readonly inactivityGapMs: number,
    readonly graceMs: number,
  ) {
    Object.freeze(this);
  }

  static ofInactivityGapWithNoGrace(inactivityGapMs: number): SessionWindows {
    return new SessionWindows(ms(inactivityGapMs, "SessionWindows.ofInactivityGapWithNoGrace: inactivity gap"), 0);
  }

  static ofInactivityGapAndGrace(inactivityGapMs: number, graceMs: number): SessionWindows {
    return new SessionWindows(
      ms(inactivityGapMs, "SessionWindows.ofInactivityGapAndGrace: inactivity gap"),
      ms(graceMs, "SessionWindows.ofInactivityGapAndGrace: grace"),
    );
  }

  /** @internal */
  toWindows(): WindowsMessage {
    return { case: "session", value: { inactivityGapMs: BigInt(this.inactivityGapMs), graceMs: BigInt(this.graceMs) } };
  }
}

/**
 * When a windowed aggregation forwards its results (Kafka Streams'
 * `EmitStrategy`, KIP-825), set with `emitStrategy` on a windowed stream.
 * `onWindowUpdate()` (the default) forwards every update of a window;
 * `onWindowClose()` only each window's final result, once, when stream time
 * passes the window's end plus grace (session windows: end + inactivity gap
 * + grace). The engine keeps the last close time it emitted with the store,
 * so a restart neither emits a window again nor loses one.
 */
export class EmitStrategy {
  private constructor(readonly type: "onWindowUpdate" | "onWindowClose") {
    Object.freeze(this);
  }

  /** `EmitStrategy.onWindowUpdate()`: every update (the default). */
  static onWindowUpdate(): EmitStrategy {
    return new EmitStrategy("onWindowUpdate");
  }

  /** `EmitStrategy.onWindowClose()`: only final results. */
  static onWindowClose(): EmitStrategy {
    return new EmitStrategy("onWindowClose");
  }

  /** @internal */
  toProto(): EmitStrategyEnum {
    return this.type === "onWindowClose" ? EmitStrategyEnum.ON_WINDOW_CLOSE : EmitStrategyEnum.ON_WINDOW_UPDATE;
  }
}

/**
 * The bounds of a suppression's buffer (Kafka Streams'
 * `Suppressed.BufferConfig`): at most `maxRecords` keys and `maxBytes`
 * bytes (absent: no bound; bytes are counted as Kafka Streams counts them:
 * key, values, the record's topic and headers). When an update would pass a
 * bound, `whenFull: "emit_early"` (the default, as `maxRecords`/`maxBytes`)
 * forwards the oldest held updates until the rest fit; `"shut_down"` fails
 * the record under the processing error policy, naming the node and its
 * store. `{}` is unbounded.
 */
export interface BufferConfig {
  maxRecords?: number;
  maxBytes?: number;
  whenFull?: BufferFull;
}

/** What a full suppression buffer does. */
export type BufferFull = "emit_early" | "shut_down";

/** Options of Suppressed.untilWindowCloses and untilTimeLimit. */
export interface SuppressedOptions {
  /** Names the suppress node (and its store, `<name>-store`; `Suppressed.withName`); absent: `KTABLE-SUPPRESS-<n>`. */
  name?: string;
  /** The buffer's bounds; absent: unbounded. untilWindowCloses takes only `whenFull: "shut_down"` with a bound. */
  buffer?: BufferConfig;
}

/**
 * How KTable.suppress holds back a table's updates (Kafka Streams'
 * `Suppressed`): `untilWindowCloses()`, each window's final result of a
 * windowed aggregation, once, when stream time passes its end plus grace;
 * `untilTimeLimit(ms)`, each key's latest update once stream time reaches
 * its first held update's time plus the limit.
 */
export class Suppressed {
  private constructor(
    readonly name: string,
    /** untilTimeLimit's limit in milliseconds; undefined: untilWindowCloses. */
    readonly timeLimitMs: number | undefined,
    readonly buffer: Readonly<BufferConfig> | undefined,
  ) {
    Object.freeze(this);
  }

  static untilWindowCloses(options: SuppressedOptions = {}): Suppressed {
    const [name, buffer] = suppressedOptions("untilWindowCloses", options);
    return new Suppressed(name, undefined, buffer);
  }

  /**
   * `Suppressed.untilTimeLimit`: a key's updates are held until stream time
   * (the largest timestamp the suppression has seen) reaches the time of
   * its first held update plus `limitMs`; then its latest, a tombstone too,
   * is forwarded.
   */
  static untilTimeLimit(limitMs: number, options: SuppressedOptions = {}): Suppressed {
    if (!Number.isSafeInteger(limitMs)) {
      throw new TypeError(`Suppressed.untilTimeLimit: limitMs must be an integer number of milliseconds, not ${typeName(limitMs)}`);
    }
    const [name, buffer] = suppressedOptions("untilTimeLimit", options);
    return new Suppressed(name, limitMs, buffer);
  }

  /** The SuppressOp fields beside input and name. */
  toOp(): { timeLimitMs?: bigint; buffer?: MessageInitShape<typeof SuppressBufferSchema> } {
    const op: { timeLimitMs?: bigint; buffer?: MessageInitShape<typeof SuppressBufferSchema> } = {};
    if (this.timeLimitMs !== undefined) {
      op.timeLimitMs = BigInt(this.timeLimitMs);
    }
    const b = this.buffer;
    if (b !== undefined && (b.maxRecords !== undefined || b.maxBytes !== undefined)) {
      op.buffer = {
        maxRecords: b.maxRecords === undefined ? undefined : BigInt(b.maxRecords),
        maxBytes: b.maxBytes === undefined ? undefined : BigInt(b.maxBytes),
        whenFull: b.whenFull === "shut_down" ? BufferFullEnum.SHUT_DOWN : BufferFullEnum.EMIT_EARLY,
      };
    }
    return op;
  }
}

function suppressedOptions(method: string, options: SuppressedOptions): [string, Readonly<BufferConfig> | undefined] {
  if (options.name !== undefined && typeof options.name !== "string") {
    throw new TypeError(`Suppressed.${method}: name must be a string, not ${typeName(options.name)}`);
  }
  const b = options.buffer;
  if (b !== undefined) {
    for (const field of ["maxRecords", "maxBytes"] as const) {
      if (b[field] !== undefined && !Number.isSafeInteger(b[field])) {
        throw new TypeError(`Suppressed.${method}: buffer.${field} must be an integer, not ${typeName(b[field])}`);
      }
    }
    if (b.whenFull !== undefined && b.whenFull !== "emit_early" && b.whenFull !== "shut_down") {
      throw new TypeError(`Suppressed.${method}: buffer.whenFull must be "emit_early" or "shut_down", not ${JSON.stringify(b.whenFull)}`);
    }
  }
  return [options.name ?? "", b === undefined ? undefined : Object.freeze({ ...b })];
}
