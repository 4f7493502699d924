"""A sink's routing functions in the host: a StreamPartitioner
(``OPERATION_STREAM_PARTITION``: ``partitioner(topic, key, value,
num_partitions)`` -> a partition, an iterable of partitions, or None for
Kafka's default partitioner) and a TopicNameExtractor
(``OPERATION_TOPIC_NAME``: ``extractor(key, value, record_context)`` -> a
topic). One call per record of the bundle; awaitables are awaited together.
A record whose key or value does not decode, or whose call raises or answers
something else, fails alone."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from polystreams._aio import Failed, Loop, function_name, is_awaitable
from polystreams._operations import DESERIALIZATION, PROCESSING
from polystreams.processor import RecordMetadata
from polystreams.serde import decode_column
from polystreams.v1alpha1 import engine_pb2 as pb

STREAM_PARTITION = pb.OPERATION_STREAM_PARTITION
TOPIC_NAME = pb.OPERATION_TOPIC_NAME
ROUTES = frozenset({STREAM_PARTITION, TOPIC_NAME})


def _text(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def _partitions(out: Any, n: int) -> list[int] | None:
    """A partitioner's answer as partitions (None: the default partitioner)."""
    if out is None:
        return None
    if isinstance(out, bool) or not isinstance(out, (int, Iterable)):
        raise TypeError(
            f"a stream partitioner returns a partition, partitions or None, not {type(out).__name__}"
        )
    ps = [out] if isinstance(out, int) else list(out)
    for p in ps:
        if isinstance(p, bool) or not isinstance(p, int):
            raise TypeError(
                f"a stream partitioner returns int partitions, not {type(p).__name__}"
            )
    return list(dict.fromkeys(ps))  # a set, in the order given


class Route:
    """Runs one routing step over bundles."""

    __slots__ = ("fn", "op", "node", "token", "loop", "broken")

    def __init__(
        self, bundle: pb.Bundle, functions: Mapping[int, Callable[..., Any]], loop: Loop
    ) -> None:
        st = bundle.steps[0]
        self.op, self.node, self.token, self.loop = (
            st.operation,
            st.node,
            st.token,
            loop,
        )
        fn = functions.get(st.token)
        self.broken: str | None = None
        if fn is None:
            self.broken = f"LookupError: step 0 ({st.node}) names token {st.token}, which is not registered in this host"
        self.fn: Callable[..., Any] = fn or (lambda *a: None)

    def _what(self) -> str:
        kind = (
            "stream partitioner"
            if self.op == STREAM_PARTITION
            else "topic name extractor"
        )
        return f"{kind} {function_name(self.fn)} of node {self.node}"

    def run(self, b: pb.Bundle) -> pb.BundleResult:
        n = len(b.value_lengths)
        result = pb.BundleResult(bundle_id=b.id)
        if self.broken is not None:
            result.output_counts.extend([0] * n)
            result.failures.extend(
                pb.RecordFailure(index=i, step=0, message=self.broken, kind=PROCESSING)
                for i in range(n)
            )
            return result
        keys, kfail = decode_column(b.key_serde, b.keys, list(b.key_lengths))
        vals, vfail = decode_column(b.value_serde, b.values, list(b.value_lengths))
        failed: dict[int, tuple[str, pb.RecordFailure.Kind]] = {}
        outs: dict[int, Any] = {}
        pending: list[int] = []
        fn, partition = self.fn, self.op == STREAM_PARTITION
        topic, nparts = b.sink_topic, b.sink_partitions
        for i in range(n):
            bad = kfail.get(i) or vfail.get(i)
            if bad is not None:
                failed[i] = (bad, DESERIALIZATION)
                continue
            try:
                if partition:
                    out = fn(topic, keys[i], vals[i], nparts)
                else:
                    ctx = RecordMetadata(
                        b.topic,
                        b.partition,
                        b.offsets[i] if i < len(b.offsets) else -1,
                        b.timestamps[i] if i < len(b.timestamps) else 0,
                    )
                    out = fn(keys[i], vals[i], ctx)
            except Exception as e:
                failed[i] = (_text(e), PROCESSING)
                continue
            outs[i] = out
            if type(out) is not int and out is not None and is_awaitable(out):
                pending.append(i)
        if pending:
            for i, out in zip(
                pending, self.loop.gather([outs[i] for i in pending], self._what)
            ):
                if type(out) is Failed:
                    failed[i] = (out.message, PROCESSING)
                else:
                    outs[i] = out
        counts: list[int] = []
        lengths: list[int] = []
        chunks: list[bytes] = []
        for i in range(n):
            if i in failed:
                counts.append(0)
                continue
            out = outs[i]
            try:
                if partition:
                    if type(out) is int and -(1 << 31) <= out < (
                        1 << 31
                    ):  # the common answer, one partition
                        counts.append(1)
                        lengths.append(4)
                        chunks.append(out.to_bytes(4, "big", signed=True))
                        continue
                    ps = _partitions(out, nparts)
                    if ps is None:
                        counts.append(1)
                        lengths.append(-1)
                        continue
                    encoded = [p.to_bytes(4, "big", signed=True) for p in ps]
                    counts.append(len(ps))
                    lengths.extend([4] * len(ps))
                    chunks.extend(encoded)
                else:
                    if not isinstance(out, str) or not out:
                        raise TypeError(
                            f"a topic name extractor returns a topic (a non-empty str), not {out!r}"
                        )
                    data = out.encode()
                    counts.append(1)
                    lengths.append(len(data))
                    chunks.append(data)
            except (TypeError, OverflowError) as e:
                failed[i] = (f"{_text(e)} ({self._what()})", PROCESSING)
                counts.append(0)
        result.output_counts.extend(counts)
        result.value_lengths.extend(lengths)
        result.values = b"".join(chunks)
        result.failures.extend(
            pb.RecordFailure(index=i, step=0, message=m, kind=k)
            for i, (m, k) in sorted(failed.items())
        )
        return result
