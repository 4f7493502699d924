/**
 * What the bundle executor (bundle.ts) and the fold-program executor
 * (program.ts) share, so that neither imports the other: the user function
 * as they call it, telling a promise from a value, failing every record of
 * a result, and a column read as fold values by reference.
 */

import { create } from "@bufbuild/protobuf";
import { type BundleResult, RecordFailure_Kind, RecordFailureSchema } from "./gen/polystreams/v1alpha1/engine_pb.js";
import type { DecodedColumn } from "./serde.js";

/** A user function as the executor calls it. */
export type AnyFunction = (...args: any[]) => unknown;

export function isThenable(v: unknown): v is PromiseLike<unknown> {
  return (
    v !== null &&
    (typeof v === "object" || typeof v === "function") &&
    typeof (v as { then?: unknown }).then === "function"
  );
}

export function failEvery(result: BundleResult, n: number, step: number, message: string): BundleResult {
  result.outputCounts = new Array<number>(n).fill(0);
  result.failures = Array.from({ length: n }, (_, index) => create(RecordFailureSchema, { index, step, message, kind: RecordFailure_Kind.PROCESSING }));
  return result;
}

/** A decoded column of records as fold values: value i is record refs[i] (each record decoded once); no refs: as it is. */
export function byRefs(column: DecodedColumn, refs: readonly number[]): DecodedColumn {
  if (refs.length === 0) {
    return column;
  }
  const items = refs.map((j) => column.items[j]);
  const failures = new Map<number, string>();
  if (column.failures.size > 0) {
    refs.forEach((j, i) => {
      const f = column.failures.get(j);
      if (f !== undefined) {
        failures.set(i, f);
      }
    });
  }
  return { items, failures };
}
