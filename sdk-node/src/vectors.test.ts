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
import { create, fromBinary, toBinary, toJson } from "@bufbuild/protobuf";
import { HOST_FEATURES } from "./app.js";
import { Executor } from "./bundle.js";
import type { AnyFunction } from "./outcomes.js";
import { BundleResultSchema, BundleSchema, ReadRequestSchema, ReadResponseSchema, RecordFailure_Kind } from "./gen/polystreams/v1alpha1/engine_pb.js";
import type { ReadFn } from "./processor.js";

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
const { fn, processor } = (await import(catalogue)) as {
  fn: (ref: FnRef, role: Role) => AnyFunction;
  processor: (ref: FnRef, stores: readonly string[]) => AnyFunction;
};

type Failures = { index: number; step: number; kind: "processing" | "deserialization"; message_contains: string }[];

interface Vector {
  name: string;
  functions: { token: number; role: Role | "processor"; fn: FnRef }[];
  bundle: string;
  result: string;
  failures?: Failures;
  /** Processor vectors: one fresh host runs these in order. */
  exchanges?: { bundle: string; reads?: { request: string; response: string }[]; result: string; failures?: Failures }[];
}

const KINDS = { processing: RecordFailure_Kind.PROCESSING, deserialization: RecordFailure_Kind.DESERIALIZATION };

const files = readdirSync(VECTORS)
  .filter((f) => f.endsWith(".json"))
  .sort();

test("the vectors are there", () => {
  assert.ok(files.includes("chains.json") && files.includes("failures.json") && files.includes("processors.json"), files.join(", "));
});

for (const file of files) {
  const { vectors, requires = [] } = JSON.parse(readFileSync(join(VECTORS, file), "utf8")) as { vectors: Vector[]; requires?: string[] };
  // A file declares the host features its bundles need: this host runs it
  // only when it declares them all.
  const missing = requires.filter((f) => !HOST_FEATURES.includes(f));
  describe(file, { skip: missing.length > 0 ? `needs host features ${missing.join(", ")}` : false }, () => {
    for (const v of vectors) {
      if (v.exchanges !== undefined) {
        test(v.name, () => processorVector(v));
        continue;
      }
      test(v.name, async () => {
        const functions = new Map<number, AnyFunction>(v.functions.map((f) => [f.token, fn(f.fn, f.role as Role)]));
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

/**
 * A processor vector: one fresh host (processor instances live across the
 * exchanges) runs each bundle, its Reads answered from the exchange's
 * `reads` in order, each request checked byte for byte (session id cleared).
 */
async function processorVector(v: Vector): Promise<void> {
  const exchanges = v.exchanges!;
  const first = fromBinary(BundleSchema, Buffer.from(exchanges[0]!.bundle, "base64"));
  const functions = new Map<number, AnyFunction>(
    v.functions.map((f) => [f.token, f.role === "processor" ? processor(f.fn, first.steps.find((s) => s.token === f.token)?.stores ?? []) : fn(f.fn, f.role)]),
  );
  let reads: { request: string; response: string }[] = [];
  const read: ReadFn = async (req) => {
    const want = reads.shift();
    const got = Buffer.from(toBinary(ReadRequestSchema, create(ReadRequestSchema, { ...req, sessionId: "" }))).toString("base64");
    assert.ok(want !== undefined, `${v.name}: a Read beyond the vector's: ${got}`);
    assert.equal(got, want.request, `${v.name}: a Read the vector does not have`);
    return fromBinary(ReadResponseSchema, Buffer.from(want.response, "base64"));
  };
  const executor = new Executor(functions, read);
  for (const [i, x] of exchanges.entries()) {
    reads = [...(x.reads ?? [])];
    const result = await executor.process(fromBinary(BundleSchema, Buffer.from(x.bundle, "base64")));
    assert.deepEqual(reads, [], `${v.name} exchange ${i}: Reads the vector has and the host did not make`);
    const want = x.failures ?? [];
    assert.deepEqual(
      result.failures.map((f) => [f.index, f.step, f.kind]),
      want.map((f) => [f.index, f.step, KINDS[f.kind]]),
      `${v.name} exchange ${i}: failures ${result.failures.map((f) => f.message).join("; ")}`,
    );
    result.failures.forEach((f, j) => {
      assert.ok(f.message.includes(want[j]!.message_contains), `failure ${j}: ${f.message}`);
      f.message = "";
    });
    assert.deepEqual(
      toJson(BundleResultSchema, fromBinary(BundleResultSchema, toBinary(BundleResultSchema, result))),
      toJson(BundleResultSchema, fromBinary(BundleResultSchema, Buffer.from(x.result, "base64"))),
      `${v.name} exchange ${i}`,
    );
    assert.equal(Buffer.from(toBinary(BundleResultSchema, result)).toString("base64"), x.result, `${v.name} exchange ${i}: byte for byte`);
  }
}
