/**
 * The conformance catalogue in TypeScript: the functions cases (and the
 * host vectors, conformance/vectors) name, bound to native functions with
 * the semantics conformance/README.md gives. Used by executor.ts and by
 * sdk-node's vector test (src/vectors.test.ts).
 */

import { Buffer } from "node:buffer";
import { readFileSync } from "node:fs";
import {
  type Processor,
  type ProcessorContext,
  type ProcessorKeyValueStore,
  type ProcessorVersionedKeyValueStore,
  Record as KRecord,
  type ValueTransformerWithKey,
  type VersionedRecord,
} from "../../../sdk-node/src/index.js";

export type Fn = (...args: any[]) => unknown;
export type FnRef = string | { name: string; arg: string | number };
export type Role =
  | "mapper"
  | "flat"
  | "predicate"
  | "key"
  | "map"
  | "action"
  | "reducer"
  | "init"
  | "aggregator"
  | "merger"
  | "joiner"
  | "mapper_with_key"
  | "flat_with_key"
  | "flat_map"
  | "extractor";

// The catalogue (conformance/README.md defines each function; the runner's
// catalogue.go is the reference). Functions conformance/catalogue.json
// defines by an expr are built from it; the others are written here.

type Expr = { var: string } | { const: unknown } | { list: Expr[] } | { not_null: Expr };

const CATALOGUE = (JSON.parse(readFileSync(new URL("../../catalogue.json", import.meta.url), "utf8")) as { functions: Record<string, { expr?: Expr }> }).functions;

/** A catalogue expr's value: var, const, list, not_null. */
function evaluate(e: Expr, env: Record<string, unknown>): unknown {
  if ("var" in e) return env[e.var];
  if ("const" in e) return structuredClone(e.const);
  if ("list" in e) return e.list.map((x) => evaluate(x, env));
  if ("not_null" in e) return evaluate(e.not_null, env) !== null;
  throw new Error(`catalogue expr: unknown operation ${JSON.stringify(e)}`);
}

/** The function an expr defines, called as the role calls it. */
function fromExpr(e: Expr, role: Role): Fn {
  switch (role) {
    case "mapper":
    case "flat":
      return (v) => evaluate(e, { value: v });
    case "predicate":
    case "key":
    case "map":
    case "mapper_with_key":
    case "flat_with_key":
    case "flat_map":
      return (k, v) => evaluate(e, { key: k, value: v });
    case "action":
      return () => undefined;
    case "init":
      return () => evaluate(e, {});
  }
  throw new Error(`catalogue expr: no role ${role}`);
}

function str(fn: string, v: unknown): string {
  if (typeof v !== "string") {
    throw new TypeError(`${fn}: want a string, got ${v === null ? "null" : typeof v}`);
  }
  return v;
}

function mapStr(fn: string, v: unknown, f: (s: string) => unknown): unknown {
  return v === null || v === undefined ? null : f(str(fn, v));
}

function field(fn: string, v: unknown, name: string): unknown {
  if (typeof v !== "object" || v === null || Array.isArray(v)) {
    throw new TypeError(`${fn}: want a JSON object, got ${v === null ? "null" : typeof v}`);
  }
  return (v as Record<string, unknown>)[name] ?? null;
}

/** The JSON object value's integer field, or fallback for a null value or a missing or null field. */
function fieldTimestamp(fn: string, v: unknown, name: string, fallback: number): number | bigint {
  const f = v === null || v === undefined ? null : field(fn, v, name);
  if (f === null) {
    return fallback;
  }
  if (typeof f === "bigint" || (typeof f === "number" && Number.isSafeInteger(f))) {
    return f;
  }
  throw new TypeError(`${fn}: want an integer field ${name}, got ${typeof f}`);
}

/** Numbers add as numbers; a long (bigint) on either side makes a bigint. */
function arith(fn: string, a: unknown, b: unknown, sign: 1 | -1): unknown {
  if (typeof a === "bigint" || typeof b === "bigint") {
    const x = BigInt(a as bigint | number);
    const y = BigInt(b as bigint | number);
    return sign === 1 ? x + y : x - y;
  }
  if (typeof a !== "number" || typeof b !== "number") {
    throw new TypeError(`${fn}: want numbers, got ${typeof a} and ${typeof b}`);
  }
  return sign === 1 ? a + b : a - b;
}

