#!/usr/bin/python3
"""Independent check of a count topology's output with confluent-kafka (librdkafka).

Reads TOPIC from the start to its end, read_committed, and checks each key's
count updates (8-byte big-endian longs, Kafka's Serdes.Long) against the
expected counts in EXPECTED (a JSON object key -> count):

  --exact        every key's updates are exactly 1, 2, ..., count (exactly_once_v2)
  (default)      every key's last update is at least its count (at_least_once)

Prints one line per violation (at most 20) and exits 1 on any.
"""
from __future__ import annotations

import argparse
import json
import struct
import sys

from confluent_kafka import Consumer, TopicPartition


def read(brokers: str, topic: str) -> dict[str, list[int]]:
    c = Consumer({"bootstrap.servers": brokers, "group.id": "chaos-verify", "enable.auto.commit": False,
                  "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    md = c.list_topics(topic, timeout=10).topics[topic]
    ends = {}
    for p in md.partitions:
        _, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
        if hi > 0:
            ends[p] = hi
    c.assign([TopicPartition(topic, p, 0) for p in ends])
    seqs: dict[str, list[int]] = {}
    idle = 0
    while ends and idle < 20:
        msgs = c.consume(10000, timeout=0.5)
        if not msgs:
            idle += 1
            # read_committed stops at the last stable offset; positions tell.
            for tp in c.position([TopicPartition(topic, p) for p in list(ends)]):
                if tp.offset >= ends.get(tp.partition, 0):
                    ends.pop(tp.partition, None)
            continue
        idle = 0
        for m in msgs:
            if m.error():
                raise RuntimeError(m.error())
            seqs.setdefault(m.key().decode(), []).append(struct.unpack(">q", m.value())[0])
            if m.offset() + 1 >= ends.get(m.partition(), 0):
                ends.pop(m.partition(), None)
    c.close()
    return seqs


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--expected", required=True, help="JSON file: key -> count")
    ap.add_argument("--exact", action="store_true")
    args = ap.parse_args()
    with open(args.expected) as f:
        expected: dict[str, int] = json.load(f)
    seqs = read(args.brokers, args.topic)
    bad: list[str] = []
    for k, n in expected.items():
        s = seqs.get(k, [])
        if args.exact:
            if s != list(range(1, n + 1)):
                dup = len(s) - len(set(s))
                bad.append(f"{k}: {len(s)} updates (last {s[-1] if s else None}, {dup} repeated), want exactly 1..{n}")
        elif not s or s[-1] < n:
            bad.append(f"{k}: last count {s[-1] if s else None}, want at least {n}")
    extra = set(seqs) - set(expected)
    if extra:
        bad.append(f"{len(extra)} keys never produced: {sorted(extra)[:5]}")
    for line in bad[:20]:
        print("VIOLATION", line)
    print(f"checked {len(expected)} keys, {sum(len(s) for s in seqs.values())} updates: {len(bad)} violations")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
