"""The Python SDK's executor on processor bundles over a versioned store,
against the same processor shape over a plain key-value store: the host's
cost per record of a versioned put + get (with a forward) beside a plain
get + put (with a forward), protobuf decoding and the answer's columns
included, no engine and no network. Each bundle carries what the engine
sends: per distinct key its entry (key-value store) or its versions and the
store's stream time (versioned store).

  PYTHONPATH=sdk-python/src /usr/bin/python3 tools/bench/processor/versioned_host.py [rounds] [records] [distinct] [versions]

Rounds alternate the kinds (so a load change on a shared machine hits
both); prints each kind's lowest and median microseconds per record and
the bundle's encoded bytes per record.
"""

from __future__ import annotations

import statistics
import struct
import sys
import time
from typing import Any

from polystreams import Processor, ProcessorContext, Record
from polystreams._bundle import Executor
from polystreams.v1alpha1 import engine_pb2 as pb


class PlainPutGet(Processor):
    """A key-value store: get then put the record's count; forward it."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store = context.get_state_store("s")

    def process(self, record: Record[Any, Any]) -> None:
        n = (self.store.get(record.key) or 0) + 1
        self.store.put(record.key, n)
        self.context.forward(record.with_value(n))


class VersionedPutGet(Processor):
    """A versioned store: put the record's count at its time, get the latest; forward it."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store = context.get_state_store("s")

    def process(self, record: Record[Any, Any]) -> None:
        self.store.put(record.key, len(record.key), record.timestamp)
        v = self.store.get(record.key)
        self.context.forward(record.with_value(v.value))


def bundle(i: int, kind: str, n: int, distinct: int, versions: int) -> pb.Bundle:
    keys = [f"key-{j % distinct:06d}".encode() for j in range(i * n, (i + 1) * n)]
    base = 1_000_000 + i * n
    b = pb.Bundle(
        id=i, key_serde="string", value_serde="bytes", output_key_serde="string", output_value_serde="long",
        topic="t", task="0_0", key_lengths=[len(k) for k in keys], keys=b"".join(keys), value_lengths=[100] * n,
        values=b"x" * (100 * n), offsets=list(range(n)), timestamps=[base + j for j in range(n)],
    )
    b.steps.append(pb.Step(token=1 if kind == "key-value" else 2, operation=pb.OPERATION_PROCESS, node=kind, stores=["s"], children=["sink"]))
    if kind == "key-value":
        view = pb.StoreView(store="s", key_serde="string", value_serde="long", type=pb.STORE_TYPE_KEY_VALUE)
        for j, k in enumerate(sorted(set(keys))):  # half the keys stored, half known absent
            view.key_lengths.append(len(k))
            view.keys += k
            if j % 2:
                view.value_lengths.append(8)
                view.values += struct.pack(">q", j)
            else:
                view.value_lengths.append(-1)
    else:
        view = pb.StoreView(store="s", key_serde="string", value_serde="long", type=pb.STORE_TYPE_VERSIONED_KEY_VALUE,
                            stream_time_ms=base - 1, history_retention_ms=60_000)
        for j, k in enumerate(sorted(set(keys))):  # half the keys with versions, half with none
            view.key_lengths.append(len(k))
            view.keys += k
            c = versions if j % 2 else 0
            view.version_counts.append(c)
            for v in range(c):
                view.value_lengths.append(8)
                view.values += struct.pack(">q", v)
                view.windows.append(base - 1 - (c - v) * 1000)
    b.stores.append(view)
    return b


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    distinct = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    versions = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    count = max(20_000 // n, 1)
    ex = Executor({1: PlainPutGet, 2: VersionedPutGet})
    kinds = {k: [bundle(i, k, n, distinct, versions) for i in range(count)] for k in ("key-value", "versioned")}
    size = {k: sum(len(b.SerializeToString()) for b in bs) / (count * n) for k, bs in kinds.items()}
    times: dict[str, list[float]] = {k: [] for k in kinds}
    for _ in range(rounds):
        for kind, bundles in kinds.items():
            start = time.perf_counter()
            for b in bundles:
                r = ex.process(pb.Bundle.FromString(b.SerializeToString()))
                if r.failures:
                    raise SystemExit(f"{kind}: {r.failures[0].message}")
                r.SerializeToString()
            times[kind].append((time.perf_counter() - start) / (count * n) * 1e6)
    for kind, t in times.items():
        print(f"{kind}: {min(t):.2f} µs per record lowest, {statistics.median(t):.2f} median, "
              f"bundle {size[kind]:.0f} bytes per record ({rounds} rounds, bundles of {n}, keys from {distinct}, "
              f"{versions} versions per stored key)")


if __name__ == "__main__":
    main()
