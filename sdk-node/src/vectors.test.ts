// The host contract's test vectors (docs/design/host-vectors.md): every
// vector of conformance/vectors, run through the Executor with the
// catalogue functions it names, must give the vector's result byte for
// byte (failure messages aside, which must contain what the vector says).

import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { Executor } from "./bundle.js";
import type { AnyFunction } from "./outcomes.js";
import { BundleResultSchema, BundleSchema, RecordFailure_Kind } from "./gen/polystreams/v1alpha1/engine_pb.js";

const REPO = join(fileURLToPath(new URL(".", import.meta.url)), "..", "..");
const VECTORS = join(REPO, "conformance", "vectors");

// The conformance executor's catalogue binds the names the vectors use
// (loaded by path: it lives outside this package's sources).
type FnRef = string | { name: string; arg: string | number };
type Role =
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
  | "flat_map";
const catalogue = pathToFileURL(join(REPO, "conformance", "executors", "node", "catalogue.ts")).href;
const { fn } = (await import(catalogue)) as { fn: (ref: FnRef, role: Role) => AnyFunction };

interface Vector {
  name: string;
  functions: { token: number; role: Role; fn: FnRef }[];
  bundle: string;
  result: string;
  failures?: { index: number; step: number; kind: "processing" | "deserialization"; message_contains: string }[];
}

const KINDS = { processing: RecordFailure_Kind.PROCESSING, deserialization: RecordFailure_Kind.DESERIALIZATION };

const files = readdirSync(VECTORS)
  .filter((f) => f.endsWith(".json"))
  .sort();

test("the vectors are there", () => {
  assert.ok(files.includes("chains.json") && files.includes("failures.json"), files.join(", "));
});

for (const file of files) {
  const vectors = (JSON.parse(readFileSync(join(VECTORS, file), "utf8")) as { vectors: Vector[] }).vectors;
  describe(file, () => {
    for (const v of vectors) {
      test(v.name, async () => {
        const functions = new Map<number, AnyFunction>(v.functions.map((f) => [f.token, fn(f.fn, f.role)]));
        const bundle = fromBinary(BundleSchema, Buffer.from(v.bundle, "base64"));
        const result = await new Executor(functions).process(bundle);
        const want = v.failures ?? [];
        assert.deepEqual(
          result.failures.map((f) => [f.index, f.step, f.kind]),
          want.map((f) => [f.index, f.step, KINDS[f.kind]]),
        );
        result.failures.forEach((f, i) => {
          assert.ok(f.message.includes(want[i]!.message_contains), `failure ${i}: ${f.message}`);
          f.message = "";
        });
        assert.deepEqual(Buffer.from(toBinary(BundleResultSchema, result)).toString("base64"), v.result);
      });
    }
  });
}
