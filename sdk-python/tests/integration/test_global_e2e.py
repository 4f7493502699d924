"""Global tables and stream-global-table joins against the real engine,
read back with an independent Kafka client (confluent-kafka / librdkafka)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from test_engine_e2e import Runner, config, create_topic, read_until

from polystreams import App, FailedPreconditionError, GlobalKTable, InvalidArgumentError, NotFoundError, PolystreamsError
from polystreams.v1alpha1 import engine_pb2 as pb

GLOBAL_JOIN_DESCRIBE = """\
Topologies:
   Sub-topology: 0 for global store (will not generate tasks)
    Source: KSTREAM-SOURCE-0000000000 (topics: [products])
      --> KTABLE-SOURCE-0000000001
    Processor: KTABLE-SOURCE-0000000001 (stores: [products-store])
      --> none
      <-- KSTREAM-SOURCE-0000000000
  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000002 (topics: [orders])
      --> KSTREAM-LEFTJOIN-0000000003, KSTREAM-LEFTJOIN-0000000005
    Processor: KSTREAM-LEFTJOIN-0000000003 (stores: [])
      --> KSTREAM-SINK-0000000004
      <-- KSTREAM-SOURCE-0000000002
    Processor: KSTREAM-LEFTJOIN-0000000005 (stores: [])
      --> KSTREAM-SINK-0000000006
      <-- KSTREAM-SOURCE-0000000002
    Sink: KSTREAM-SINK-0000000004 (topic: enriched)
      <-- KSTREAM-LEFTJOIN-0000000003
    Sink: KSTREAM-SINK-0000000006 (topic: all-orders)
      <-- KSTREAM-LEFTJOIN-0000000005

