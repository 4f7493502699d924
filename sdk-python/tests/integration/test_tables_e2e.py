"""Tables against the real engine: table(), KTable filter/map_values/group_by,
KGroupedTable count/reduce/aggregate with subtractors, tombstones; outputs
read with an independent client (confluent-kafka)."""

from __future__ import annotations

import struct
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from test_engine_e2e import Runner, config, create_topic

from polystreams import App, InvalidArgumentError, KGroupedTable, KTable, Materialized


def produce_changes(brokers: str, topic: str, records: list[tuple[str, str | None]]) -> None:
    """Writes records in order to partition 0 (None is a tombstone)."""
    p = Producer({"bootstrap.servers": brokers, "linger.ms": 5})
    for k, v in records:
        p.produce(topic, key=k.encode(), value=None if v is None else v.encode(), partition=0)
    assert p.flush(30) == 0, "produce did not complete"


def read_updates(brokers: str, topic: str, n: int, runner: Runner, timeout: float = 60) -> dict[str, list[bytes | None]]:
    """Each key's values in order (None for a tombstone), once n records arrived."""
    c = Consumer({"bootstrap.servers": brokers, "group.id": "verify-" + topic, "enable.auto.commit": False})
    got: dict[str, list[bytes | None]] = {}
    count = 0
    deadline = time.monotonic() + timeout
    try:
        while count < n and time.monotonic() < deadline:
            assert runner.error is None, f"app.run() failed: {runner.error!r}"
            md = c.list_topics(timeout=5).topics.get(topic)
            if md is None or md.error is not None or not md.partitions:
                time.sleep(0.2)
                continue
            if not c.assignment():
                c.assign([TopicPartition(topic, p, 0) for p in md.partitions])
            for m in c.consume(100, timeout=0.5):
                if m.error():
                    continue
                got.setdefault(m.key().decode(), []).append(m.value())
                count += 1
    finally:
        c.close()
    assert count >= n, f"{count} of {n} records on {topic}: {got}"
    return got


def longs(values: list[bytes | None]) -> list[int | None]:
    return [None if v is None else struct.unpack(">q", v)[0] for v in values]


def test_group_by_count_follows_moves_and_tombstones(tmp_path: Path, app_id: str) -> None:
    """KTableRepartitionMap forwards the old pair (a removal) before the new
    one; KTableAggregate's count subtracts, then adds; a tombstone removes."""
    with App(app_id, config(tmp_path, commit_interval_ms=100, statestore_cache_max_bytes=0)) as app:
        assert app.brokers
        create_topic(app.brokers, "users", 2)
        users = app.table("users", key="string", value="string", materialized="users-store")
        assert isinstance(users, KTable) and users.store == "users-store"
        grouped = users.group_by(lambda user, region: (region, user))
        assert isinstance(grouped, KGroupedTable)
        grouped.count(materialized="region-counts").to_stream().to("region-counts")
        produce_changes(
            app.brokers,
            "users",
            [("u1", "eu"), ("u2", "eu"), ("u3", "us"), ("u1", "us"), ("u2", None)],
        )
        runner = Runner(app)
        got = read_updates(app.brokers, "region-counts", 6, runner)
        assert {k: longs(v) for k, v in got.items()} == {"eu": [1, 2, 1, 0], "us": [1, 2]}
        # The table source's store is queryable: u2 was deleted.
        assert dict(app.store("users-store").all()) == {"u1": "us", "u3": "us"}
        assert app.store("region-counts").get("eu") == 0
        app.stop()
        runner.join(60)
        assert runner.error is None


def test_filter_forwards_tombstones_and_reduce_subtracts(tmp_path: Path, app_id: str) -> None:
    with App(app_id, config(tmp_path, commit_interval_ms=100, statestore_cache_max_bytes=0)) as app:
        assert app.brokers
        create_topic(app.brokers, "accounts", 1)
        accounts = app.table("accounts", key="string", value="json")
        # KTableFilter without old values: a row that does not pass is a tombstone.
        accounts.filter(lambda k, v: v["balance"] >= 10).to_stream().to("rich", value="string")
        (accounts.map_values(lambda v: v["balance"], value="long")
            .to_stream().to("balances"))
        (accounts.group_by(lambda k, v: (v["region"], v["balance"]), key="string", value="long")
            .reduce(lambda a, v: a + v, lambda a, v: a - v, materialized="region-totals")
            .to_stream().to("totals"))
        produce_changes(
            app.brokers,
            "accounts",
            [
                ("a1", '{"region": "eu", "balance": 5}'),
                ("a2", '{"region": "eu", "balance": 70}'),
                ("a1", '{"region": "eu", "balance": 12}'),
                ("a2", '{"region": "us", "balance": 70}'),
                ("a1", None),
            ],
        )
        runner = Runner(app)
        rich = read_updates(app.brokers, "rich", 5, runner)
        assert rich["a1"][0] is None and rich["a1"][-1] is None and len(rich["a1"]) == 3
        assert len(rich["a2"]) == 2 and all(v is not None for v in rich["a2"])
        balances = read_updates(app.brokers, "balances", 5, runner)
        assert {k: longs(v) for k, v in balances.items()} == {"a1": [5, 12, None], "a2": [70, 70]}
        # a1 5 -> 12 stays in eu (one change: -5 +12); a2 moves to us.
        totals = read_updates(app.brokers, "totals", 6, runner)
        assert {k: longs(v) for k, v in totals.items()} == {"eu": [5, 75, 82, 12, 0], "us": [70]}
        app.stop()
        runner.join(60)


def test_table_refusals_name_the_problem(tmp_path: Path, app_id: str) -> None:
    with App(app_id, config(tmp_path)) as app:
        grouped = app.table("t", value="string").group_by(lambda k, v: (v, k))
        with pytest.raises(InvalidArgumentError, match="max.*cannot remove"):
            grouped.reduce("max")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="subtractor"):
            grouped.reduce(lambda a, v: a + v)
        with pytest.raises(InvalidArgumentError, match="table reads topic \"t\", which source"):
            app.table("t")
        with pytest.raises(InvalidArgumentError, match='cleanup.policy="delete".*must be compacted'):
            app.table("t2", materialized=Materialized("t2-store", changelog_config={"cleanup.policy": "delete"}))
        grouped.count()  # the session is still usable
