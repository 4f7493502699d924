#!/usr/bin/python3
"""Window benchmark baseline: "the user's own dictionary", windowed.

A hand-written python3-confluent-kafka loop, no engine: consume JSON records
{"amount": n} keyed by a string, and per key and time window (tumbling when
--advance-ms equals --size-ms, else hopping, aligned to the epoch as Kafka
Streams aligns them) keep a count (--mode count) or a sum of "amount"
(--mode sum) in a dict. Every second it produces the windows that changed
since the last second, keyed as Kafka Streams' TimeWindowedSerializer keys
them (key, then the window start as 8 bytes big-endian), the value an
8-byte big-endian long, then commits (at-least-once). No grace handling, no
expiry, no durability: the dict dies with the process.

Started by the Go benchmark (core/cmd/bench); exits after --records
records, or on SIGTERM.
"""
from __future__ import annotations

import json
import struct
import time

import dictbench


def main() -> None:
    ap = dictbench.parser("flush changed windows and commit offsets this often")
    ap.add_argument("--mode", choices=["count", "sum"], required=True)
    ap.add_argument("--size-ms", type=int, required=True)
    ap.add_argument("--advance-ms", type=int, required=True)
    args = ap.parse_args()
    stop = dictbench.Stop()
    consumer, producer = dictbench.clients(args)
    pack = struct.Struct(">q").pack
    loads = json.loads
    size, advance = args.size_ms, args.advance_ms
    count = args.mode == "count"
    windows: dict[bytes, int] = {}
    changed: set[bytes] = set()
    seen = 0
    interval = args.commit_ms / 1000
    last = time.monotonic()

    def flush() -> None:
        for wk in changed:
            try:
                producer.produce(args.output, pack(windows[wk]), wk)
            except BufferError:
                producer.poll(0.1)
                producer.produce(args.output, pack(windows[wk]), wk)
        changed.clear()
        producer.flush()

    while not stop.requested and seen < args.records:
        msgs = consumer.consume(10000, 0.1)
        for m in msgs:
            if m.error():
                continue
            k = m.key()
            ts = m.timestamp()[1]
            add = 1 if count else loads(m.value().decode())["amount"]
            start = max(0, ts - size + advance) // advance * advance
            while start <= ts:
                wk = k + pack(start)
                windows[wk] = windows.get(wk, 0) + add
                changed.add(wk)
                start += advance
        seen += len(msgs)
        producer.poll(0)
        now = time.monotonic()
        if now - last > interval or seen >= args.records:
            flush()
            if msgs or seen >= args.records:
                consumer.commit(asynchronous=False)
            last = now
    flush()
    consumer.close()


if __name__ == "__main__":
    main()
