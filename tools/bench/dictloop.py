#!/usr/bin/python3
"""Aggregation benchmark arm (c): "the user's own dictionary".

A hand-written python3-confluent-kafka loop, no engine: consume JSON records
{"amount": n} keyed by a string, keep each key's running sum in a dict and
produce every updated sum as an 8-byte big-endian long (Kafka's Serdes.Long)
to the output topic. Outputs are flushed and offsets committed every second
(at-least-once). No durability: the dict dies with the process.

Started by the Go benchmark (core/cmd/bench); exits after --records
records, or on SIGTERM.
"""
from __future__ import annotations

import json
import struct
import time

import dictbench


def main() -> None:
    ap = dictbench.parser("flush outputs and commit offsets this often")
    args = ap.parse_args()
    stop = dictbench.Stop()
    consumer, producer = dictbench.clients(args)
    pack = struct.Struct(">q").pack
    loads = json.loads
    produce = producer.produce
    out = args.output
    sums: dict[bytes, int] = {}
    seen = 0
    dirty = False
    interval = args.commit_ms / 1000
    last = time.monotonic()
    while not stop.requested and seen < args.records:
        msgs = consumer.consume(10000, 0.1)
        for m in msgs:
            if m.error():
                continue
            k = m.key()
            s = sums.get(k, 0) + loads(m.value().decode())["amount"]
            sums[k] = s
            try:
                produce(out, pack(s), k)
            except BufferError:
                producer.poll(0.1)
                produce(out, pack(s), k)
        seen += len(msgs)
        dirty = dirty or bool(msgs)
        producer.poll(0)
        now = time.monotonic()
        if now - last > interval or seen >= args.records:
            producer.flush()
            if dirty:
                consumer.commit(asynchronous=False)
                dirty = False
            last = now
    producer.flush()
    consumer.close()


if __name__ == "__main__":
    main()
