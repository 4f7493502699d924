#!/usr/bin/python3
"""Python-hosted benchmark arms, started by the Go benchmark (core/cmd/bench)
against its in-process engine; serves bundles until SIGTERM.

--topology map_values: stream -> map_values(str.upper) -> to (crossing table, arm (a));
--topology aggregate:  JSON {"amount": n} per string key -> group_by_key ->
    aggregate(0, a + v["amount"], Materialized(value="long")) -> to_stream -> to,
    under exactly_once_v2 (aggregation table, arm (a));
--topology window-aggregate: the same aggregate per key and 60 s window
    advancing by 5 s (windows table, arm (w3)).
--topology stream-table-join: JSON orders -> join(table(--table) of JSON
    customers, joiner) -> to (joins table, arm (j1)).
--topology stream-stream-join: JSON orders join JSON payments (--other) of the
    same key within --window-ms (JoinWindows) -> to (joins table, arm (j2)).
"""
from __future__ import annotations

import argparse
import os

from polystreams import App, Config, JoinWindows, Materialized, TimeWindows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", required=True)
    ap.add_argument("--app", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--bundle", type=int, default=2000)
    ap.add_argument("--topology", choices=["map_values", "aggregate", "window-aggregate", "stream-table-join", "stream-stream-join"], default="map_values")
    ap.add_argument("--table", help="the customers topic (stream-table-join)")
    ap.add_argument("--other", help="the payments topic (stream-stream-join)")
    ap.add_argument("--window-ms", type=int, default=300_000, help="JoinWindows time difference (stream-stream-join)")
    ap.add_argument("--cprofile", help="write a cProfile of the host (pstats) to this file at exit (POLYSTREAMS_BENCH_CPROFILE sets it too)")
    ap.add_argument("--commit-ms", type=int, default=-1, help="commit.interval.ms (aggregate); -1: the default")
    ap.add_argument("--metrics", choices=["true", "false"], default="true", help="polystreams.metrics.enabled")
    args = ap.parse_args()
    extra = {"polystreams.bundle.max.records": str(args.bundle), "polystreams.metrics.enabled": args.metrics}
    if args.topology == "map_values":
        app = App(args.app, extra, engine=args.engine)
        app.stream(args.input, value="string").map_values(str.upper).to(args.output)
    elif args.topology == "stream-table-join":
        app = App(args.app, extra, engine=args.engine)
        customers = app.table(args.table, key="string", value="json")
        orders = app.stream(args.input, key="string", value="json")
        orders.join(customers, lambda order, customer: {
            "order": order["order"], "amount": order["amount"], "name": customer["name"], "tier": customer["tier"]},
            value="json").to(args.output)
    elif args.topology == "stream-stream-join":
        app = App(args.app, extra, engine=args.engine)
        orders = app.stream(args.input, key="string", value="json")
        payments = app.stream(args.other, key="string", value="json")
        orders.join(payments, lambda order, payment: {
            "order": order["order"], "amount": order["amount"], "paid": payment["paid"]},
            JoinWindows.of_time_difference_with_no_grace(args.window_ms), value="json").to(args.output)
    else:
        app = App(args.app, Config(processing_guarantee="exactly_once_v2",
                                    commit_interval_ms=args.commit_ms if args.commit_ms >= 0 else None, extra=extra), engine=args.engine)
        grouped = app.stream(args.input, key="string", value="json").group_by_key()
        if args.topology == "window-aggregate":
            # 60 s windows advancing by 5 s: each record in 12 windows.
            table = grouped.windowed_by(TimeWindows.of_size_with_no_grace(60_000).advance_by(5_000)).aggregate(
                lambda: 0, lambda key, v, total: total + v["amount"], materialized=Materialized(value="long"))
        else:
            table = grouped.aggregate(lambda: 0, lambda key, v, total: total + v["amount"],
                                      materialized=Materialized(value="long"))
        table.to_stream().to(args.output)
    profile = args.cprofile or os.environ.get("POLYSTREAMS_BENCH_CPROFILE")
    if profile:
        import cProfile

        prof = cProfile.Profile()
        prof.runcall(app.run)
        prof.dump_stats(f"{profile}.{args.app}")
    else:
        app.run()
    app.close()


if __name__ == "__main__":
    main()
