"""merge, split and repartition against the real engine, read back with an
independent Kafka client (confluent-kafka / librdkafka)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from test_engine_e2e import Runner, config, create_topic, read_until

from polystreams import App, InvalidArgumentError


def produce_json(brokers: str, topic: str, records: dict[str, int]) -> None:
    p = Producer({"bootstrap.servers": brokers, "linger.ms": 5})
    for k, v in records.items():
        p.produce(topic, key=k.encode(), value=json.dumps(v).encode())
    assert p.flush(30) == 0


def test_merge_split_and_repartition(tmp_path: Path, app_id: str) -> None:
    a = {f"a-{i}": i for i in range(200)}
    b = {f"b-{i}": 1000 + i for i in range(50)}
    odd_saw: list[int] = []

    def odd(k: str, v: int) -> bool:
        odd_saw.append(v)
        return v % 2 == 1

    with App(app_id, config(tmp_path, commit_interval_ms=100)) as app:
        assert app.brokers
        for t in ("a", "b", "big", "odd", "rest"):
            create_topic(app.brokers, t, 2)
        produce_json(app.brokers, "a", a)
        produce_json(app.brokers, "b", b)
        merged = app.stream("a", key="string", value="json").merge(app.stream("b", key="string", value="json"))
        assert merged.handle.node == "KSTREAM-MERGE-0000000002"
        branches = (
            merged.split(name="size-")
            .branch(lambda k, v: v >= 100, name="big")
            .branch(odd)
            .default_branch(name="rest")
        )
        assert sorted(branches) == ["size-2", "size-big", "size-rest"]
        branches["size-big"].to("big")
        branches["size-2"].to("odd")
        branches["size-rest"].repartition(name="by-key", partitions=3).to("rest")
        runner = Runner(app)
        want = {
            "big": {k: v for k, v in (a | b).items() if v >= 100},
            "odd": {k: v for k, v in a.items() if v < 100 and v % 2 == 1},
            "rest": {k: v for k, v in a.items() if v < 100 and v % 2 == 0},
        }
        for topic, expected in want.items():
            got = read_until(app.brokers, topic, lambda last, n=len(expected): len(last) >= n, 60, runner)
            assert {k: json.loads(v) for k, v in got.items()} == expected, topic
        md = AdminClient({"bootstrap.servers": app.brokers}).list_topics(timeout=10).topics
        assert len(md[f"{app_id}-by-key-repartition"].partitions) == 3
        app.stop()
        runner.join(60)
    assert odd_saw and max(odd_saw) < 100, "the second predicate saw a record the first one took"


def test_split_and_merge_refusals_name_the_offender(tmp_path: Path, app_id: str) -> None:
    with App(app_id, config(tmp_path)) as app:
        strings = app.stream("a", key="string", value="string")
        longs = app.stream("b", key="string", value="long")
        with pytest.raises(InvalidArgumentError, match=r"\(string, string\).*\(string, long\)"):
            strings.merge(longs)
        with pytest.raises(InvalidArgumentError, match='node "s-x", which exists already'):
            strings.split(name="s-").branch(lambda k, v: True, name="x").branch(lambda k, v: False, name="x").no_default_branch()
        # The session goes on.
        assert strings.split().branch(lambda k, v: True).no_default_branch()
