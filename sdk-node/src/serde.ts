/**
 * Serdes: how keys and values are turned into bytes and back.
 *
 * They are named by string, as in the protocol, and match Kafka's serdes byte
 * for byte: `string` is UTF-8 (`Serdes.String`), `long` an 8-byte big-endian
 * two's complement integer (`Serdes.Long`), `integer` 4 bytes
 * (`Serdes.Integer`), `double` an 8-byte big-endian IEEE 754 float
 * (`Serdes.Double`), `bytes` passes bytes through, and `json` is compact UTF-8
 * JSON (`JSON.stringify` / `JSON.parse`). A Kafka null (a tombstone) is `null`
 * in every serde; `undefined` is encoded as a null too.
 *
 * In JavaScript a `long` is a `bigint` when decoded (a count passes 2^53 in
 * no time on a busy key, and a number would round it silently); encoding
 * takes a `bigint` or a safe-integer `number`.
 *
 * The column functions work on the protocol's columnar layout: concatenated
 * bytes plus a list of lengths, where -1 is a null.
 */

import { Buffer, isAscii, isUtf8 } from "node:buffer";
import { typeName } from "./errors.js";
import { Windowed } from "./windows.js";

/**
 * The name of a serde, as the engine and every SDK spell it. A windowed
 * aggregation's keys have a windowed serde besides: `windowed(<inner>,<size
 * ms>)` (time and sliding windows) or `session-windowed(<inner>)`, whose
 * objects are `Windowed` keys.
 */
export type SerdeName = "bytes" | "string" | "json" | "long" | "integer" | "double";

/** Every serde name, in the order the protocol documents them. */
export const SERDE_NAMES: readonly SerdeName[] = ["bytes", "string", "json", "long", "integer", "double"];

/**
 * The JavaScript type of a serde's keys or values as functions see them.
 * `json` is `any`, as `JSON.parse` gives: annotate the parameter of your
 * function with the type you expect.
 */
export interface SerdeTypes {
  bytes: Uint8Array;
  string: string;
  json: any;
  long: bigint;
  integer: number;
  double: number;
}

declare const topicSerdeBrand: unique symbol;

/**
 * A topic's format that the engine decodes where records enter the
 * topology and encodes where they leave it: a Schema Registry serde, made by
 * `avro()`, `jsonSchema()` or `protobuf()`. Sources (`stream`, `table`, `globalTable`) and sinks (`to`) take
 * one; in between, the records are `json`.
 */
export type TopicSerde = string & { readonly [topicSerdeBrand]: true };

/**
 * The Schema Registry Avro serde (Confluent's wire format: magic byte 0, the
 * 4-byte schema id, the Avro binary), with the registry of the config's
 * `schema.registry.url`. Functions see each record as the object Avro's
 * value maps to (unions are the value itself). At a source, `avro()` reads
 * any schema the registry holds and `avro(schema)` reads each record's
 * schema into `schema`; at a sink, `avro(schema)` registers `schema` under
 * the topic's subject (`<topic>-value` by default) and writes with it,
 * `avro()` writes with the subject's latest schema. `schema` is Avro's
 * JSON form, as a string or an object. See docs/design/schema-registry.md.
 */
export function avro(schema?: string | object): TopicSerde {
  return topicSerde("avro", schema);
}

/**
 * The Schema Registry JSON Schema serde: Confluent's wire format with a
 * UTF-8 JSON payload, validated against its JSON Schema (at a source, the
 * record's schema by its id; at a sink, `schema`, registered as `avro`
 * registers its schema). Functions get and give what `json` gives.
 */
export function jsonSchema(schema?: string | object): TopicSerde {
  return topicSerde("json-schema", schema);
}

