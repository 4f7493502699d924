"""One store read per round trip on the real engine↔host path: the Python
SDK (its Connect client over the standard library's http.client) asking a
running engine for one key of a store, as a processor's Read call would.

It starts an engine test-driver session (the SDK finds bin/polystreams),
counts keys into the store "counts", then times get() calls: each one is
the engine's Query RPC (session lookup, the store read, the answer) over
loopback. Prints "ns_per_read" once per round.

  PYTHONPATH=sdk-python/src python3 tools/bench/processor/engine_read.py 5 400
"""

import sys
import time

from polystreams.testing import TopologyTestDriver


def main() -> None:
    rounds, calls = int(sys.argv[1]), int(sys.argv[2])
    with TopologyTestDriver("processor-read-bench") as driver:
        driver.stream("events", key="string", value="string").group_by_key().count(materialized="counts")
        for i in range(100):
            driver.pipe_input("events", f"customer-{i:06d}", "x")
        store = driver.get_store("counts")
        if store.get("customer-000002") != 1:
            raise SystemExit(f"counts[customer-000002] = {store.get('customer-000002')!r}, want 1")
        for _ in range(50):
            store.get("customer-000002")
        for _ in range(rounds):
            t = time.perf_counter_ns()
            for i in range(calls):
                store.get(f"customer-{i % 100:06d}")
            print((time.perf_counter_ns() - t) / calls)


main()
