"""A Python processor over a versioned store against the same processor over
a plain key-value store, through the real engine (a test driver session:
each record its own bundle, crossing to the host and back, the engine
building the store view and applying the ops): microseconds per record.

  go build -o bin/polystreams ./core/cmd/polystreams
  PYTHONPATH=sdk-python/src /usr/bin/python3 tools/bench/processor/versioned_engine.py [rounds] [records] [distinct]

Rounds alternate the kinds; prints each kind's lowest and median.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from polystreams import Processor, ProcessorContext, Record, Stores
from polystreams.testing import TopologyTestDriver

REPO = Path(__file__).resolve().parents[3]


class PlainPutGet(Processor):
    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store = context.get_state_store("s")

    def process(self, record: Record[Any, Any]) -> None:
        n = (self.store.get(record.key) or 0) + 1
        self.store.put(record.key, n)
        self.context.forward(record.with_value(n))


class VersionedPutGet(Processor):
    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store = context.get_state_store("s")

    def process(self, record: Record[Any, Any]) -> None:
        self.store.put(record.key, len(record.value), record.timestamp)
        self.context.forward(record.with_value(self.store.get(record.key).value))


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2_000
    distinct = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    os.environ.setdefault("POLYSTREAMS_ENGINE", str(REPO / "bin" / "polystreams"))
    kinds = {
        "key-value": (Stores.key_value_store("s", key="string", value="long"), PlainPutGet),
        "versioned": (Stores.versioned_key_value_store("s", 3_600_000, key="string", value="long"), VersionedPutGet),
    }
    times: dict[str, list[float]] = {k: [] for k in kinds}
    t0 = 1_000_000
    for r in range(rounds):
        for kind, (store, cls) in kinds.items():
            with TopologyTestDriver(f"bench-{kind}-{r}") as driver:
                driver.add_state_store(store)
                driver.stream("in", key="string", value="string").process(cls, stores=["s"], value="long").to("out")
                driver.pipe_input("in", "warm", "x", timestamp=t0)
                records = [("in", f"k{j % distinct}", "x" * 100, t0 + j, None) for j in range(n)]
                start = time.perf_counter()
                driver.pipe_records(records)
                times[kind].append((time.perf_counter() - start) / n * 1e6)
                if len(driver.read_output("out")) != n + 1:
                    raise SystemExit(f"{kind}: the output lacks records")
    for kind, t in times.items():
        print(f"{kind}: {min(t):.1f} µs per record lowest, {statistics.median(t):.1f} median ({rounds} rounds of {n} records, keys from {distinct})")


if __name__ == "__main__":
    main()
