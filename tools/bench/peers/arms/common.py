"""What every Python arm of make bench-peers takes on its command line
(tools/bench/peers/peers.py starts them): one flag set, so that an arm is a
command line and nothing else."""
from __future__ import annotations

import argparse

TOPOLOGIES = ["map_values", "word_count", "count", "sum_eos", "sum_alos"]


def parser(doc: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--app", required=True, help="application id / consumer group")
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--topology", required=True, choices=TOPOLOGIES)
    ap.add_argument("--commit-ms", type=int, required=True)
    ap.add_argument("--state-dir", required=True)
    ap.add_argument("--engine", help="polystreams engine URL (polystreams arms)")
    return ap


def exactly_once(topology: str) -> bool:
    return topology == "sum_eos"