"""


def produce_to(brokers: str, topic: str, partition: int, records: list[tuple[str, str | None]]) -> None:
    p = Producer({"bootstrap.servers": brokers, "linger.ms": 5})
    for k, v in records:
        p.produce(topic, key=k.encode(), value=None if v is None else v.encode(), partition=partition)
    assert p.flush(30) == 0


def build(app: App) -> GlobalKTable:
    products = app.global_table("products", key="string", value="string", materialized="products-store")
    orders = app.stream("orders", key="string", value="json")

    def product_of(key: str, order: dict[str, Any]) -> str:
        return str(order["product"])

    def enrich(order: dict[str, Any], name: str | None) -> dict[str, Any]:
        return {**order, "name": name}

    joined = orders.join(products, product_of, enrich)
    joined.to("enriched")
    orders.left_join(products, product_of, enrich).to("all-orders")
    return products


def wait(cond: Any, what: str, runner: Runner, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert runner.error is None, f"app.run() failed: {runner.error!r}"
        try:
            if cond():
                return
        except FailedPreconditionError:
            pass  # not started yet
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


def test_orders_joined_with_a_global_table_of_other_partitions(tmp_path: Path, app_id: str) -> None:
    """The products topic has 3 partitions and the orders 1 (a global table
    needs no co-partitioning); the global store holds every partition and
    answers queries; an order keeps its key and sees an update of the
    global table made before it."""
    with App(app_id, config(tmp_path, commit_interval_ms=100)) as app:
        assert app.brokers
        create_topic(app.brokers, "products", 3)
        for t in ("orders", "enriched", "all-orders"):
            create_topic(app.brokers, t, 1)
        for p in range(3):
            produce_to(app.brokers, "products", p, [(f"p{p}", f"name{p}"), (f"p{p + 3}", f"name{p + 3}")])
        products = build(app)
        assert products.handle.kind == "global_table" and products.store == "products-store"
        assert app.describe() == GLOBAL_JOIN_DESCRIBE
        runner = Runner(app)
        store = products.query()
        wait(lambda: len(list(store.all())) == 6, "the global store's rows", runner)
        assert store.get("p4") == "name4"
        orders = [(f"o{i}", json.dumps({"product": f"p{i % 8}", "n": i})) for i in range(24)]
        produce_to(app.brokers, "orders", 0, [(k, v) for k, v in orders])
        got = read_until(app.brokers, "all-orders", lambda last: len(last) == 24, 60, runner)
        for i in range(24):
            o = json.loads(got[f"o{i}"])
            assert o == {"product": f"p{i % 8}", "n": i, "name": f"name{i % 8}" if i % 8 < 6 else None}
        enriched = read_until(app.brokers, "enriched", lambda last: len(last) == 18, 60, runner)
        assert set(enriched) == {f"o{i}" for i in range(24) if i % 8 < 6}
        # An update of the global table, then an order that sees it.
        produce_to(app.brokers, "products", 1, [("p1", "renamed"), ("p7", "name7")])
        wait(lambda: store.get("p1") == "renamed" and store.get("p7") == "name7", "the update in the global store", runner)
        produce_to(app.brokers, "orders", 0, [("o100", json.dumps({"product": "p1", "n": 100})), ("o101", json.dumps({"product": "p7", "n": 101}))])
        enriched = read_until(app.brokers, "enriched", lambda last: "o101" in last and "o100" in last, 60, runner)
        assert json.loads(enriched["o100"])["name"] == "renamed"
        assert json.loads(enriched["o101"])["name"] == "name7"
        app.stop()
        runner.join(60)


def test_global_table_refusals_name_the_offender(tmp_path: Path, app_id: str) -> None:
    with App(app_id, config(tmp_path)) as app:
        g = app.global_table("g", key="string", value="string")
        table = app.table("t", key="string", value="string")
        s = app.stream("in", key="string", value="string")
        joiner = app._register("joiner", lambda v, o: v)
        with pytest.raises(TypeError, match="key mapper and a joiner"):
            s.join(g, lambda v, o: v)  # type: ignore[call-overload]
        with pytest.raises(NotFoundError, match="token 999 is not registered"):
            app._build("join", pb.JoinOp(input=s.handle.id, table=g.handle.id, key_mapper_token=999, joiner_token=joiner))
        with pytest.raises(InvalidArgumentError, match=f"handle {g.handle.id} is a global table: joining it needs a key mapper"):
            app._build("join", pb.JoinOp(input=s.handle.id, table=g.handle.id, joiner_token=joiner))
        with pytest.raises(TypeError, match="a key mapper is for joins with a GlobalKTable"):
            s.join(table, lambda k, v: k, lambda v, o: v)  # type: ignore[call-overload]
        with pytest.raises(InvalidArgumentError, match=f"key_mapper_token {joiner} is for joins with a global table, but handle {table.handle.id} is a table"):
            app._build("join", pb.JoinOp(input=s.handle.id, table=table.handle.id, key_mapper_token=joiner, joiner_token=joiner))
        with pytest.raises(InvalidArgumentError, match=f"handle {g.handle.id} is a global table"):
            app._build("map_values", pb.MapValuesOp(input=g.handle.id, token=joiner))
        # The session survives the refusals.
        assert s.join(g, lambda k, v: k, lambda v, o: v).handle.node.startswith("KSTREAM-LEFTJOIN-")


def test_a_global_table_over_a_missing_topic_fails_start_naming_it(tmp_path: Path, app_id: str) -> None:
    # An engine against a broker given by address (`serve --brokers`): the
    # embedded broker's development mode would create the missing topic.
    with App(app_id + "-dev", config(tmp_path / "dev")) as dev, App(app_id, config(tmp_path), brokers=dev.brokers) as app:
        assert app.brokers
        create_topic(app.brokers, "orders", 1)
        products = app.global_table("no-such-products", key="string", value="string")
        app.stream("orders", key="string", value="string").join(products, lambda k, v: v, lambda v, o: o).to("out")
        with pytest.raises(PolystreamsError, match='topic "no-such-products" of global table KTABLE-SOURCE-0000000002'):
            runner = Runner(app)
            runner.join(60)
            if runner.error is not None:
                raise runner.error


def test_the_key_mapper_gives_keys_in_the_global_tables_key_serde(tmp_path: Path, app_id: str) -> None:
    """A stream of string keys joins a global table of long keys: the key
    mapper's result is encoded with the global table's key serde."""
    with App(app_id, config(tmp_path, commit_interval_ms=100)) as app:
        assert app.brokers
        create_topic(app.brokers, "rates", 2)
        for t in ("payments", "converted"):
            create_topic(app.brokers, t, 1)
        p = Producer({"bootstrap.servers": app.brokers})
        for i, (currency, rate) in enumerate([(1, "1.0"), (2, "1.1"), (3, "0.9")]):
            p.produce("rates", key=currency.to_bytes(8, "big"), value=rate.encode(), partition=i % 2)
        assert p.flush(30) == 0
        rates = app.global_table("rates", key="long", value="string")
        payments = app.stream("payments", key="string", value="json")
        payments.left_join(
            rates, lambda k, v: v["currency"], lambda v, rate: f"{v['amount']}@{rate}", value="string"
        ).to("converted")
        runner = Runner(app)
        wait(lambda: len(list(rates.query().all())) == 3, "the global store's rows", runner)
        assert rates.query().get(2) == "1.1"
        produce_to(app.brokers, "payments", 0, [("a", json.dumps({"currency": 2, "amount": 10})), ("b", json.dumps({"currency": 7, "amount": 5}))])
        got = read_until(app.brokers, "converted", lambda last: len(last) == 2, 60, runner)
        app.stop()
        runner.join(60)
    assert got == {"a": b"10@1.1", "b": b"5@None"}