function concat(sep: string, agg: unknown, v: unknown, aggregator: boolean): string {
  const a = str("concat", agg);
  const b = str("concat", v);
  return aggregator && a === "" ? b : a + sep + b;
}

const codePoints = (s: string): number => [...s].length;

class ConformanceError extends Error {}

function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => (typeof x === "bigint" ? Number(x) : x)) ?? "null";
}

export function fn(ref: FnRef, role: Role): Fn {
  const name = typeof ref === "string" ? ref : ref.name;
  const a = typeof ref === "string" ? "" : String(ref.arg);
  const expr = CATALOGUE[name]?.expr;
  if (expr !== undefined) {
    return fromExpr(expr, role);
  }
  if (name === "raise_error" || name === "raise_on") {
    const check = (v: unknown): void => {
      if (name === "raise_error") {
        throw new ConformanceError(`conformance: raise_error on value ${canonical(v)}`);
      }
      if (v === a) {
        throw new ConformanceError(`conformance: raise_on ${a}`);
      }
    };
    return (...args: unknown[]) => {
      const v = role === "aggregator" ? args[1] : args[args.length - 1];
      check(v);
      switch (role) {
        case "flat":
        case "flat_with_key":
          return [v];
        case "flat_map":
          return [[args[0], v]];
        case "predicate":
          return true;
        case "key":
          return args[0];
        case "map":
          return [args[0], v];
        case "action":
          return undefined;
        default:
          return v;
      }
    };
  }
  if (name === "concat" && role === "joiner") {
    // A left or outer join's missing value is the text null.
    return (v: unknown, other: unknown) => (v === null ? "null" : str("concat", v)) + a + (other === null ? "null" : str("concat", other));
  }
  const folds: Record<string, [Fn, Fn]> = {
    add: [(agg, v) => arith("add", agg, v, 1), (_k, v, agg) => arith("add", agg, v, 1)],
    subtract: [(agg, v) => arith("subtract", agg, v, -1), (_k, v, agg) => arith("subtract", agg, v, -1)],
    concat: [(agg, v) => concat(a, agg, v, false), (_k, v, agg) => concat(a, agg, v, true)],
  };
  if (name === "add" && role === "merger") {
    return (_k, a1, a2) => arith("add", a1, a2, 1);
  }
  const fold = folds[name];
  if (fold !== undefined) {
    return role === "reducer" ? fold[0] : fold[1];
  }
  const table: Record<string, Fn> = {
    upper: (v) => mapStr("upper", v, (s) => s.toUpperCase()),
    lower: (v) => mapStr("lower", v, (s) => s.toLowerCase()),
    length: (v) => codePoints(str("length", v)),
    prefix: (v) => mapStr("prefix", v, (s) => a + s),
    get_field: (v) => field("get_field", v, a),
    wrap_field: (v) => ({ [a]: v }),
    twice: (v) => arith("twice", v, v, 1),
    to_text: (v) => {
      if (v === null || typeof v === "string") return v;
      if (typeof v === "bigint" || (typeof v === "number" && Number.isInteger(v))) return String(v);
      throw new TypeError(`to_text: want a string or an integer, got ${typeof v}`);
    },
    reverse_bytes: (v) => {
      if (!(v instanceof Uint8Array)) throw new TypeError(`reverse_bytes: want bytes, got ${typeof v}`);
      return Uint8Array.from(v).reverse();
    },
    split_words: (v) => str("split_words", v).split(/\s+/).filter(Boolean),
    is_even: (_k, v) => {
      if (v === null) return false;
      if (typeof v === "bigint") return v % 2n === 0n;
      if (typeof v === "number" && Number.isInteger(v)) return v % 2 === 0;
      throw new TypeError(`is_even: want an integer, got ${typeof v}`);
    },
    is_long_word: (_k, v) => v !== null && codePoints(str("is_long_word", v)) >= 5,
    value_contains: (_k, v) => v !== null && str("value_contains", v).includes(a),
    key_starts_with: (k) => k !== null && str("key_starts_with", k).startsWith(a),
    first_word_key: (_k, v) => str("first_word_key", v).split(/\s+/).filter(Boolean)[0] ?? null,
    key_upper: (k) => mapStr("key_upper", k, (s) => s.toUpperCase()),
    field_key: (_k, v) => field("field_key", v, a),
    first_letter: (_k, v) => [...str("first_letter", v)][0] ?? null,
    upper_both: (k, v) => [mapStr("upper_both", k, (s) => s.toUpperCase()), mapStr("upper_both", v, (s) => s.toUpperCase())],
    region_of: (_k, v) => [field("region_of", v, "region"), v],
    region_or_none: (_k, v) => {
      const r = field("region_or_none", v, "region");
      return r === null || r === undefined ? null : [r, v];
    },
    region_amount: (_k, v) => [field("region_amount", v, "region"), field("region_amount", v, "amount")],
    longer: (agg, v) => (codePoints(str("longer", v)) > codePoints(str("longer", agg)) ? v : agg),
    count_agg: (_k, _v, agg) => arith("count_agg", agg, 1, 1),
    sum_field: (_k, v, agg) => arith("sum_field", agg, field("sum_field", v, a), 1),
    subtract_field: (_k, v, agg) => arith("subtract_field", agg, field("subtract_field", v, a), -1),
    append: (_k, v, agg) => {
      if (!Array.isArray(agg)) throw new TypeError(`append: want a list aggregate, got ${typeof agg}`);
      return [...agg, v];
    },
    field_timestamp: (_k, v, meta: { timestamp: number }) => fieldTimestamp("field_timestamp", v, a, meta.timestamp),
    field_or_partition_time: (_k, v, _meta, partitionTime: number) => fieldTimestamp("field_or_partition_time", v, a, partitionTime),
  };
  const f = table[name];
  if (f === undefined) {
    throw new Error(`executor: catalogue function ${name} is not implemented`);
  }
  return f;
}

