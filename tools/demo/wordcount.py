#!/usr/bin/python3
"""make demo: a Python word count on the polystreams engine, verified exactly.

Starts the engine with its embedded Kafka broker, seeds 100,000 lines of text,
runs the word count below, reads the output topic back with an independent
client (confluent-kafka), checks every word's last count against a count made
here in plain Python, prints the topology and the measured rate, and exits
non-zero on any wrong or missing count.
"""
from __future__ import annotations

import argparse
import collections
import random
import struct
import shutil
import sys
import tempfile
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from polystreams import App, Config

WORDS = [
    "stream", "table", "kafka", "python", "engine", "bundle", "state", "window",
    "join", "count", "record", "topic", "partition", "offset", "commit", "host",
]


class Progress:
    """A progress bar redrawn in place on a terminal; plain lines (at most
    one every 5 s, and one at the end) when stdout is a pipe or a file."""

    def __init__(self, label: str, total: int) -> None:
        self.label, self.total = label, total
        self.tty = sys.stdout.isatty()
        self.last = 0.0

    def update(self, done: int, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self.last < (0.1 if self.tty else 5.0):
            return
        self.last = now
        pct = min(100, done * 100 // max(self.total, 1))
        if self.tty:
            filled = pct * 30 // 100
            bar = "#" * filled + "." * (30 - filled)
            sys.stdout.write(f"\r\x1b[K{self.label} [{bar}] {pct:3d}% {done:,}/{self.total:,}" + ("\n" if final else ""))
        else:
            sys.stdout.write(f"{self.label}: {pct:3d}% {done:,}/{self.total:,}\n")
        sys.stdout.flush()


def seed(brokers: str, topic: str, n: int, partitions: int) -> collections.Counter[str]:
    admin = AdminClient({"bootstrap.servers": brokers})
    for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result()
    rng = random.Random(42)
    vocab = WORDS + [f"w{i}" for i in range(2000)]
    expected: collections.Counter[str] = collections.Counter()
    p = Producer({"bootstrap.servers": brokers, "linger.ms": 20, "batch.num.messages": 10000})
    bar = Progress("seeding", n)
    for i in range(n):
        words = [rng.choice(vocab) for _ in range(rng.randint(3, 9))]
        expected.update(words)
        p.produce(topic, value=" ".join(words).encode())
        if i % 10000 == 0:
            p.poll(0)
            bar.update(i)
    p.flush()
    bar.update(n, final=True)
    return expected


def end_offsets(c: Consumer, topic: str) -> int:
    md = c.list_topics(topic, timeout=10).topics[topic]
    total = 0
    for pid in md.partitions:
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, pid), timeout=10)
        total += hi
    return total


def read_last_values(brokers: str, topic: str) -> dict[str, int]:
    c = Consumer({"bootstrap.servers": brokers, "group.id": "demo-verify", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    md = c.list_topics(topic, timeout=10).topics[topic]
    ends = {}
    for pid in md.partitions:
        _, hi = c.get_watermark_offsets(TopicPartition(topic, pid), timeout=10)
        if hi > 0:
            ends[pid] = hi
    c.assign([TopicPartition(topic, pid, 0) for pid in ends])
    last: dict[str, int] = {}
    while ends:
        for m in c.consume(10000, timeout=5):
            if m.error():
                raise RuntimeError(m.error())
            last[m.key().decode()] = struct.unpack(">q", m.value())[0]
            if m.offset() + 1 >= ends.get(m.partition(), 0):
                ends.pop(m.partition(), None)
    c.close()
    return last


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--partitions", type=int, default=4)
    args = ap.parse_args()

    state_dir = tempfile.mkdtemp(prefix="polystreams-demo-")
    try:
        return run(args, state_dir)
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)


def run(args: argparse.Namespace, state_dir: str) -> int:
    with App("wordcount-demo", Config(state_dir=state_dir)) as app:
        brokers = app.brokers
        assert brokers, "the spawned engine reported no embedded broker"
        print(f"engine {app.engine_url}, embedded broker {brokers}")
        print(f"watch it live: {app.engine_url}/ui/ (metrics: {app.engine_url}/metrics)")
        t0 = time.perf_counter()
        expected = seed(brokers, "lines", args.lines, args.partitions)
        total_words = sum(expected.values())
        print(f"seeded {args.lines:,} lines ({total_words:,} words, {len(expected):,} distinct) "
              f"in {time.perf_counter() - t0:.1f}s")

        (app.stream("lines", value="string")
            .flat_map_values(str.split)
            .group_by(lambda _key, word: word, key="string")
            .count()
            .to_stream()
            .to("word-counts"))
        print(app.describe())

        failure: list[BaseException] = []

        def serve() -> None:
            try:
                app.run()
            except BaseException as e:  # reported below
                failure.append(e)

        start = time.perf_counter()
        runner = threading.Thread(target=serve, daemon=True)
        runner.start()
        # With no record cache every word occurrence is one count update, so
        # the output is complete when it holds total_words records.
        probe = Consumer({"bootstrap.servers": brokers, "group.id": "demo-probe"})
        deadline = time.monotonic() + 600
        done = 0
        bar = Progress("counting", total_words)
        while time.monotonic() < deadline and not failure:
            try:
                done = end_offsets(probe, "word-counts")
            except Exception:
                done = 0
            bar.update(done)
            if done >= total_words:
                break
            time.sleep(0.1)
        bar.update(done, final=True)
        elapsed = time.perf_counter() - start
        probe.close()
        app.stop()
        runner.join(timeout=60)
        if failure:
            print(f"FAIL: the topology stopped with {failure[0]!r}")
            return 1
        if done < total_words:
            print(f"FAIL: only {done:,} of {total_words:,} count updates arrived")
            return 1
        rate = args.lines / elapsed
        print(f"processed {args.lines:,} lines ({total_words:,} words) in {elapsed:.2f}s: "
              f"{rate:,.0f} lines/s, {total_words / elapsed:,.0f} words/s")

        got = read_last_values(brokers, "word-counts")
        wrong = [(w, n, got.get(w)) for w, n in expected.items() if got.get(w) != n]
        extra = sorted(set(got) - set(expected))
        if wrong or extra:
            for w, n, g in wrong[:20]:
                print(f"FAIL: word {w!r}: counted {g}, want {n}")
            for w in extra[:20]:
                print(f"FAIL: word {w!r} counted but never seeded")
            print(f"FAIL: {len(wrong)} wrong or missing counts, {len(extra)} unexpected words")
            return 1
        print(f"OK: all {len(expected):,} word counts verified exactly (last value per key, 8-byte big-endian longs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
