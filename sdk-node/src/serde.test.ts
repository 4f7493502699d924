import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { describe, test } from "node:test";
import { avro, decode, decodeColumn, encode, encodeColumn, errorText, jsonSchema, protobuf } from "./serde.js";

const hex = (b: Uint8Array | null): string | null => (b === null ? null : Buffer.from(b).toString("hex"));

function column(parts: (string | null)[]): { data: Uint8Array; lengths: number[] } {
  const bufs = parts.map((p) => (p === null ? null : Buffer.from(p, "hex")));
  return {
    data: Buffer.concat(bufs.flatMap((b) => (b === null ? [] : [b]))),
    lengths: bufs.map((b) => (b === null ? -1 : b.length)),
  };
}

describe("serdes are Kafka's, byte for byte", () => {
  test("long is 8-byte big-endian two's complement, decoded as bigint", () => {
    assert.equal(hex(encode("long", 1n)), "0000000000000001");
    assert.equal(hex(encode("long", -2n)), "fffffffffffffffe");
    assert.equal(hex(encode("long", 2n ** 63n - 1n)), "7fffffffffffffff");
    assert.equal(hex(encode("long", 300)), "000000000000012c"); // a safe-integer number is accepted
    assert.equal(decode("long", Buffer.from("8000000000000000", "hex")), -(2n ** 63n));
    assert.equal(decode("long", Buffer.from("000000000000012c", "hex")), 300n);
  });

  test("long refuses what does not fit or is not an integer", () => {
    assert.throws(() => encode("long", 2n ** 63n), { name: "RangeError", message: /does not fit in 64 bits/ });
    assert.throws(() => encode("long", 1.5), { name: "RangeError", message: /not a safe integer/ });
    assert.throws(() => encode("long", 2 ** 53), { name: "RangeError" });
    assert.throws(() => encode("long", "1"), { name: "TypeError", message: /want a bigint or an integer number, got string/ });
    assert.throws(() => decode("long", Buffer.from("0001", "hex")), { name: "RangeError", message: "long serde: want 8 bytes, got 2" });
  });

  test("integer is 4-byte big-endian, double 8-byte IEEE 754 big-endian", () => {
    assert.equal(hex(encode("integer", -1)), "ffffffff");
    assert.equal(hex(encode("integer", 258)), "00000102");
    assert.equal(decode("integer", Buffer.from("80000000", "hex")), -2147483648);
    assert.throws(() => encode("integer", 2 ** 31), { name: "RangeError" });
    assert.throws(() => encode("integer", 0.5), { name: "RangeError" });
    assert.equal(hex(encode("double", 1.5)), "3ff8000000000000");
    assert.equal(decode("double", Buffer.from("c000000000000000", "hex")), -2);
    assert.throws(() => encode("double", 1n), { name: "TypeError", message: "double serde: want a number, got bigint" });
  });

  test("string is UTF-8 and refuses invalid bytes", () => {
    assert.equal(hex(encode("string", "é")), "c3a9");
    assert.equal(decode("string", Buffer.from("c3a9", "hex")), "é");
    assert.throws(() => decode("string", Buffer.from("ff", "hex")), { name: "TypeError", message: /not valid UTF-8/ });
    assert.throws(() => encode("string", 1), { message: "string serde: want a string, got number" });
  });

  test("json is compact JSON.stringify / JSON.parse", () => {
    assert.equal(Buffer.from(encode("json", { a: [1, "é"], b: null })!).toString(), '{"a":[1,"é"],"b":null}');
    assert.deepEqual(decode("json", Buffer.from('{"x": 1}')), { x: 1 });
    assert.throws(() => encode("json", () => 1), { name: "TypeError", message: /has no JSON form/ });
    assert.throws(() => encode("json", 1n), { name: "TypeError" });
    assert.throws(() => decode("json", Buffer.from("{")), { name: "SyntaxError" });
  });

  test("bytes pass through", () => {
    assert.equal(hex(encode("bytes", Buffer.from("0102", "hex"))), "0102");
    assert.equal(hex(encode("bytes", new Uint8Array([3]))), "03");
    assert.equal(hex(decode("bytes", Buffer.from("0a", "hex")) as Uint8Array), "0a");
    assert.throws(() => encode("bytes", "x"), { message: "bytes serde: want a Uint8Array, got string" });
  });

  test("null (and undefined) is a Kafka null in every serde; unknown serdes throw", () => {
    for (const s of ["bytes", "string", "json", "long", "integer", "double"]) {
      assert.equal(encode(s, null), null);
      assert.equal(encode(s, undefined), null);
      assert.equal(decode(s, null), null);
    }
    assert.throws(() => encode("avro", 1), { message: /unknown serde "avro"/ });
  });
});

