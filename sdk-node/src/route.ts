/**
 * A sink's routing functions in this host: a StreamPartitioner
 * (`Operation.STREAM_PARTITION`: `partitioner(topic, key, value,
 * numPartitions)` -> a partition, an iterable of partitions, or
 * null/undefined for Kafka's default partitioner) and a TopicNameExtractor
 * (`Operation.TOPIC_NAME`: `extractor(key, value, recordContext)` -> a
 * topic). One call per record; promises are awaited together. A record
 * whose key or value does not decode, or whose call throws or answers
 * something else, fails alone.
 * @internal
 */

import { create } from "@bufbuild/protobuf";
import {
  type Bundle,
  type BundleResult,
  BundleResultSchema,
  Operation,
  RecordFailure_Kind,
  RecordFailureSchema,
} from "./gen/polystreams/v1alpha1/engine_pb.js";
import { type AnyFunction, failEvery, isThenable } from "./outcomes.js";
import type { RecordMetadata } from "./processor.js";
import { decodeColumn, errorText } from "./serde.js";

export const ROUTES: ReadonlySet<Operation> = new Set([Operation.STREAM_PARTITION, Operation.TOPIC_NAME]);

/** Runs one routing step over bundles. */
export class Route {
  private readonly fn: AnyFunction | undefined;
  private readonly broken: string | null = null;
  private readonly partition: boolean;

  constructor(bundle: Bundle, functions: ReadonlyMap<number, AnyFunction>) {
    const st = bundle.steps[0]!;
    this.fn = functions.get(st.token);
    this.partition = st.operation === Operation.STREAM_PARTITION;
    if (this.fn === undefined) {
      this.broken = `ReferenceError: step 0 (${st.node}) names token ${st.token}, which is not registered in this host`;
    }
  }

  async run(b: Bundle): Promise<BundleResult> {
    const n = b.valueLengths.length;
    const result = create(BundleResultSchema, { bundleId: b.id });
    if (this.broken !== null) {
      return failEvery(result, n, 0, this.broken);
    }
    const keys = decodeColumn(b.keySerde, b.keys, b.keyLengths);
    const values = decodeColumn(b.valueSerde, b.values, b.valueLengths);
    const failed = new Map<number, [string, RecordFailure_Kind]>();
    const outs: unknown[] = new Array<unknown>(n);
    const pending: number[] = [];
    const fn = this.fn!;
    for (let i = 0; i < n; i++) {
      const bad = keys.failures.get(i) ?? values.failures.get(i);
      if (bad !== undefined) {
        failed.set(i, [bad, RecordFailure_Kind.DESERIALIZATION]);
        continue;
      }
      try {
        if (this.partition) {
          outs[i] = fn(b.sinkTopic, keys.items[i], values.items[i], b.sinkPartitions);
        } else {
          const rc: RecordMetadata = {
            topic: b.topic,
            partition: b.partition,
            offset: Number(b.offsets[i] ?? -1n),
            timestamp: Number(b.timestamps[i] ?? 0n),
            headers: [],
          };
          outs[i] = fn(keys.items[i], values.items[i], rc);
        }
        if (isThenable(outs[i])) {
          pending.push(i);
        }
      } catch (e) {
        failed.set(i, [errorText(e), RecordFailure_Kind.PROCESSING]);
      }
    }
    if (pending.length > 0) {
      const settled = await Promise.allSettled(pending.map((i) => outs[i]));
      settled.forEach((s, j) => {
        const i = pending[j]!;
        if (s.status === "fulfilled") {
          outs[i] = s.value;
        } else {
          failed.set(i, [errorText(s.reason), RecordFailure_Kind.PROCESSING]);
        }
      });
    }
    const counts: number[] = [];
    const lengths: number[] = [];
    const chunks: Uint8Array[] = [];
    const what = this.partition ? "a stream partitioner" : "a topic name extractor";
    for (let i = 0; i < n; i++) {
      if (failed.has(i)) {
        counts.push(0);
        continue;
      }
      const out = outs[i];
      if (this.partition) {
        if (out === null || out === undefined) {
          counts.push(1);
          lengths.push(-1);
          continue;
        }
        const ps = typeof out === "number" ? [out] : typeof out === "object" && Symbol.iterator in out ? [...new Set(out as Iterable<unknown>)] : null;
        if (ps === null || ps.some((p) => typeof p !== "number" || !Number.isInteger(p) || p < -0x80000000 || p > 0x7fffffff)) {
          failed.set(i, [`TypeError: ${what} returns a partition, partitions or null, not ${String(out)}`, RecordFailure_Kind.PROCESSING]);
          counts.push(0);
          continue;
        }
        counts.push(ps.length);
        for (const p of ps as number[]) {
          const buf = new Uint8Array(4);
          new DataView(buf.buffer).setInt32(0, p);
          lengths.push(4);
          chunks.push(buf);
        }
      } else {
        if (typeof out !== "string" || out === "") {
          failed.set(i, [`TypeError: ${what} returns a topic (a non-empty string), not ${String(out)}`, RecordFailure_Kind.PROCESSING]);
          counts.push(0);
          continue;
        }
        const data = new TextEncoder().encode(out);
        counts.push(1);
        lengths.push(data.length);
        chunks.push(data);
      }
    }
    result.outputCounts = counts;
    result.valueLengths = lengths;
    const total = chunks.reduce((s, c) => s + c.length, 0);
    const values_ = new Uint8Array(total);
    let at = 0;
    for (const c of chunks) {
      values_.set(c, at);
      at += c.length;
    }
    result.values = values_;
    result.failures = [...failed]
      .sort((x, y) => x[0] - y[0])
      .map(([index, [message, kind]]) => create(RecordFailureSchema, { index, step: 0, message, kind }));
    return result;
  }
}