/**
 * The Schema Registry Protobuf serde: Confluent's wire format with the
 * message indexes before the protobuf binary. Functions see each record as
 * the object protojson gives (proto field names, every field present,
 * 64-bit integers as strings). At a source, `protobuf()` reads any schema
 * the registry holds and `protobuf(schema)` reads each record into
 * `schema`'s message of the same name; at a sink, `protobuf(schema)`
 * registers `schema` (.proto text) as `avro` registers its schema and
 * writes its first message, or the one `options.message` names (its full
 * name, or its name in the schema's package: `"Refund"`, nested
 * `"Order.Line"`) with that message's indexes; `protobuf()` writes with the
 * subject's latest schema (`protobuf(undefined, { message })`: its named
 * message).
 */
export function protobuf(schema?: string, options?: { message?: string }): TopicSerde {
  const message = options?.message;
  if (message !== undefined) {
    return (schema === undefined ? `protobuf(message=${message})` : `protobuf(${schema}, message=${message})`) as TopicSerde;
  }
  return topicSerde("protobuf", schema);
}

function topicSerde(name: string, schema: string | object | undefined): TopicSerde {
  if (schema === undefined) {
    return name as TopicSerde;
  }
  return `${name}(${typeof schema === "string" ? schema : JSON.stringify(schema)})` as TopicSerde;
}

/** The JavaScript type of serde `S` (a topic serde's records are json). */
export type SerdeType<S extends SerdeName | TopicSerde> = S extends SerdeName ? SerdeTypes[S] : any;

/** A decoded column: the objects (null where a record failed) and the failures, position -> error text. */
export interface DecodedColumn {
  items: unknown[];
  failures: Map<number, string>;
}

/**
 * An encoded column: the concatenated bytes and the lengths (-1 for a null).
 * When `failures` (position -> error text) is not empty, `data` and `lengths`
 * are not usable: the caller drops the failed items and encodes again.
 */
export interface EncodedColumn {
  data: Uint8Array;
  lengths: number[];
  failures: Map<number, string>;
}

/** `"TypeName: message"`, the form the protocol's RecordFailure.message takes. */
export function errorText(e: unknown): string {
  if (e instanceof Error) {
    const ctor = (e.constructor as { name?: unknown } | undefined)?.name;
    const name = e.name && e.name !== "Error" ? e.name : typeof ctor === "string" && ctor ? ctor : "Error";
    return `${name}: ${e.message}`;
  }
  return `${typeName(e)}: ${String(e)}`;
}

const FIXED_SIZE: Partial<Record<string, number>> = { long: 8, integer: 4, double: 8 };

function unknownSerde(serde: string): string {
  return `unknown serde ${JSON.stringify(serde)} (want one of ${SERDE_NAMES.join(", ")})`;
}

