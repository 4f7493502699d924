"""The Python SDK's executor on processor bundles, against map_values bundles
of the same records: the host's cost per record of a stateful processor
(count per key over a prefetched key-value store: get, put, forward), with
protobuf decoding and the answer's columns included.

  PYTHONPATH=sdk-python/src /usr/bin/python3 tools/bench/processor/sdk_host.py [rounds] [records] [distinct]

Rounds alternate the two kinds (so a load change on a shared machine hits
both); prints each kind's lowest and median microseconds per record.
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


class CountPerKey(Processor):
    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.counts = context.get_state_store("counts")

    def process(self, record: Record[Any, Any]) -> None:
        n = (self.counts.get(record.key) or 0) + 1
        self.counts.put(record.key, n)
        self.context.forward(record.with_value(n))


def bundle(i: int, processor: bool, n: int, distinct: int) -> pb.Bundle:
    keys = [f"key-{j % distinct:06d}".encode() for j in range(i * n, (i + 1) * n)]
    b = pb.Bundle(
        id=i, key_serde="string", value_serde="bytes", output_key_serde="string",
        output_value_serde="long" if processor else "bytes", topic="t", task="0_0",
        key_lengths=[len(k) for k in keys], keys=b"".join(keys), value_lengths=[100] * n, values=b"x" * (100 * n),
        offsets=list(range(n)), timestamps=list(range(n)),
    )
    if not processor:
        b.steps.append(pb.Step(token=2, operation=pb.OPERATION_MAP_VALUES, node="M"))
        return b
    b.steps.append(pb.Step(token=1, operation=pb.OPERATION_PROCESS, node="P", stores=["counts"], children=["sink"]))
    view = pb.StoreView(store="counts", key_serde="string", value_serde="long", type=pb.STORE_TYPE_KEY_VALUE)
    for j, k in enumerate(sorted(set(keys))):  # half the keys stored, half known absent
        view.key_lengths.append(len(k))
        view.keys += k
        if j % 2:
            view.value_lengths.append(8)
            view.values += struct.pack(">q", j)
        else:
            view.value_lengths.append(-1)
    b.stores.append(view)
    return b


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    distinct = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    count = max(20_000 // n, 1)
    ex = Executor({1: CountPerKey, 2: lambda v: v})
    kinds = {"map_values": [bundle(i, False, n, distinct) for i in range(count)],
             "process": [bundle(i, True, n, distinct) for i in range(count)]}
    times: dict[str, list[float]] = {k: [] for k in kinds}
    for _ in range(rounds):
        for kind, bundles in kinds.items():
            start = time.perf_counter()
            for b in bundles:
                r = ex.process(b)
                if r.failures:
                    raise SystemExit(f"{kind}: {r.failures[0].message}")
            times[kind].append((time.perf_counter() - start) / (count * n) * 1e6)
    for kind, t in times.items():
        print(f"{kind}: {min(t):.2f} µs per record lowest, {statistics.median(t):.2f} median "
              f"({rounds} rounds, bundles of {n}, keys from {distinct})")


if __name__ == "__main__":
    main()
