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

from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from polystreams import App, Config

WORDS = [
    "stream", "table", "kafka", "python", "engine", "bundle", "state", "window",
    "join", "count", "record", "topic", "partition", "offset", "commit", "host",
]
# How long the counts may take to be complete once the topology runs (a
# healthy run on 2 cores needs about 10 s).
WAIT_S = 180


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


class OutputFollower:
    """Reads the output topic from the beginning (read_committed, as a
    downstream consumer would) and keeps the last count per word.

    The record cache (statestore.cache.max.bytes, 10 MiB by default) forwards
    only the latest count per key at each commit, as Kafka Streams does, so how
    many updates arrive is not a measure of progress: the last value of every
    word is."""

    def __init__(self, brokers: str, topic: str) -> None:
        self.topic = topic
        self.last: dict[str, int] = {}
        self.consumer = Consumer({"bootstrap.servers": brokers, "group.id": "demo-verify",
                                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                  "isolation.level": "read_committed",
                                  "topic.metadata.refresh.interval.ms": 1000})
        self.consumer.subscribe([topic])

    def poll(self, timeout: float) -> None:
        for m in self.consumer.consume(10000, timeout=timeout):
            err = m.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF or err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    continue
                raise RuntimeError(f"reading {self.topic}: {err}")
            self.last[m.key().decode()] = struct.unpack(">q", m.value())[0]

    def close(self) -> None:
        self.consumer.close()


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
    with App("wordcount-demo", Config(state_dir=state_dir, commit_interval_ms=1000)) as app:
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
        # Done when every word's last count is its expected count: the record
        # cache decides how many intermediate updates get through, not us.
        follower = OutputFollower(brokers, "word-counts")
        deadline = time.monotonic() + WAIT_S
        bar = Progress("counting", total_words)
        counted = 0
        while time.monotonic() < deadline and not failure:
            follower.poll(0.2)
            counted = sum(min(follower.last.get(w, 0), n) for w, n in expected.items())
            bar.update(counted)
            if all(follower.last.get(w) == n for w, n in expected.items()):
                break
        bar.update(counted, final=True)
        elapsed = time.perf_counter() - start
        app.stop()
        runner.join(timeout=60)
        follower.poll(1.0)  # anything committed at the stop
        follower.close()
        if failure:
            print(f"FAIL: the topology stopped with {failure[0]!r}")
            return 1
        rate = args.lines / elapsed
        print(f"processed {args.lines:,} lines ({total_words:,} words) in {elapsed:.2f}s: "
              f"{rate:,.0f} lines/s, {total_words / elapsed:,.0f} words/s")

        got = follower.last
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
