/**
 * The host side of a source's TimestampExtractor
 * (OPERATION_EXTRACT_TIMESTAMP): one step; each record is answered with one
 * output whose timestamp is `outputTimestamps[i]`. Record i's partition
 * time is the bundle's `partitionTime` for record 0, then the largest
 * non-negative timestamp extracted before it, so calls run one after
 * another (an async extractor is awaited before the next record). A key or
 * value that does not decode fails as deserialization; a throw, or an
 * answer that is not an integer, as processing (the engine then stops the
 * application, as Kafka Streams does).
 * @internal
 */
import { create } from "@bufbuild/protobuf";
import { type Bundle, type BundleResult, BundleResultSchema, RecordFailure_Kind, RecordFailureSchema } from "./gen/polystreams/v1alpha1/engine_pb.js";
import { type AnyFunction, isThenable } from "./outcomes.js";
import { Metadata_, recordHeaders } from "./processor.js";
import { decodeColumn, errorText } from "./serde.js";

export async function runExtract(b: Bundle, functions: ReadonlyMap<number, AnyFunction>): Promise<BundleResult> {
  const st = b.steps[0]!;
  const n = b.valueLengths.length;
  const result = create(BundleResultSchema, { bundleId: b.id });
  const fail = (index: number, message: string, kind: RecordFailure_Kind): void => {
    result.outputCounts.push(0);
    result.failures.push(create(RecordFailureSchema, { index, step: 0, message, kind }));
  };
  const fn = functions.get(st.token);
  if (fn === undefined) {
    for (let i = 0; i < n; i++) {
      fail(i, `LookupError: timestamp extractor (${st.node}) names token ${st.token}, which is not registered in this host`, RecordFailure_Kind.PROCESSING);
    }
    return result;
  }
  const keys = decodeColumn(b.keySerde || "bytes", b.keys, b.keyLengths);
  const values = decodeColumn(b.valueSerde || "bytes", b.values, b.valueLengths);
  const headers = recordHeaders(b, n);
  let pt = b.partitionTime;
  for (let i = 0; i < n; i++) {
    const bad = keys.failures.get(i) ?? values.failures.get(i);
    if (bad !== undefined) {
      fail(i, bad, RecordFailure_Kind.DESERIALIZATION);
      continue;
    }
    const meta = new Metadata_(Number(b.timestamps[i] ?? 0n), [...headers[i]!], b.topic, b.partition, Number(b.offsets[i] ?? -1n));
    let ts: unknown;
    try {
      ts = fn(keys.items[i], values.items[i], meta, Number(pt));
      if (isThenable(ts)) {
        ts = await ts;
      }
    } catch (e) {
      fail(i, errorText(e), RecordFailure_Kind.PROCESSING);
      continue;
    }
    let v: bigint;
    if (typeof ts === "bigint") {
      v = ts;
    } else if (typeof ts === "number" && Number.isSafeInteger(ts)) {
      v = BigInt(ts);
    } else {
      fail(i, `TypeError: timestamp extractor ${fn.name || "anonymous"} answered ${String(ts)}; it must return an integer (epoch ms)`, RecordFailure_Kind.PROCESSING);
      continue;
    }
    result.outputCounts.push(1);
    result.outputTimestamps.push(v);
    if (v >= 0n && v > pt) {
      pt = v;
    }
  }
  return result;
}
