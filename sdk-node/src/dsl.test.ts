import assert from "node:assert/strict";
import { test } from "node:test";
import { printText } from "./dsl.js";

test("printText shows keys and values as Java's String.valueOf shows Kafka Streams' objects", () => {
  assert.equal(printText(null), "null");
  assert.equal(printText(undefined), "null");
  assert.equal(printText("a b"), "a b");
  assert.equal(printText(-20n), "-20");
  assert.equal(printText(0.5), "0.5");
  assert.equal(printText(true), "true");
  assert.equal(printText(new Uint8Array([0x0a, 0xff])), "0aff");
  assert.equal(printText({ a: 1n, b: [1, "x"] }), '{"a":"1","b":[1,"x"]}');
});
