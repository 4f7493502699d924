"""Stream-stream joins (``join`` / ``left_join`` / ``outer_join`` with
JoinWindows) against the real engine, read back with an independent Kafka
client (confluent-kafka / librdkafka)."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from test_engine_e2e import Runner, config, create_topic

from polystreams import App, InvalidArgumentError, JoinWindows


def send(brokers: str, topic: str, key: str, value: str, ts: int) -> None:
    p = Producer({"bootstrap.servers": brokers, "partitioner": "murmur2_random"})
    p.produce(topic, key=key.encode(), value=value.encode(), timestamp=ts)
    assert p.flush(30) == 0


def read(brokers: str, topic: str, want: int, runner: Runner, timeout: float = 60) -> list[tuple[str, str, int]]:
    """Every record of topic as (key, value, timestamp), once want are in."""
    c = Consumer({"bootstrap.servers": brokers, "group.id": "ss-" + topic, "enable.auto.commit": False})
    deadline = time.monotonic() + timeout
    # The engine creates its internal topics once app.run() has started:
    # a changelog may not exist yet when the first records are sent.
    while (md := c.list_topics(timeout=5).topics.get(topic)) is None or md.error is not None or not md.partitions:
        assert runner.error is None, f"app.run() failed: {runner.error!r}"
        assert time.monotonic() < deadline, f"topic {topic} not created within {timeout} s"
        time.sleep(0.1)
    c.assign([TopicPartition(topic, p, 0) for p in md.partitions])
    out: list[tuple[str, str, int]] = []
    while len(out) < want and time.monotonic() < deadline:
        assert runner.error is None, f"app.run() failed: {runner.error!r}"
        for m in c.consume(100, timeout=0.3):
            if not m.error():
                out.append((m.key().decode(errors="replace"), m.value().decode(errors="replace"), m.timestamp()[1]))
    c.close()
    return sorted(out)


def test_left_join_of_two_streams_emits_unjoined_views_at_window_close(tmp_path: Path, app_id: str) -> None:
    def joiner(view: str, click: str | None) -> str:
        return f"{view}+{click}"

    with App(app_id, config(tmp_path, commit_interval_ms=100)) as app:
        assert app.brokers
        for t in ("views", "clicks", "joined"):
            create_topic(app.brokers, t, 2)
        views = app.stream("views", key="string", value="string")
        clicks = app.stream("clicks", key="string", value="string")
        joined = views.left_join(clicks, joiner, JoinWindows.of_time_difference_and_grace(timedelta(milliseconds=100), 0))
        assert joined.handle.node == "KSTREAM-MERGE-0000000006"
        joined.to("joined")
        text = app.describe()
        assert "Processor: KSTREAM-JOINTHIS-0000000004 (stores: [KSTREAM-OUTEROTHER-0000000005-store, KSTREAM-OUTERSHARED-0000000004-store])" in text
        runner = Runner(app)
        send(app.brokers, "views", "k", "v1", 1000)
        send(app.brokers, "clicks", "k", "c1", 1050)
        assert read(app.brokers, "joined", 1, runner) == [("k", "v1+c1", 1050)]
        send(app.brokers, "views", "k", "v2", 2000)
        # v2's window is open until stream time passes 2100: no result yet.
        assert read(app.brokers, "joined", 2, runner, timeout=2) == [("k", "v1+c1", 1050)]
        send(app.brokers, "views", "k", "v3", 2101)
        assert read(app.brokers, "joined", 2, runner) == [("k", "v1+c1", 1050), ("k", "v2+None", 2000)]
        app.stop()
        runner.join(60)


def test_outer_join_and_refusals(tmp_path: Path, app_id: str) -> None:
    with App(app_id, config(tmp_path, commit_interval_ms=100)) as app:
        assert app.brokers
        for t in ("l", "r", "out"):
            create_topic(app.brokers, t, 1)  # one task: one stream time for keys x, y, z
        left = app.stream("l", key="string", value="string")
        right = app.stream("r", key="string", value="string")
        with pytest.raises(InvalidArgumentError, match="needs join windows"):
            left.join(right, lambda a, b: a)
        with pytest.raises(InvalidArgumentError, match="grace_ms -1"):
            left.join(right, lambda a, b: a, JoinWindows.of_time_difference_and_grace(10, -1))
        with pytest.raises(InvalidArgumentError, match="make an empty window"):
            left.join(right, lambda a, b: a, JoinWindows.of_time_difference_with_no_grace(10).before(-20))
        with pytest.raises(TypeError, match="JoinWindows"):
            left.join(right, lambda a, b: a, 10)  # type: ignore[arg-type]
        j = left.outer_join(right, lambda a, b: f"{a}|{b}", JoinWindows.of_time_difference_with_no_grace(10), name="pair", store_name="ab")
        assert j.handle.node == "pair-merge"
        j.to("out")
        assert "ab-outer-shared-join-store" in app.describe()
        runner = Runner(app)
        send(app.brokers, "l", "x", "a", 100)
        send(app.brokers, "r", "y", "b", 105)
        # Both wait in the shared store (its changelog shows them) before c
        # moves stream time past their windows: the topics are fetched
        # independently, so c could otherwise come first and make b late.
        read(app.brokers, f"{app_id}-ab-outer-shared-join-store-changelog", 2, runner)
        send(app.brokers, "l", "z", "c", 200)
        assert read(app.brokers, "out", 2, runner) == [("x", "a|None", 100), ("y", "None|b", 105)]
        app.stop()
        runner.join(60)
