"""What the engine reports about a running application: :meth:`App.metrics`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from polystreams.v1alpha1 import engine_pb2 as pb

__all__ = ["DescribeFormat", "Metrics", "NodeMetrics", "PartitionLag", "StoreMetrics", "TaskMetrics"]

DescribeFormat = Literal["text", "json", "mermaid", "dot", "svg"]
"""A rendering of :meth:`App.describe`: ``text`` is Kafka Streams'
``Topology.describe()`` byte for byte; ``json`` its structured form (the
topology file format of ``polystreams describe``); ``mermaid`` and ``dot``
graph sources; ``svg`` a picture laid out by the engine."""


@dataclass(frozen=True)
class NodeMetrics:
    """One node's counters since start."""

    name: str
    subtopology: int
    records: int
    """Records into the node."""
    fused_into: str = ""
    """For a node fused into a chain of host operators after its first node:
    the first node, which counts for the chain (this node counts nothing)."""
    bundles: int = 0
    """Bundles that crossed to the host from this node."""
    mean_crossing_seconds: float = 0.0


@dataclass(frozen=True)
class PartitionLag:
    """One input partition of a task: ``lag`` records between ``position``
    (the next offset to commit) and ``end`` (the high watermark at the last
    fetch); -1 when not known yet."""

    topic: str
    partition: int
    position: int
    end: int
    lag: int


@dataclass(frozen=True)
class StoreMetrics:
    """One store partition of a task: its entries (counted up to 100,000)."""

    name: str
    entries: int


@dataclass(frozen=True)
class TaskMetrics:
    """One task (sub-topology x partition) the engine runs."""

    id: str
    restored: bool
    inputs: tuple[PartitionLag, ...] = ()
    stores: tuple[StoreMetrics, ...] = ()

    @property
    def lag(self) -> int:
        """Records behind over the task's inputs (-1 when none is known)."""
        known = [i.lag for i in self.inputs if i.lag >= 0]
        return sum(known) if known else -1


@dataclass(frozen=True)
class Metrics:
    """A summary of the engine's metrics for this application, as it
    reports them now (the engine's ``/metrics`` serves the same to
    Prometheus)::

        m = app.metrics()
        print(m.state, m.node("KSTREAM-SOURCE-0000000000").records, m.lag, m.dropped_records)
    """

    state: str
    nodes: tuple[NodeMetrics, ...] = ()
    tasks: tuple[TaskMetrics, ...] = ()
    dropped_records: int = 0
    failed_records: int = 0
    metrics_enabled: bool = True
    """False when ``polystreams.metrics.enabled`` is false: nodes then count nothing."""
    restored_records: int = 0
    total_restore_records: int = 0
    restoring_partitions: int = 0
    _by_name: dict[str, NodeMetrics] = field(default_factory=dict, repr=False, compare=False)

    def node(self, name: str) -> NodeMetrics:
        """The node called ``name`` (KeyError when there is none)."""
        if not self._by_name:
            self._by_name.update((n.name, n) for n in self.nodes)
        return self._by_name[name]

    @property
    def lag(self) -> int:
        """Records behind over all tasks (-1 when none is known)."""
        known = [t.lag for t in self.tasks if t.lag >= 0]
        return sum(known) if known else -1

    @classmethod
    def from_proto(cls, r: pb.GetMetricsResponse, state: str) -> Metrics:
        return cls(
            state=state,
            nodes=tuple(
                NodeMetrics(n.name, n.subtopology, n.records, n.fused_into, n.bundles, n.mean_crossing_seconds)
                for n in r.nodes
            ),
            tasks=tuple(
                TaskMetrics(
                    t.id,
                    t.restored,
                    tuple(PartitionLag(i.topic, i.partition, i.position, i.end, i.lag) for i in t.inputs),
                    tuple(StoreMetrics(s.name, s.entries) for s in t.stores),
                )
                for t in r.tasks
            ),
            dropped_records=r.dropped_records,
            failed_records=r.failed_records,
            metrics_enabled=r.metrics_enabled,
            restored_records=r.restore.restored_records,
            total_restore_records=r.restore.total_records,
            restoring_partitions=r.restore.restoring_partitions,
        )
