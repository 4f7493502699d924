#!/usr/bin/python3
"""A Python host attached to an engine it did not start: the host half of the
scale-out tests (core/internal/server/scaleout_test.go).

  host.py --engine URL --app ID --topology count --input events --output counts
      events -> map_values(upper) -> group_by_key -> count -> to_stream -> counts
  host.py --engine URL --app ID --topology join --input orders --table customers --output enriched
      orders (string values) joined with the table of customers: "<order>|<customer>"

--config k=v (repeatable) passes application configuration (processing.guarantee, ...).
Runs until the engine stops the session or SIGTERM; prints "host: running" once started.
"""
from __future__ import annotations

import argparse
import sys

from polystreams import App


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", required=True)
    ap.add_argument("--app", required=True)
    ap.add_argument("--topology", choices=["count", "join"], required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--table")
    ap.add_argument("--config", action="append", default=[])
    args = ap.parse_args()
    config = dict(kv.split("=", 1) for kv in args.config)
    app = App(args.app, config, engine=args.engine)
    if args.topology == "count":
        (app.stream(args.input, key="string", value="string")
            .map_values(str.upper)
            .group_by_key()
            .count()
            .to_stream()
            .to(args.output))
    else:
        customers = app.table(args.table, key="string", value="string")
        (app.stream(args.input, key="string", value="string")
            .join(customers, lambda order, customer: f"{order}|{customer}")
            .to(args.output))
    app.on_state_change(lambda new, old: print(f"host: {new}", flush=True))
    print("host: built", flush=True)
    try:
        app.run()
    finally:
        app.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
