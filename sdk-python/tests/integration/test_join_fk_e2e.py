"""Foreign-key table-table joins (KIP-213) against the real engine, read
back with an independent Kafka client (confluent-kafka / librdkafka)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from test_engine_e2e import Runner, config, create_topic, read_until
from test_join_e2e import produce

from polystreams import App, InvalidArgumentError, Materialized


def test_orders_joined_with_their_customer_across_partition_counts(tmp_path: Path, app_id: str) -> None:
    # orders (3 partitions) and customers (5) are not co-partitioned: the
    # engine subscribes each order to its customer's partition.
    def customer_of(order: dict[str, Any]) -> str | None:
        return order.get("customer")

    def enrich(order: dict[str, Any], customer: str | None) -> dict[str, Any]:
        return {**order, "name": customer}

    with App(app_id, config(tmp_path, commit_interval_ms=100)) as app:
        assert app.brokers
        create_topic(app.brokers, "orders", 3)
        create_topic(app.brokers, "customers", 5)
        for t in ("enriched", "all-orders"):
            create_topic(app.brokers, t, 3)
        orders = app.table("orders", key="string", value="json")
        customers = app.table("customers", key="string", value="string")
        inner = orders.foreign_key_join(customers, customer_of, enrich)
        assert inner.handle.node == "KTABLE-FK-JOIN-OUTPUT-0000000018"
        inner.to_stream().to("enriched")
        left = orders.left_foreign_key_join(customers, customer_of, enrich, name="all", materialized="all-orders")
        assert (left.handle.node, left.store) == ("all-result", "all-orders")
        left.to_stream().to("all-orders")
        runner = Runner(app)

        def both(want_inner: dict[str, Any], want_left: dict[str, Any]) -> None:
            def match(want: dict[str, Any]) -> Any:
                def done(last: dict[str, bytes]) -> bool:
                    return all((json.loads(last[k]) if last.get(k) is not None else None) == v and k in last for k, v in want.items())

                return done

            got = read_until(app.brokers, "enriched", match(want_inner), 60, runner)
            assert match(want_inner)(got), got
            got = read_until(app.brokers, "all-orders", match(want_left), 60, runner)
            assert match(want_left)(got), got

        produce(app.brokers, "customers", [(f"c{i}", f"name{i}") for i in range(3)])
        produce(app.brokers, "orders", [(f"o{i}", json.dumps({"customer": f"c{i % 4}", "n": i})) for i in range(8)])
        inner_want = {f"o{i}": {"customer": f"c{i % 4}", "n": i, "name": f"name{i % 4}"} for i in range(8) if i % 4 < 3}
        left_want = {**inner_want, "o3": {"customer": "c3", "n": 3, "name": None}, "o7": {"customer": "c3", "n": 7, "name": None}}
        both(inner_want, left_want)

        # A customer's update reaches every order that names it; a new
        # customer joins the orders that waited for it.
        produce(app.brokers, "customers", [("c1", "NAME1"), ("c3", "name3")])
        for o in ("o1", "o5"):
            inner_want[o] = left_want[o] = {**inner_want[o], "name": "NAME1"}
        for o in ("o3", "o7"):
            inner_want[o] = left_want[o] = {**left_want[o], "name": "name3"}
        both(inner_want, left_want)

        # An order that moves to another customer; a deleted order; an
        # order without a customer (None foreign key).
        produce(app.brokers, "orders", [("o0", json.dumps({"customer": "c2", "n": 0}))])
        tombstone = Producer({"bootstrap.servers": app.brokers, "partitioner": "murmur2_random"})
        tombstone.produce("orders", key=b"o2", value=None)
        assert tombstone.flush(30) == 0
        produce(app.brokers, "orders", [("o4", json.dumps({"n": 4}))])
        inner_want["o0"] = left_want["o0"] = {"customer": "c2", "n": 0, "name": "name2"}
        inner_want["o2"] = left_want["o2"] = None
        inner_want["o4"], left_want["o4"] = None, {"n": 4, "name": None}
        both(inner_want, left_want)
        assert app.store("all-orders").get("o1") == {"customer": "c1", "n": 1, "name": "NAME1"}
        app.stop()
        runner.join(60)


def test_foreign_key_join_refusals_name_the_offender(tmp_path: Path, app_id: str) -> None:
    with App(app_id, config(tmp_path)) as app:
        orders = app.table("orders", key="string", value="json")
        customers = app.table("customers", key="string", value="string")
        stream = app.stream("s", key="string", value="json")
        with pytest.raises(InvalidArgumentError, match="the right handle 3 is a stream"):
            orders.foreign_key_join(stream, lambda v: v, lambda v, o: v)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match="materialized retention_ms"):
            orders.foreign_key_join(customers, lambda v: v, lambda v, o: v, materialized=Materialized("m", retention=1000))
        orders.foreign_key_join(customers, lambda v: v["customer"], lambda v, o: v).to_stream().to("out")  # the session goes on
