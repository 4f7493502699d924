"""Sink routing against the real engine: a stream partitioner
(``Produced.streamPartitioner``, ``Repartitioned.withStreamPartitioner``)
and a topic name extractor, read back with an independent Kafka client
(confluent-kafka), which sees the partitions."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from test_engine_e2e import Runner, config, create_topic, produce

from polystreams import App, RecordMetadata


def read_all(
    brokers: str, topic: str, n: int, timeout: float, runner: Runner
) -> list[tuple[str, str, int]]:
    """Reads topic from the beginning until n records: (key, value, partition)."""
    c = Consumer(
        {
            "bootstrap.servers": brokers,
            "group.id": "verify-" + topic,
            "enable.auto.commit": False,
        }
    )
    got: list[tuple[str, str, int]] = []
    deadline = time.monotonic() + timeout
    try:
        md = None
        while md is None and time.monotonic() < deadline:
            t = c.list_topics(timeout=5).topics.get(topic)
            md = t if t is not None and t.error is None and t.partitions else None
        assert md is not None, f"topic {topic} never appeared"
        c.assign([TopicPartition(topic, p, 0) for p in md.partitions])
        while len(got) < n and time.monotonic() < deadline:
            assert runner.error is None, f"app.run() failed: {runner.error!r}"
            for m in c.consume(1000, timeout=0.5):
                if not m.error():
                    got.append((m.key().decode(), m.value().decode(), m.partition()))
    finally:
        c.close()
    assert len(got) >= n, f"{topic}: {len(got)} records of {n}: {got}"
    return got


def test_stream_partitioner_and_topic_name_extractor(
    tmp_path: Path, app_id: str
) -> None:
    seen: list[tuple[str, int]] = []

    def route(topic: str, key: str, value: str, n: int) -> Any:
        seen.append((topic, n))
        if value == "all":
            return {0, 2, 3}
        if value == "drop":
            return []
        if value == "default":
            return None
        if value in ("x", "y"):
            return 0
        return int(value[1:])

    def by_value(key: str, value: str, rc: RecordMetadata) -> str:
        assert rc.topic.endswith("-re-repartition") and rc.partition == 1, rc
        return "dyn-" + value

    with App(app_id, config(tmp_path, commit_interval_ms=100)) as app:
        assert app.brokers
        create_topic(app.brokers, "in", 1)
        for t in ("out", "dyn-x", "dyn-y"):
            create_topic(app.brokers, t, 4)
        s = app.stream("in", key="string", value="string").select_key(lambda k, v: v)
        s.to("out", partitioner=route)
        s.filter(lambda k, v: v in ("x", "y")).repartition(
            name="re", partitions=2, partitioner=lambda t, k, v, n: 1
        ).to(by_value)
        assert (
            "(extractor class: test_stream_partitioner_and_topic_name_extractor.<locals>.by_value)"
            in app.describe()
        )
        produce(app.brokers, "in", ["p1", "all", "drop", "default", "p3", "x", "y"])
        runner = Runner(app)
        got = read_all(app.brokers, "out", 8, 60, runner)
        parts: dict[str, list[int]] = {}
        for k, v, p in got:
            parts.setdefault(v, []).append(p)
        assert sorted(parts["all"]) == [0, 2, 3]
        assert parts["p1"] == [1] and parts["p3"] == [3]
        assert "drop" not in parts
        assert len(parts["default"]) == 1
        assert parts["x"] == [0] and parts["y"] == [0]
        assert all(t == "out" and n == 4 for t, n in seen)
        assert [
            (k, v) for k, v, _ in read_all(app.brokers, "dyn-x", 1, 60, runner)
        ] == [("x", "x")]
        assert [
            (k, v) for k, v, _ in read_all(app.brokers, "dyn-y", 1, 60, runner)
        ] == [("y", "y")]
        app.stop()
        runner.join(60)


def test_readme_routing_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """The README's routing example, verbatim: each order reaches the topic
    its extractor names, in a test driver."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(
        encoding="utf-8"
    )
    m = re.search(r"^### Routing.*?^```python\n(.*?)^```", readme, re.S | re.M)
    assert m, "sdk-python/README.md: no python block under ### Routing"
    exec(compile(m.group(1), "README.md ### Routing", "exec"), {"__name__": "readme"})  # noqa: S102 - the README's own code
    assert capsys.readouterr().out.splitlines()[-2:] == ["['eu:book']", "['us:pen']"]
