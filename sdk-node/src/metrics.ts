// What the engine reports about a running application: App.metrics().
import type { GetMetricsResponse } from "./gen/polystreams/v1alpha1/engine_pb.js";

/**
 * A rendering of App.describe(): `text` is Kafka Streams'
 * `Topology.describe()` byte for byte; `json` its structured form (the
 * topology file of `polystreams describe`); `mermaid` and `dot` graph
 * sources; `svg` a picture laid out by the engine.
 */
export type DescribeFormat = "text" | "json" | "mermaid" | "dot" | "svg";

/** One node's counters since start. */
export interface NodeMetrics {
  name: string;
  subtopology: number;
  /** Records into the node. */
  records: number;
  /**
   * For a node fused into a chain of host operators after its first node:
   * the first node, which counts for the chain (this node counts nothing).
   */
  fusedInto?: string;
  /** Bundles that crossed to the host from this node, and their mean round trip. */
  bundles: number;
  meanCrossingSeconds: number;
}

/**
 * One input partition of a task: `lag` records between `position` (the next
 * offset to commit) and `end` (the high watermark at the last fetch); -1
 * when not known yet.
 */
export interface PartitionLag {
  topic: string;
  partition: number;
  position: number;
  end: number;
  lag: number;
}

/** One task (sub-topology x partition) the engine runs. */
export interface TaskMetrics {
  id: string;
  restored: boolean;
  inputs: PartitionLag[];
  /** Its store partitions' entries (counted up to 100,000). */
  stores: { name: string; entries: number }[];
  /** Records behind over its inputs (-1 when none is known). */
  lag: number;
}

/**
 * A summary of the engine's metrics for this application, as it reports
 * them now (the engine's `/metrics` serves the same to Prometheus).
 */
export interface Metrics {
  state: string;
  nodes: NodeMetrics[];
  tasks: TaskMetrics[];
  /** Records behind over all tasks (-1 when none is known). */
  lag: number;
  droppedRecords: number;
  failedRecords: number;
  /** False when `polystreams.metrics.enabled` is false: nodes then count nothing. */
  metricsEnabled: boolean;
  restore: { restoredRecords: number; totalRecords: number; restoringPartitions: number; totalPartitions: number };
}

function sumKnown(xs: number[]): number {
  const known = xs.filter((x) => x >= 0);
  return known.length === 0 ? -1 : known.reduce((a, b) => a + b, 0);
}

/** metricsFrom turns the engine's answer into Metrics. */
export function metricsFrom(r: GetMetricsResponse, state: string): Metrics {
  const tasks = r.tasks.map((t) => {
    const inputs = t.inputs.map((i) => ({
      topic: i.topic,
      partition: i.partition,
      position: Number(i.position),
      end: Number(i.end),
      lag: Number(i.lag),
    }));
    return {
      id: t.id,
      restored: t.restored,
      inputs,
      stores: t.stores.map((s) => ({ name: s.name, entries: Number(s.entries) })),
      lag: sumKnown(inputs.map((i) => i.lag)),
    };
  });
  return {
    state,
    nodes: r.nodes.map((n) => ({
      name: n.name,
      subtopology: n.subtopology,
      records: Number(n.records),
      ...(n.fusedInto ? { fusedInto: n.fusedInto } : {}),
      bundles: Number(n.bundles),
      meanCrossingSeconds: n.meanCrossingSeconds,
    })),
    tasks,
    lag: sumKnown(tasks.map((t) => t.lag)),
    droppedRecords: Number(r.droppedRecords),
    failedRecords: Number(r.failedRecords),
    metricsEnabled: r.metricsEnabled,
    restore: {
      restoredRecords: Number(r.restore?.restoredRecords ?? 0n),
      totalRecords: Number(r.restore?.totalRecords ?? 0n),
      restoringPartitions: r.restore?.restoringPartitions ?? 0,
      totalPartitions: r.restore?.totalPartitions ?? 0,
    },
  };
}