function asBuffer(data: Uint8Array): Buffer {
  return Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

// Decoders take the column and one record's bounds (never a null).
type Decoder = (buf: Buffer, start: number, end: number) => unknown;

function decodeString(buf: Buffer, start: number, end: number): string {
  if (!isUtf8(buf.subarray(start, end))) {
    throw new TypeError("string serde: the bytes are not valid UTF-8");
  }
  return buf.toString("utf8", start, end);
}

function fixed(name: string, size: number, read: (buf: Buffer, at: number) => unknown): Decoder {
  return (buf, start, end) => {
    if (end - start !== size) {
      throw new RangeError(`${name} serde: want ${size} bytes, got ${end - start}`);
    }
    return read(buf, start);
  };
}

const DECODERS: Record<string, Decoder> = {
  bytes: (buf, start, end) => buf.subarray(start, end),
  "": (buf, start, end) => buf.subarray(start, end), // "inherit" at a source means bytes
  string: decodeString,
  json: (buf, start, end) => JSON.parse(decodeString(buf, start, end)) as unknown,
  long: fixed("long", 8, (buf, at) => buf.readBigInt64BE(at)),
  integer: fixed("integer", 4, (buf, at) => buf.readInt32BE(at)),
  double: fixed("double", 8, (buf, at) => buf.readDoubleBE(at)),
};

// Encoders take a non-null value and return its bytes, throwing a TypeError
// or RangeError whose message names the serde.
type Encoder = (v: unknown) => Uint8Array;

const LONG_MIN = -(2n ** 63n);
const LONG_MAX = 2n ** 63n - 1n;

function encodeBytes(v: unknown): Uint8Array {
  if (v instanceof Uint8Array) {
    return v;
  }
  if (v instanceof ArrayBuffer) {
    return new Uint8Array(v);
  }
  throw new TypeError(`bytes serde: want a Uint8Array, got ${typeName(v)}`);
}

function encodeString(v: unknown): Uint8Array {
  if (typeof v === "string") {
    return Buffer.from(v, "utf8");
  }
  throw new TypeError(`string serde: want a string, got ${typeName(v)}`);
}

function encodeJson(v: unknown): Uint8Array {
  const text = JSON.stringify(v);
  if (text === undefined) {
    throw new TypeError(`json serde: ${typeName(v)} has no JSON form`);
  }
  return Buffer.from(text, "utf8");
}

function toLong(v: unknown): bigint {
  if (typeof v === "bigint") {
    if (v < LONG_MIN || v > LONG_MAX) {
      throw new RangeError(`long serde: ${v} does not fit in 64 bits`);
    }
    return v;
  }
  if (typeof v === "number") {
    if (!Number.isSafeInteger(v)) {
      throw new RangeError(`long serde: ${v} is not a safe integer (use a bigint)`);
    }
    return BigInt(v);
  }
  throw new TypeError(`long serde: want a bigint or an integer number, got ${typeName(v)}`);
}

function toInteger(v: unknown): number {
  if (typeof v === "number") {
    if (!Number.isInteger(v) || v < -2147483648 || v > 2147483647) {
      throw new RangeError(`integer serde: ${v} is not an integer that fits in 32 bits`);
    }
    return v;
  }
  if (typeof v === "bigint") {
    if (v < -2147483648n || v > 2147483647n) {
      throw new RangeError(`integer serde: ${v} does not fit in 32 bits`);
    }
    return Number(v);
  }
  throw new TypeError(`integer serde: want an integer number, got ${typeName(v)}`);
}

function toDouble(v: unknown): number {
  if (typeof v === "number") {
    return v;
  }
  throw new TypeError(`double serde: want a number, got ${typeName(v)}`);
}

const ENCODERS: Record<string, Encoder> = {
  bytes: encodeBytes,
  "": encodeBytes,
  string: encodeString,
  json: encodeJson,
  long: (v) => {
    const b = Buffer.allocUnsafe(8);
    b.writeBigInt64BE(toLong(v));
    return b;
  },
  integer: (v) => {
    const b = Buffer.allocUnsafe(4);
    b.writeInt32BE(toInteger(v));
    return b;
  },
  double: (v) => {
    const b = Buffer.allocUnsafe(8);
    b.writeDoubleBE(toDouble(v));
    return b;
  },
};

// Windowed keys, as Kafka Streams' TimeWindowedSerializer and
// SessionWindowedSerializer write them: the inner key's bytes, then the
// window start (time windows), or the end and then the start (sessions), as
// 8-byte big-endian epoch milliseconds. Their codecs are made on first sight
// of a name.
const TIME_WINDOWED = /^windowed\(([a-z]*),(-?[0-9]+)\)$/;
const SESSION_WINDOWED = /^session-windowed\(([a-z]*)\)$/;

function windowedCodecs(serde: string): boolean {
  if (Object.hasOwn(DECODERS, serde)) {
    return true;
  }
  const t = TIME_WINDOWED.exec(serde);
  const m = t ?? SESSION_WINDOWED.exec(serde);
  const inner = m?.[1];
  if (m === null || inner === undefined || !Object.hasOwn(DECODERS, inner) || inner === "") {
    return false;
  }
  const decInner = DECODERS[inner]!;
  const encInner = ENCODERS[inner]!;
  const tail = t !== null ? 8 : 16;
  const size = t !== null ? Number(t[2]) : 0;
  DECODERS[serde] = (buf, start, end) => {
    if (end - start < tail) {
      throw new RangeError(`${serde} serde: want at least ${tail} bytes, got ${end - start}`);
    }
    const key = decInner(buf, start, end - tail);
    if (t !== null) {
      const s = Number(buf.readBigInt64BE(end - 8));
      return new Windowed(key, s, s + size);
    }
    return new Windowed(key, Number(buf.readBigInt64BE(end - 8)), Number(buf.readBigInt64BE(end - 16)));
  };
  ENCODERS[serde] = (v) => {
    if (!(v instanceof Windowed)) {
      throw new TypeError(`${serde} serde: want a Windowed key, got ${typeName(v)}`);
    }
    const k = encInner(v.key);
    const out = Buffer.allocUnsafe(k.byteLength + tail);
    out.set(k, 0);
    if (t !== null) {
      out.writeBigInt64BE(BigInt(v.start), k.byteLength);
    } else {
      out.writeBigInt64BE(BigInt(v.end), k.byteLength);
      out.writeBigInt64BE(BigInt(v.start), k.byteLength + 8);
    }
    return out;
  };
  return true;
}

/** Whether `serde` names a windowed serde (`windowed(<inner>,<size>)` or `session-windowed(<inner>)`) of a known inner serde. */
export function isWindowedSerde(serde: string): boolean {
  return (TIME_WINDOWED.test(serde) || SESSION_WINDOWED.test(serde)) && windowedCodecs(serde);
}

/** Decodes one record's key or value (null stays null). Throws for an unknown serde or bad bytes. */
export function decode(serde: string, data: Uint8Array | null): unknown {
  windowedCodecs(serde);
  const dec = DECODERS[serde];
  if (dec === undefined) {
    throw new TypeError(unknownSerde(serde));
  }
  if (data === null) {
    return null;
  }
  return dec(asBuffer(data), 0, data.byteLength);
}

/** Encodes one key or value (null and undefined become null). Throws for an unknown serde or a value it cannot encode. */
export function encode(serde: string, value: unknown): Uint8Array | null {
  windowedCodecs(serde);
  const enc = ENCODERS[serde];
  if (enc === undefined) {
    throw new TypeError(unknownSerde(serde));
  }
  return value === null || value === undefined ? null : enc(value);
}

function failAll(n: number, msg: string): Map<number, string> {
  const m = new Map<number, string>();
  for (let i = 0; i < n; i++) {
    m.set(i, msg);
  }
  return m;
}

/**
 * Decodes a column: record j is `data[sum(lengths[:j]) : +lengths[j]]`, or
 * null when `lengths[j]` is -1. A failed position holds null and its error
 * text is in `failures`. A column whose lengths do not add up to its bytes,
 * or an unknown serde, fails every record.
 */
export function decodeColumn(serde: string, data: Uint8Array, lengths: readonly number[]): DecodedColumn {
  const n = lengths.length;
  const items: unknown[] = new Array<unknown>(n);
  windowedCodecs(serde);
  const dec = DECODERS[serde];
  if (dec === undefined) {
    return { items: items.fill(null), failures: failAll(n, `TypeError: ${unknownSerde(serde)}`) };
  }
  let total = 0;
  let nulls = 0;
  let bad = false;
  for (let j = 0; j < n; j++) {
    const len = lengths[j]!;
    if (len < 0) {
      nulls++;
      bad ||= len !== -1;
    } else {
      total += len;
    }
  }
  if (bad || total !== data.byteLength) {
    const msg = `RangeError: malformed bundle column: lengths account for ${total} bytes, the column holds ${data.byteLength}`;
    return { items: items.fill(null), failures: failAll(n, msg) };
  }
  const failures = new Map<number, string>();
  if (nulls === n) {
    return { items: items.fill(null), failures }; // all null: the usual keys of a topic written without keys
  }
  const buf = asBuffer(data);
  if ((serde === "string" && isAscii(buf)) || serde === "bytes" || serde === "") {
    // One pass with no per-record validation: ASCII is valid UTF-8 and one
    // character per byte. Each record is its own latin1 slice: making one
    // string of a whole (~200 KiB) column and slicing it measured ten times
    // slower (V8 allocates a string that large in its large-object space).
    const text = serde === "string";
    let pos = 0;
    for (let j = 0; j < n; j++) {
      const len = lengths[j]!;
      if (len < 0) {
        items[j] = null;
        continue;
      }
      items[j] = text ? buf.toString("latin1", pos, pos + len) : buf.subarray(pos, pos + len);
      pos += len;
    }
    return { items, failures };
  }
  let pos = 0;
  for (let j = 0; j < n; j++) {
    const len = lengths[j]!;
    if (len < 0) {
      items[j] = null;
      continue;
    }
    try {
      items[j] = dec(buf, pos, pos + len);
    } catch (e) {
      failures.set(j, errorText(e));
      items[j] = null;
    }
    pos += len;
  }
  return { items, failures };
}

const EMPTY = new Uint8Array(0);

/** Encodes values into a column (see EncodedColumn); null and undefined are nulls. */
export function encodeColumn(serde: string, items: readonly unknown[]): EncodedColumn {
  const n = items.length;
  windowedCodecs(serde);
  const enc = ENCODERS[serde];
  if (enc === undefined) {
    return { data: EMPTY, lengths: [], failures: failAll(n, `TypeError: ${unknownSerde(serde)}`) };
  }
  const failures = new Map<number, string>();
  if (serde === "string") {
    const fast = encodeStrings(items);
    if (fast !== null) {
      return { ...fast, failures };
    }
  } else {
    const size = FIXED_SIZE[serde];
    if (size !== undefined) {
      return encodeFixed(serde, size, items);
    }
  }
  const chunks: Uint8Array[] = [];
  const lengths: number[] = [];
  for (let j = 0; j < n; j++) {
    const v = items[j];
    if (v === null || v === undefined) {
      lengths.push(-1);
      continue;
    }
    try {
      const b = enc(v);
      chunks.push(b);
      lengths.push(b.byteLength);
    } catch (e) {
      failures.set(j, errorText(e));
    }
  }
  return { data: failures.size ? EMPTY : Buffer.concat(chunks), lengths, failures };
}

// A column of strings, each written as UTF-8 into one buffer (its lengths
// are the bytes written), or null when some item is not a string. Writing
// each string measured four times faster than encoding their join (a string
// of a whole column lands in V8's large-object space).
function encodeStrings(items: readonly unknown[]): { data: Uint8Array; lengths: number[] } | null {
  const n = items.length;
  const lengths = new Array<number>(n);
  let chars = 0;
  for (let j = 0; j < n; j++) {
    const v = items[j];
    if (typeof v !== "string") {
      return null;
    }
    chars += v.length;
  }
  // A UTF-16 code unit takes at most 3 bytes of UTF-8 (a surrogate pair, two
  // units, takes 4).
  const buf = Buffer.allocUnsafe(chars * 3);
  let pos = 0;
  for (let j = 0; j < n; j++) {
    const written = buf.write(items[j] as string, pos, "utf8");
    lengths[j] = written;
    pos += written;
  }
  return { data: buf.subarray(0, pos), lengths };
}

function encodeFixed(serde: string, size: number, items: readonly unknown[]): EncodedColumn {
  const n = items.length;
  const failures = new Map<number, string>();
  const lengths = new Array<number>(n);
  const buf = Buffer.allocUnsafe(n * size);
  let pos = 0;
  for (let j = 0; j < n; j++) {
    const v = items[j];
    if (v === null || v === undefined) {
      lengths[j] = -1;
      continue;
    }
    try {
      if (serde === "long") {
        buf.writeBigInt64BE(toLong(v), pos);
      } else if (serde === "integer") {
        buf.writeInt32BE(toInteger(v), pos);
      } else {
        buf.writeDoubleBE(toDouble(v), pos);
      }
    } catch (e) {
      failures.set(j, errorText(e));
      continue;
    }
    lengths[j] = size;
    pos += size;
  }
  return { data: failures.size ? EMPTY : buf.subarray(0, pos), lengths: failures.size ? [] : lengths, failures };
}
