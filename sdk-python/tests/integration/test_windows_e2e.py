"""Windowed aggregations against the real engine and its embedded broker,
checked with an independent Kafka client (confluent-kafka): a Python
aggregate over tumbling windows, its final results through suppress, the
windowed keys on the topics as Kafka's bytes, the dropped-records count of a
late record, and window store queries."""

from __future__ import annotations

import datetime
import struct
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from test_engine_e2e import Runner, config, create_topic

import polystreams.app
from polystreams import App, InvalidArgumentError, Materialized, Suppressed, TimeWindows, Windowed, serde
from polystreams._bundle import Executor
from polystreams.v1alpha1 import engine_pb2 as pb

MINUTE = datetime.timedelta(minutes=1)
KEY_SERDE = "windowed(string,60000)"


def read(brokers: str, topic: str, n: int, timeout: float, runner: Runner) -> list[tuple[bytes, bytes | None]]:
    """Reads topic from the start until it holds n records (or timeout)."""
    c = Consumer({"bootstrap.servers": brokers, "group.id": "verify-" + topic, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    out: list[tuple[bytes, bytes | None]] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and len(out) < n:
            assert runner.error is None, f"app.run() failed: {runner.error!r}"
            for m in c.consume(100, timeout=0.5):
                if not m.error():
                    out.append((m.key(), m.value()))
    finally:
        c.close()
    return out


def decoded(records: list[tuple[bytes, bytes | None]]) -> list[tuple[Any, Any]]:
    return [(serde.decode(KEY_SERDE, k), serde.decode("long", v)) for k, v in records]


def test_windowed_aggregate_suppress_keys_and_dropped_records(tmp_path: Path, app_id: str) -> None:
    # Every update, as Kafka Streams without a record cache emits them.
    with App(app_id, config(tmp_path, commit_interval_ms=100, statestore_cache_max_bytes=0)) as app:
        assert app.brokers
        for t in ("clicks", "clicks-updates", "clicks-final"):
            create_topic(app.brokers, t, 1)
        p = Producer({"bootstrap.servers": app.brokers})
        # (user, ms): alice's 59_999 and 60_000 fall in two windows; bob at
        # 130_000 closes the first two minutes; alice at 5_000 then comes too
        # late for [0, 60000) (no grace) and is dropped.
        for user, ts in [("alice", 1_000), ("bob", 2_000), ("alice", 59_999), ("alice", 60_000), ("bob", 130_000), ("alice", 5_000)]:
            p.produce("clicks", key=user.encode(), value=b"click", timestamp=ts)
        assert p.flush(30) == 0

        calls: list[tuple[str, str, int]] = []

        def add(user: str, value: str, n: int) -> int:
            calls.append((user, value, n))
            return n + 1

        grouped = app.stream("clicks", key="string", value="string").group_by_key()
        try:
            grouped.windowed_by(TimeWindows.of_size_with_no_grace(MINUTE).advance_by(2 * MINUTE))
            raise AssertionError("advance > size was accepted")
        except InvalidArgumentError as e:  # the engine's message, unchanged
            assert "advance_ms 120000" in e.message and "size_ms 60000" in e.message
        per_minute = (
            grouped.windowed_by(TimeWindows.of_size_with_no_grace(MINUTE))
            .aggregate(lambda: 0, add, materialized=Materialized("clicks-per-minute", value="long", retention=datetime.timedelta(hours=1)))
        )
        assert per_minute.handle.key_serde == KEY_SERDE and per_minute.store == "clicks-per-minute"
        per_minute.to_stream().to("clicks-updates")
        per_minute.suppress(Suppressed.until_window_closes(name="final")).to_stream().to("clicks-final")

        runner = Runner(app)
        updates = read(app.brokers, "clicks-updates", 5, 60, runner)
        final = read(app.brokers, "clicks-final", 3, 60, runner)
        w0, w1, w2 = (0, 60_000), (60_000, 120_000), (120_000, 180_000)
        assert decoded(updates) == [
            (Windowed("alice", *w0), 1),
            (Windowed("bob", *w0), 1),
            (Windowed("alice", *w0), 2),
            (Windowed("alice", *w1), 1),
            (Windowed("bob", *w2), 1),
        ]
        # Kafka's TimeWindowedSerializer bytes: the key, then the start (8 bytes BE).
        assert updates[3][0] == b"alice" + struct.pack(">q", 60_000)
        # One final result per closed window; bob's [120000, 180000) is still open.
        assert decoded(final) == [(Windowed("alice", *w0), 2), (Windowed("bob", *w0), 1), (Windowed("alice", *w1), 1)]
        assert all(u == "alice" or u == "bob" for u, _, _ in calls) and len(calls) == 5  # the late record is never folded

        deadline = time.monotonic() + 30
        while app.dropped_records() < 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert app.dropped_records() == 1

        app.stop()
        runner.join(60)
    assert runner.error is None and runner.returned


def test_window_store_fetch_and_fetch_all(tmp_path: Path, app_id: str) -> None:
    with App(app_id, config(tmp_path, commit_interval_ms=100, statestore_cache_max_bytes=0)) as app:
        assert app.brokers
        for t in ("clicks", "clicks-updates"):
            create_topic(app.brokers, t, 1)
        p = Producer({"bootstrap.servers": app.brokers})
        for user, ts in [("alice", 1_000), ("bob", 2_000), ("alice", 59_999), ("alice", 60_000), ("bob", 130_000)]:
            p.produce("clicks", key=user.encode(), value=b"click", timestamp=ts)
        assert p.flush(30) == 0
        counts = (
            app.stream("clicks", key="string", value="string")
            .group_by_key()
            .windowed_by(TimeWindows.of_size_with_no_grace(MINUTE))
            .count(materialized=Materialized("clicks-per-minute", retention=datetime.timedelta(hours=1)))
        )
        counts.to_stream().to("clicks-updates")
        runner = Runner(app)
        assert len(read(app.brokers, "clicks-updates", 5, 60, runner)) == 5
        w0, w1, w2 = (0, 60_000), (60_000, 120_000), (120_000, 180_000)
        store = counts.window_store()
        assert store.key_serde == KEY_SERDE
        want = [(Windowed("alice", *w0), 2), (Windowed("alice", *w1), 1)]
        deadline = time.monotonic() + 30
        while store.fetch("alice", 0, 120_000) != want and time.monotonic() < deadline:
            time.sleep(0.2)  # the store answers what is committed
        assert store.fetch("alice", 0, 120_000) == want
        assert store.fetch("alice", 1, 60_000) == [(Windowed("alice", *w1), 1)]  # windows starting from 1 to 60000
        epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        assert sorted(store.fetch_all(epoch, epoch + 3 * MINUTE), key=lambda kv: (kv[0].start, kv[0].key)) == [
            (Windowed("alice", *w0), 2),
            (Windowed("bob", *w0), 1),
            (Windowed("alice", *w1), 1),
            (Windowed("bob", *w2), 1),
        ]
        assert app.window_store("clicks-per-minute").fetch("carol", 0, 200_000) == []
        app.stop()
        runner.join(60)
    assert runner.error is None and runner.returned


def test_hopping_host_aggregate_sends_each_record_once(tmp_path: Path, app_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hopping windows of 60 s by 5 s: each record is in 12 windows. The host
    offers fold_value_refs, so a fold bundle carries each record once and
    refers to it from its 12 groups: 12 fold values per record, 1 record."""
    crossed = {"records": 0, "fold_values": 0}

    class CountingExecutor(Executor):
        def process(self, bundle: pb.Bundle) -> pb.BundleResult:
            if len(bundle.steps) == 1 and bundle.steps[0].operation == pb.OPERATION_AGGREGATE:
                crossed["records"] += len(bundle.value_lengths)
                crossed["fold_values"] += len(bundle.value_refs) or len(bundle.value_lengths)
            return super().process(bundle)

    monkeypatch.setattr(polystreams.app, "Executor", CountingExecutor)
    n = 200
    with App(app_id, config(tmp_path, commit_interval_ms=100, statestore_cache_max_bytes=0)) as app:
        assert app.brokers
        for t in ("amounts", "sums"):
            create_topic(app.brokers, t, 1)
        p = Producer({"bootstrap.servers": app.brokers})
        for i in range(n):
            p.produce("amounts", key=b"k", value=struct.pack(">q", i), timestamp=60_000 + i * 10)
        assert p.flush(30) == 0
        sums = (
            app.stream("amounts", key="string", value="long")
            .group_by_key()
            .windowed_by(TimeWindows.of_size_with_no_grace(MINUTE).advance_by(datetime.timedelta(seconds=5)))
            .aggregate(lambda: 0, lambda k, v, total: total + v)
        )
        sums.to_stream().to("sums")
        runner = Runner(app)
        out = read(app.brokers, "sums", 12 * n, 90, runner)
        assert len(out) == 12 * n
        last: dict[Any, int] = {}
        for k, v in out:
            last[serde.decode(KEY_SERDE, k)] = serde.decode("long", v)
        # Every record (all within [60000, 62000)) is in the 12 windows starting 5000 .. 60000.
        assert sorted(last, key=lambda w: w.start) == [Windowed("k", s, s + 60_000) for s in range(5_000, 60_001, 5_000)]
        assert set(last.values()) == {sum(range(n))}
        app.stop()
        runner.join(60)
    assert runner.error is None and runner.returned
    assert crossed["fold_values"] == 12 * n and crossed["records"] == n, crossed