// The catalogue's processors (docs/design/host-vectors.md, "Processors";
// conformance/README.md): a supplier per name, given the stores its node
// declares (the one key-value store of count_per_key and sweep_every).

type Ctx = ProcessorContext<unknown, unknown>;

/** The processor supplier a case or vector names. */
export function processor(ref: FnRef, stores: readonly string[] = []): () => Processor {
  const name = typeof ref === "string" ? ref : ref.name;
  const a = typeof ref === "string" ? "" : String(ref.arg);
  const storeOf = (ctx: Ctx): ProcessorKeyValueStore<unknown, bigint> => {
    if (stores.length !== 1) {
      throw new Error(`${name}: want one store, the node declares [${stores.join(", ")}]`);
    }
    return ctx.getStateStore(stores[0]!);
  };
  const ms = (): number => {
    const n = Number(a);
    if (!Number.isSafeInteger(n)) throw new TypeError(`${name}: want an interval in ms, got ${JSON.stringify(a)}`);
    return n;
  };
  switch (name) {
    case "count_per_key":
      return () => {
        let ctx: Ctx;
        let store: ProcessorKeyValueStore<unknown, bigint>;
        return {
          init(c: Ctx) {
            ctx = c;
            store = storeOf(c);
          },
          async process(r: KRecord) {
            const n = ((await store.get(r.key)) ?? 0n) + 1n;
            store.put(r.key, n);
            ctx.forward(r.withValue(n));
          },
        };
      };
    case "forward_to":
      return () => {
        let ctx: Ctx;
        return {
          init(c: Ctx) {
            ctx = c;
          },
          process(r: KRecord) {
            ctx.forward(r, a);
          },
        };
      };
    case "restamp":
      return () => {
        let ctx: Ctx;
        return {
          init(c: Ctx) {
            ctx = c;
          },
          process(r: KRecord) {
            ctx.forward(r.withTimestamp(r.timestamp + 1000).withHeaders([...r.headers, ["seen", Buffer.from("1")]]));
          },
        };
      };
    case "sweep_every":
    case "sweep_wall_clock":
      return () => {
        let store: ProcessorKeyValueStore<unknown, bigint>;
        return {
          init(c: Ctx) {
            store = storeOf(c);
            c.schedule(ms(), name === "sweep_every" ? "stream_time" : "wall_clock_time", async (t) => {
              for await (const [k, v] of store.all()) {
                c.forward(new KRecord(k, v, t));
                store.delete(k);
              }
            });
          },
          async process(r: KRecord) {
            store.put(r.key, ((await store.get(r.key)) ?? 0n) + 1n);
          },
        };
      };
    case "tick_every":
      return () => ({
        init(c: Ctx) {
          c.schedule(ms(), "wall_clock_time", (t) => c.forward(new KRecord("tick", BigInt(t), t)));
        },
        process() {},
      });
    case "forward_then_fail":
      return () => {
        let ctx: Ctx;
        return {
          init(c: Ctx) {
            ctx = c;
          },
          process(r: KRecord) {
            ctx.forward(r);
            if (r.value === a) {
              throw new Error(`forward_then_fail ${a}`);
            }
          },
        };
      };
    case "versioned_history":
      // A record whose value is "delete" deletes its key as of its timestamp
      // and forwards "delete <deleted> latest <get(key)>"; any other puts its
      // value and forwards "put <put's answer> latest <get(key)> asof
      // <get(key, ts - 1)>" (a version: value@timestamp, then <validTo when
      // it has one; none: null).
      return () => {
        let ctx: Ctx;
        let store: ProcessorVersionedKeyValueStore<unknown, unknown>;
        const show = (v: VersionedRecord | undefined): string =>
          v === undefined ? "null" : `${String(v.value)}@${v.timestamp}${v.validTo === undefined ? "" : `<${v.validTo}`}`;
        return {
          init(c: Ctx) {
            ctx = c;
            if (stores.length !== 1) {
              throw new Error(`${name}: want one store, the node declares [${stores.join(", ")}]`);
            }
            store = c.getStateStore(stores[0]!);
          },
          async process(r: KRecord) {
            const ts = r.timestamp;
            let out: string;
            if (r.value === "delete") {
              const d = show(await store.delete(r.key, ts));
              out = `delete ${d} latest ${show(await store.get(r.key))}`;
            } else {
              const code = await store.put(r.key, r.value, ts);
              out = `put ${BigInt(code)} latest ${show(await store.get(r.key))} asof ${show(await store.get(r.key, { asOf: ts - 1 }))}`;
            }
            ctx.forward(r.withValue(out));
          },
        };
      };
  }
  throw new Error(`executor: catalogue processor ${name} is not implemented`);
}

