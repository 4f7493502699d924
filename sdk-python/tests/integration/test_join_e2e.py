"""Stream-table joins against the real engine, read back with an
independent Kafka client (confluent-kafka / librdkafka)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from test_engine_e2e import Runner, config, create_topic, read_until

from polystreams import App, InvalidArgumentError


def produce(brokers: str, topic: str, records: list[tuple[str, str]]) -> None:
    # murmur2, as Kafka's Java clients and the engine partition keys: a
    # table written with librdkafka's default (CRC32) partitioner is not
    # co-partitioned with what the engine repartitions (as with Kafka
    # Streams).
    p = Producer({"bootstrap.servers": brokers, "linger.ms": 5, "partitioner": "murmur2_random"})
    for k, v in records:
        p.produce(topic, key=k.encode(), value=v.encode())
    assert p.flush(30) == 0


def values(brokers: str, topic: str, n: int) -> list[Any]:
    """Every value of topic (not only each key's last), once n are in."""
    c = Consumer({"bootstrap.servers": brokers, "group.id": "v-" + topic, "enable.auto.commit": False})
    md = c.list_topics(timeout=5).topics[topic]
    c.assign([TopicPartition(topic, p, 0) for p in md.partitions])
    out: list[Any] = []
    deadline = time.monotonic() + 60
    while len(out) < n and time.monotonic() < deadline:
        out.extend(json.loads(m.value()) for m in c.consume(1000, timeout=0.5) if not m.error())
    c.close()
    return out


def test_orders_enriched_with_customers(tmp_path: Path, app_id: str) -> None:
    customers = [(f"c{i}", f"name{i}") for i in range(5)]
    orders = [(str(i), json.dumps({"customer": f"c{i % 7}", "total": i})) for i in range(60)]

    def enrich(order: dict[str, Any], name: str | None) -> dict[str, Any]:
        return {**order, "name": name}

    with App(app_id, config(tmp_path, commit_interval_ms=100)) as app:
        assert app.brokers
        for t in ("customers", "orders", "enriched", "all-orders"):
            create_topic(app.brokers, t, 2)
        produce(app.brokers, "customers", customers)
        table = app.table("customers", key="string", value="string")
        by_customer = app.stream("orders", key="string", value="json").select_key(lambda k, v: v["customer"], key="string")
        joined = by_customer.join(table, enrich)
        assert joined.handle.node.startswith("KSTREAM-JOIN-")
        joined.to("enriched")
        by_customer.left_join(table, enrich, name="all").to("all-orders")
        runner = Runner(app)
        # The table's rows are in before the orders are processed: the
        # join sees the table as it is when each order comes.
        read_until(app.brokers, f"{app_id}-customers-STATE-STORE-0000000000-changelog", lambda last: len(last) == 5, 60, runner)
        produce(app.brokers, "orders", orders)
        known = [json.loads(v) for _, v in orders if int(json.loads(v)["customer"][1:]) < 5]
        got = read_until(app.brokers, "enriched", lambda last: len(last) >= 5, 60, runner)
        assert set(got) == {f"c{i}" for i in range(5)}  # keyed by customer now
        read_until(app.brokers, "all-orders", lambda last: len(last) == 7, 60, runner)
        enriched, everything = values(app.brokers, "enriched", len(known)), values(app.brokers, "all-orders", 60)
        app.stop()
        runner.join(60)
    assert sorted(o["total"] for o in enriched) == sorted(o["total"] for o in known)
    assert all(o["name"] == "name" + o["customer"][1:] for o in enriched)
    assert len(everything) == 60
    assert {o["total"] for o in everything if o["name"] is None} == {i for i in range(60) if i % 7 >= 5}


def test_join_refusals_name_the_offender(tmp_path: Path, app_id: str) -> None:
    with App(app_id, config(tmp_path)) as app:
        table = app.table("t", key="long", value="string")
        stream = app.stream("s", key="string", value="string")
        with pytest.raises(InvalidArgumentError, match="string keys and table handle .* long keys"):
            stream.join(table, lambda v, o: v)
        ok = app.table("u", key="string", value="string")
        stream.join(ok, lambda v, o: v).to("out")  # the session goes on
