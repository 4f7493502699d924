"""What the dict baselines (dictloop.py, windowdict.py) share: their
command line, a stop flag set by SIGTERM, and the confluent-kafka consumer
(manual commits, from the earliest offset) and producer (batching) they
loop with."""
from __future__ import annotations

import argparse
import signal

from confluent_kafka import Consumer, Producer


def parser(commit_help: str) -> argparse.ArgumentParser:
    """The arguments every baseline takes; a baseline adds its own."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--records", type=int, required=True)
    ap.add_argument("--commit-ms", type=int, default=1000, help=commit_help)
    return ap


class Stop:
    """Set once SIGTERM arrives."""

    def __init__(self) -> None:
        self.requested = False
        signal.signal(signal.SIGTERM, self._on_term)

    def _on_term(self, *_: object) -> None:
        self.requested = True


def clients(args: argparse.Namespace, topics: list[str] | None = None) -> tuple[Consumer, Producer]:
    """The consumer, subscribed to topics (by default args.input), and the producer."""
    consumer = Consumer({
        "bootstrap.servers": args.brokers,
        "group.id": args.group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    })
    producer = Producer({
        "bootstrap.servers": args.brokers,
        "linger.ms": 5,
        "batch.num.messages": 10000,
        "queue.buffering.max.messages": 1000000,
        "queue.buffering.max.kbytes": 1048576,
    })
    consumer.subscribe(topics or [args.input])
    return consumer, producer
