#!/usr/bin/python3
"""Benchmark arm (a): stream -> map_values(str.upper) -> to, the operator in Python.

Started by the Go benchmark (core/internal/bench) against its in-process engine;
serves bundles until SIGTERM.
"""
from __future__ import annotations

import argparse

from polystreams import App


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", required=True)
    ap.add_argument("--app", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--bundle", type=int, default=2000)
    args = ap.parse_args()
    app = App(args.app, {"polystreams.bundle.max.records": str(args.bundle)}, engine=args.engine)
    app.stream(args.input, value="string").map_values(str.upper).to(args.output)
    app.run()
    app.close()


if __name__ == "__main__":
    main()
