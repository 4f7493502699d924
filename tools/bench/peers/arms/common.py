"""What every Python arm of make bench-peers takes on its command line
(tools/bench/peers/peers.py starts them): one flag set, so that an arm is a
command line and nothing else."""
from __future__ import annotations

import argparse

TOPOLOGIES = ["map_values", "word_count", "count", "sum_eos", "sum_alos",
              "tumbling_count", "hopping_count", "hopping_sum", "join", "join_global"]

# (size, advance) in milliseconds of the windowed topologies (peers.py's
# Topology.window says the same).
WINDOWS = {"tumbling_count": (60_000, 60_000), "hopping_count": (60_000, 15_000), "hopping_sum": (60_000, 15_000)}


def parser(doc: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--app", required=True, help="application id / consumer group")
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--topology", required=True, choices=TOPOLOGIES)
    ap.add_argument("--commit-ms", type=int, required=True)
    ap.add_argument("--state-dir", required=True)
    ap.add_argument("--table", help="the topic read as a table (the joins)")
    ap.add_argument("--engine", help="polystreams engine URL (polystreams arms)")
    return ap


def exactly_once(topology: str) -> bool:
    return topology == "sum_eos"


def window_starts(ts: int, size: int, advance: int) -> range:
    """The starts of the epoch-aligned windows (size, advance) that hold ts,
    as Kafka Streams' TimeWindows.windowsFor gives them."""
    last = ts - ts % advance
    return range(max(0, last - size + advance), last + 1, advance)