describe("columns", () => {
  test("decode with nulls and per-record failures", () => {
    const { data, lengths } = column(["0000000000000001", null, "01", "ffffffffffffffff"]);
    const { items, failures } = decodeColumn("long", data, lengths);
    assert.deepEqual(items, [1n, null, null, -1n]);
    assert.deepEqual([...failures], [[2, "RangeError: long serde: want 8 bytes, got 1"]]);
  });

  test("decode strings: the ASCII fast path and the UTF-8 path agree", () => {
    const ascii = column([Buffer.from("ab").toString("hex"), null, "", Buffer.from("c").toString("hex")]);
    assert.deepEqual(decodeColumn("string", ascii.data, ascii.lengths).items, ["ab", null, "", "c"]);
    const utf8 = column([Buffer.from("é").toString("hex"), "ff", Buffer.from("x").toString("hex")]);
    const r = decodeColumn("string", utf8.data, utf8.lengths);
    assert.deepEqual(r.items, ["é", null, "x"]);
    assert.deepEqual([...r.failures.keys()], [1]);
  });

  test("a malformed column or an unknown serde fails every record", () => {
    const bad = decodeColumn("string", Buffer.from("abc"), [1, 1]);
    assert.equal(bad.failures.size, 2);
    assert.match(bad.failures.get(0)!, /malformed bundle column: lengths account for 2 bytes, the column holds 3/);
    assert.equal(decodeColumn("avro", Buffer.alloc(0), [-1]).failures.size, 1);
    assert.deepEqual(decodeColumn("json", Buffer.alloc(0), [-1, -1]).items, [null, null]);
  });

  test("encode strings, longs and json with nulls", () => {
    const s = encodeColumn("string", ["a", "é", "", "b"]);
    assert.deepEqual(s.lengths, [1, 2, 0, 1]);
    assert.equal(Buffer.from(s.data).toString(), "aéb");
    const sn = encodeColumn("string", ["a", null, "b"]);
    assert.deepEqual(sn.lengths, [1, -1, 1]);
    assert.equal(Buffer.from(sn.data).toString(), "ab");
    const l = encodeColumn("long", [1n, null, 2]);
    assert.deepEqual(l.lengths, [8, -1, 8]);
    assert.equal(hex(l.data), "00000000000000010000000000000002");
    const j = encodeColumn("json", [{ a: 1 }, null, [2]]);
    assert.deepEqual(j.lengths, [7, -1, 3]);
    assert.equal(Buffer.from(j.data).toString(), '{"a":1}[2]');
  });

  test("encode reports every item that does not encode", () => {
    const r = encodeColumn("long", [1n, "x", 2n, 1.5]);
    assert.deepEqual([...r.failures.keys()], [1, 3]);
    assert.match(r.failures.get(1)!, /^TypeError: long serde/);
    const s = encodeColumn("string", ["a", 1, "b"]);
    assert.deepEqual([...s.failures], [[1, "TypeError: string serde: want a string, got number"]]);
  });

  test("error text is TypeName: message", () => {
    class PoisonError extends Error {}
    assert.equal(errorText(new PoisonError("pill")), "PoisonError: pill");
    assert.equal(errorText(new RangeError("r")), "RangeError: r");
    assert.equal(errorText("boom"), "string: boom");
  });
});

describe("avro() names the Schema Registry serde", () => {
  test("without a schema, and with one as a string or an object", () => {
    assert.equal(avro(), "avro");
    const schema = { type: "record", name: "Priced", fields: [{ name: "id", type: "long" }] };
    assert.equal(avro(schema), `avro(${JSON.stringify(schema)})`);
    assert.equal(avro('{"type":"string"}'), 'avro({"type":"string"})');
    assert.equal(jsonSchema(), "json-schema");
    assert.equal(jsonSchema({ type: "object" }), 'json-schema({"type":"object"})');
    assert.equal(protobuf(), "protobuf");
    assert.equal(protobuf("message M { int64 id = 1; }"), "protobuf(message M { int64 id = 1; })");
    assert.equal(protobuf("message M {}", { message: "M" }), "protobuf(message M {}, message=M)");
    assert.equal(protobuf(undefined, { message: "shop.Refund" }), "protobuf(message=shop.Refund)");
  });
});