// The transformer catalogue (conformance/README.md, "Transformers"):
// KTable.transformValues' transformers, after KTableTransformValuesTest's.

/** The transformer supplier a case names. */
export function transformer(ref: FnRef, stores: readonly string[] = []): () => ValueTransformerWithKey {
  const name = typeof ref === "string" ? ref : ref.name;
  const a = typeof ref === "string" ? "" : String(ref.arg);
  switch (name) {
    case "key_arrow_value":
      return () => ({ transform: (k, v) => `${String(k)}->${v === null ? "null" : String(v)}!` });
    case "count_calls":
      return () => {
        let calls = 0n;
        return { transform: () => ++calls };
      };
    case "value_length":
      return () => ({ transform: (_k, v) => (v === null ? null : BigInt([...String(v)].length)) });
    case "count_per_key":
      return () => {
        let store: ProcessorKeyValueStore<unknown, bigint>;
        return {
          init(c: Ctx) {
            if (stores.length < 1) throw new Error(`${name}: want a store, the node declares none`);
            store = c.getStateStore(stores[0]!);
          },
          async transform(k: unknown) {
            const n = ((await store.get(k)) ?? 0n) + 1n;
            store.put(k, n);
            return n;
          },
        };
      };
    case "fail_on":
      return () => ({
        transform: (_k, v) => {
          if (String(v) === a) throw new Error(`fail_on ${a}`);
          return v;
        },
      });
  }
  throw new Error(`transformer ${JSON.stringify(name)} is not in the transformer catalogue`);
}
