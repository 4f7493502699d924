/**
 * The Node SDK's executor on processor bundles, in process (no engine, no
 * network): a bundle is encoded as the engine sends it, decoded, run by
 * sdk-node's Executor and its result encoded, as the host loop does. Two
 * shapes over the same records (docs/design/processor.md, "Measurements"):
 *
 *   stateless   a map_values step (value -> value): the floor.
 *   processor   a PROCESS step whose processor gets, puts and forwards one
 *               record each, over a store view of the bundle's distinct keys
 *               (half present); no Read is needed.
 *
 * Usage (from sdk-node, for its node_modules):
 *   node --import tsx src/testing/processor_bench.ts [rounds] [records] [distinct]
 * Prints "name ns_per_record" per round.
 */

import { Buffer } from "node:buffer";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Executor } from "../bundle.js";
import { BundleEntry_Kind, BundleResultSchema, BundleSchema, Operation, StoreType } from "../gen/polystreams/v1alpha1/engine_pb.js";
import type { ProcessorContext, ProcessorKeyValueStore, Record } from "../index.js";

const [rounds = 9, records = 500, distinct = 200] = process.argv.slice(2).map(Number);

function col(items: (Buffer | null)[]): { data: Buffer; lengths: number[] } {
  return { data: Buffer.concat(items.filter((b): b is Buffer => b !== null)), lengths: items.map((b) => (b === null ? -1 : b.length)) };
}

const value = Buffer.alloc(100, "v");
const keys = Array.from({ length: records }, (_, i) => Buffer.from(`key-${(i * 7919) % distinct}`));
const k = col(keys);
const v = col(keys.map(() => value));
const distinctKeys = [...new Set(keys.map((b) => b.toString()))].map((s) => Buffer.from(s));
const view = col(distinctKeys);
const viewValues = col(distinctKeys.map((_, i) => (i % 2 === 0 ? value : null)));

function bundle(op: Operation, id: bigint, init: boolean): Uint8Array {
  return toBinary(
    BundleSchema,
    create(BundleSchema, {
      id,
      steps: [{ token: 1, operation: op, node: "P", stores: op === Operation.MAP_VALUES ? [] : ["s"], children: ["SINK"] }],
      keySerde: "bytes",
      valueSerde: "bytes",
      keyLengths: k.lengths,
      keys: k.data,
      valueLengths: v.lengths,
      values: v.data,
      topic: "in",
      partition: 0,
      offsets: keys.map((_, i) => BigInt(i)),
      timestamps: keys.map((_, i) => BigInt(i)),
      task: "0_0",
      inits: init ? [{ kind: BundleEntry_Kind.INIT, step: 0 }] : [],
      stores:
        op === Operation.MAP_VALUES
          ? []
          : [{ store: "s", keySerde: "bytes", valueSerde: "bytes", type: StoreType.KEY_VALUE, keyLengths: view.lengths, keys: view.data, valueLengths: viewValues.lengths, values: viewValues.data }],
    }),
  );
}

class P {
  ctx!: ProcessorContext<Uint8Array, Uint8Array>;
  store!: ProcessorKeyValueStore<Uint8Array, Uint8Array>;
  init(ctx: ProcessorContext<Uint8Array, Uint8Array>): void {
    this.ctx = ctx;
    this.store = ctx.getStateStore("s");
  }
  async process(r: Record<Uint8Array, Uint8Array>): Promise<void> {
    const old = await this.store.get(r.key);
    this.store.put(r.key, r.value);
    this.ctx.forward(old === null ? r : r.withValue(old));
  }
}

const stateless = new Executor(new Map([[1, (x: unknown) => x]]));
const proc = new Executor(new Map([[1, () => new P()]]));
await proc.process(fromBinary(BundleSchema, bundle(Operation.PROCESS, 0n, true)));
const shapes: [string, Executor, Uint8Array][] = [
  ["stateless", stateless, bundle(Operation.MAP_VALUES, 1n, false)],
  ["processor", proc, bundle(Operation.PROCESS, 2n, false)],
];
const per = Math.max(1, Math.round(200_000 / records));
for (let round = 0; round < rounds; round++) {
  for (const [name, ex, bytes] of shapes) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < per; i++) {
      const result = await ex.process(fromBinary(BundleSchema, bytes));
      if (result.failures.length > 0) throw new Error(`${name}: ${result.failures[0]!.message}`);
      toBinary(BundleResultSchema, result);
    }
    const ns = Number(process.hrtime.bigint() - t0) / (per * records);
    console.log(`${name} ${ns.toFixed(0)}`);
  }
}
