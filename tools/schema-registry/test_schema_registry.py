"""Schema Registry serdes end to end (make test-schema-registry): the real
engine, its embedded broker, a registry process (core/cmd/schema-registry),
and confluent-kafka's own AvroSerializer / AvroDeserializer (JSON and
Protobuf alike) as the independent client: what confluent-kafka writes polystreams reads, and what
polystreams writes confluent-kafka reads. Then the bad input: an unknown
schema id, an incompatible schema (409), a registry that is down.

Run with the venv of .cache/schema-registry (confluent-kafka[avro,json,
protobuf]; the Protobuf tests generate their _pb2 modules with protoc); the
engine is bin/polystreams and the registry bin/schema-registry (both built
by make test-schema-registry)."""

from __future__ import annotations

import importlib
import json
import os
import re
import select
import signal
import struct
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, DeserializingConsumer, Producer, SerializingProducer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext, StringDeserializer, StringSerializer

from polystreams import App, Config, ProcessingError, avro, json_schema, protobuf

REPO = Path(__file__).resolve().parents[2]
HINT = re.compile(r"polystreams: embedded Kafka broker at (\S+) ")

ORDER = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"}, {"name": "item", "type": "string"}, {"name": "quantity", "type": "int"},
    {"name": "price", "type": "double"}, {"name": "note", "type": ["null", "string"], "default": None}]}
PRICED = {"type": "record", "name": "Priced", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"}, {"name": "item", "type": "string"}, {"name": "total", "type": "double"}]}
WAIT = 60.0  # seconds for anything this file waits on


def binary(name: str) -> str:
    path = REPO / "bin" / name
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} does not exist: run make test-schema-registry (it builds it)", pytrace=False)
    return str(path)


@pytest.fixture(autouse=True)
def engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every App here spawns bin/polystreams."""
    monkeypatch.setenv("POLYSTREAMS_ENGINE", binary("polystreams"))
    monkeypatch.delenv("POLYSTREAMS_URL", raising=False)


@pytest.fixture
def registry() -> Iterator[str]:
    """A registry process on a free port; its URL."""
    p = subprocess.Popen([binary("schema-registry")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        ready, _, _ = select.select([p.stdout], [], [], WAIT)
        line = p.stdout.readline() if ready else ""
        m = re.match(r"schema registry at (\S+)", line)
        if not m:
            p.kill()
            pytest.fail(f"the schema registry did not start within {WAIT:.0f} s: stdout {line!r}, stderr {p.stderr.read() if p.stderr else ''!r}")
        yield m.group(1)
    finally:
        p.kill()
        p.wait()


def produce_orders(brokers: str, url: str, orders: list[dict[str, Any]]) -> None:
    """confluent-kafka's AvroSerializer registers ORDER under orders-value
    and writes the orders in the wire format, to partition 0."""
    sr = SchemaRegistryClient({"url": url})
    p = SerializingProducer({
        "bootstrap.servers": brokers, "key.serializer": StringSerializer(),
        "value.serializer": AvroSerializer(sr, Schema(json.dumps(ORDER), "AVRO")),
    })
    for o in orders:
        p.produce("orders", key=f"o{o['id']}", value=o, partition=0)
    assert p.flush(30) == 0


def read_priced(brokers: str, url: str, n: int) -> list[dict[str, Any]]:
    """n records of priced, decoded by confluent-kafka's AvroDeserializer
    with the schemas it fetches from the registry by id."""
    c = DeserializingConsumer({
        "bootstrap.servers": brokers, "group.id": "sr-check-" + uuid.uuid4().hex[:6], "auto.offset.reset": "earliest",
        "key.deserializer": StringDeserializer(), "value.deserializer": AvroDeserializer(SchemaRegistryClient({"url": url})),
    })
    c.subscribe(["priced"])
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + WAIT
    try:
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(m.value())
    finally:
        c.close()
    assert len(got) == n, f"read {len(got)} of {n} records of priced within {WAIT:.0f} s: {got}"
    return got


def section_block(readme: Path, heading: str) -> str:
    text = readme.read_text(encoding="utf-8")
    start = text.index(heading)
    m = re.search(r"^```python\n(.*?)^```", text[start:], re.S | re.M)
    assert m, f"{readme}: no python block after {heading!r}"
    return m.group(1)


ORDERS = [
    {"id": 1, "item": "pen", "quantity": 3, "price": 1.5, "note": None},
    {"id": 2, "item": "ink", "quantity": 0, "price": 9.0, "note": "sample"},
    {"id": 3, "item": "pad", "quantity": 2, "price": 4.25, "note": "gift"},
]
WANT = [{"id": 1, "item": "PEN", "total": 4.5}, {"id": 3, "item": "PAD", "total": 8.5}]


def test_readme_avro_example_runs_verbatim(tmp_path: Path, registry: str) -> None:
    """sdk-python/README.md's Schema Registry example, run as a user
    would: confluent-kafka writes Avro orders, the example prices them,
    confluent-kafka reads the Avro it wrote; its schema is registered
    under priced-value."""

    def check(brokers: str) -> None:
        produce_orders(brokers, registry, ORDERS)
        assert sorted(read_priced(brokers, registry, 2), key=lambda r: r["id"]) == WANT
        latest = SchemaRegistryClient({"url": registry}).get_latest_version("priced-value")
        assert json.loads(latest.schema.schema_str)["name"] == "Priced"

    run_readme_example(tmp_path, registry, "### Schema Registry (Avro)", check)


def run_readme_example(tmp_path: Path, registry: str, heading: str, check: Any) -> None:
    """Runs the python block after heading in sdk-python/README.md as a
    user would, calls check(brokers) once it printed its embedded broker,
    then stops it with SIGINT: it must exit cleanly."""
    program = tmp_path / "pricing.py"
    program.write_text(section_block(REPO / "sdk-python" / "README.md", heading), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(REPO / "sdk-python" / "src"), TMPDIR=str(tmp_path), SCHEMA_REGISTRY_URL=registry,
               POLYSTREAMS_ENGINE=binary("polystreams"))
    p = subprocess.Popen([sys.executable, str(program)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         cwd=tmp_path, start_new_session=True)
    try:
        assert p.stderr is not None
        err, hint = "", None
        while hint is None:
            ready, _, _ = select.select([p.stderr], [], [], WAIT)
            line = p.stderr.readline() if ready else ""
            assert line, f"the example never printed the embedded broker's address; its stderr:\n{err}"
            err += line
            hint = HINT.search(line)
        check(hint.group(1))
        os.killpg(p.pid, signal.SIGINT)
        _, rest = p.communicate(timeout=WAIT)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err + rest
    assert "Traceback" not in rest, rest


class Runner:
    """app.run() in a thread; .error is what it raised."""

    def __init__(self, app: App) -> None:
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(app,), daemon=True)
        self.thread.start()

    def _run(self, app: App) -> None:
        try:
            app.run()
        except BaseException as e:
            self.error = e

    def failure(self) -> BaseException:
        self.thread.join(WAIT)
        assert not self.thread.is_alive(), f"app.run() did not fail within {WAIT:.0f} s"
        assert self.error is not None
        return self.error


def pricing(app: App) -> None:
    (app.stream("orders", key="string", value=avro())
        .map_values(lambda o: {"id": o["id"], "item": o["item"], "total": o["quantity"] * o["price"]})
        .to("priced", value=avro(PRICED)))


def committed(brokers: str, group: str) -> int:
    """The group's committed offset of orders/0 (-1001: none)."""
    from confluent_kafka import TopicPartition

    c = Consumer({"bootstrap.servers": brokers, "group.id": group})
    try:
        return int(c.committed([TopicPartition("orders", 0)], timeout=10)[0].offset)
    finally:
        c.close()


def test_unknown_schema_id_fails_the_record_and_commits_nothing_past_it(tmp_path: Path, registry: str) -> None:
    app_id = "sr-" + uuid.uuid4().hex[:6]
    with App(app_id, Config(state_dir=str(tmp_path / "s"), extra={"schema.registry.url": registry, "commit.interval.ms": "100"}),
             ) as app:
        pricing(app)
        app.start()
        assert app.brokers
        produce_orders(app.brokers, registry, ORDERS[:1])
        runner = Runner(app)
        # The good record goes out first (a batch holding both would fail whole).
        assert read_priced(app.brokers, registry, 1) == [{"id": 1, "item": "pen", "total": 4.5}]
        p = Producer({"bootstrap.servers": app.brokers})
        p.produce("orders", key=b"o9", value=b"\x00" + struct.pack(">I", 4242) + b"\x02\x06pen", partition=0)
        assert p.flush(30) == 0
        e = runner.failure()
        assert isinstance(e, ProcessingError), e
        assert (e.topic, e.partition, e.offset) == ("orders", 0, 1), (e.topic, e.partition, e.offset, e)
        assert "subject orders-value, schema id 4242: schema id 4242 is not registered" in str(e), e
        # Nothing was committed past the bad record.
        assert committed(app.brokers, app_id) <= 1


def test_incompatible_schema_is_refused_with_its_subject(tmp_path: Path, registry: str) -> None:
    """priced-value holds a schema the sink's cannot read (a required field
    it lacks): the registry answers 409 and the record fails, named."""
    other = {"type": "record", "name": "Priced", "namespace": "shop", "fields": [{"name": "sku", "type": "string"}]}
    SchemaRegistryClient({"url": registry}).register_schema("priced-value", Schema(json.dumps(other), "AVRO"))
    with App("sr-" + uuid.uuid4().hex[:6], Config(state_dir=str(tmp_path / "s"), extra={"schema.registry.url": registry}),
             ) as app:
        (app.stream("orders", key="string", value=avro())
            .map_values(lambda o: {"id": o["id"], "item": o["item"], "total": 1.0})
            .to("priced", value=avro({**PRICED, "fields": [*PRICED["fields"], {"name": "sku", "type": "string"}]})))
        app.start()
        assert app.brokers
        produce_orders(app.brokers, registry, ORDERS[:1])
        e = Runner(app).failure()
        assert isinstance(e, ProcessingError) and e.offset == 0, e
        assert "topic priced, subject priced-value: incompatible schema" in str(e), e
        assert "is incompatible with an earlier schema" in str(e), e


def test_registry_down_stops_the_topology_whatever_the_handlers(tmp_path: Path) -> None:
    """A registry that does not answer is not the record's fault: under
    log_and_continue too the topology stops, naming the record and id."""
    p = subprocess.Popen([binary("schema-registry")], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None
    m = re.match(r"schema registry at (\S+)", p.stdout.readline())
    assert m
    url = m.group(1)
    extra = {"schema.registry.url": url, "default.deserialization.exception.handler": "log_and_continue",
             "processing.exception.handler": "log_and_continue"}
    try:
        with App("sr-" + uuid.uuid4().hex[:6], Config(state_dir=str(tmp_path / "s"), extra=extra)) as app:
            pricing(app)
            app.start()
            assert app.brokers
            produce_orders(app.brokers, url, ORDERS[:1])
            wire = Consumer({"bootstrap.servers": app.brokers, "group.id": "peek", "auto.offset.reset": "earliest"})
            wire.subscribe(["orders"])
            msg = None
            deadline = time.monotonic() + WAIT
            while msg is None and time.monotonic() < deadline:
                m2 = wire.poll(0.5)
                msg = m2 if m2 is not None and not m2.error() else None
            wire.close()
            assert msg is not None
            p.kill()
            p.wait()
            # A record of a schema id the engine has not cached: it must ask.
            raw = msg.value()
            bumped = b"\x00" + struct.pack(">I", struct.unpack(">I", raw[1:5])[0] + 1) + raw[5:]
            prod = Producer({"bootstrap.servers": app.brokers})
            prod.produce("orders", key=b"o7", value=bumped, partition=0)
            assert prod.flush(30) == 0
            e = Runner(app).failure()
            assert isinstance(e, ProcessingError), e
            # The sink's registration (or the source's lookup of the new id)
            # meets the dead registry first, whichever runs first.
            assert "schema registry unavailable" in str(e) and "record at orders/0@" in str(e), e
            assert "subject priced-value" in str(e) or "subject orders-value" in str(e), e
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


ORDER_JSON = {"title": "Order", "type": "object", "required": ["id", "item", "quantity", "price"], "properties": {
    "id": {"type": "integer"}, "item": {"type": "string"}, "quantity": {"type": "integer"}, "price": {"type": "number"},
    "note": {"type": ["string", "null"]}}}
PRICED_JSON = {"title": "Priced", "type": "object", "required": ["id", "item", "total"], "properties": {
    "id": {"type": "integer"}, "item": {"type": "string"}, "total": {"type": "number", "minimum": 0}}}


def test_json_schema_both_ways(tmp_path: Path, registry: str) -> None:
    """confluent-kafka's JSONSerializer writes orders (JSON Schema, wire
    format), polystreams prices them and writes json-schema(PRICED_JSON),
    confluent-kafka's JSONDeserializer reads them with the schema it fetches
    by id; a record the sink's schema refuses (a negative total) fails,
    named."""
    sr = SchemaRegistryClient({"url": registry})
    with App("sr-" + uuid.uuid4().hex[:6], Config(state_dir=str(tmp_path / "s"), extra={"schema.registry.url": registry})) as app:
        (app.stream("orders", key="string", value=json_schema())
            .map_values(lambda o: {"id": o["id"], "item": o["item"], "total": o["quantity"] * o["price"]})
            .to("priced", value=json_schema(PRICED_JSON)))
        app.start()
        assert app.brokers
        p = SerializingProducer({"bootstrap.servers": app.brokers, "key.serializer": StringSerializer(),
                                 "value.serializer": JSONSerializer(json.dumps(ORDER_JSON), sr)})
        for o in ORDERS:
            p.produce("orders", key=f"o{o['id']}", value=o, partition=0)
        assert p.flush(30) == 0
        runner = Runner(app)
        c = DeserializingConsumer({
            "bootstrap.servers": app.brokers, "group.id": "sr-json", "auto.offset.reset": "earliest",
            "key.deserializer": StringDeserializer(), "value.deserializer": JSONDeserializer(None, schema_registry_client=sr),
        })
        c.subscribe(["priced"])
        got: list[dict[str, Any]] = []
        deadline = time.monotonic() + WAIT
        try:
            while len(got) < len(ORDERS) and time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is not None and not m.error():
                    got.append(m.value())
        finally:
            c.close()
        assert sorted(got, key=lambda r: r["id"]) == [
            {"id": 1, "item": "pen", "total": 4.5}, {"id": 2, "item": "ink", "total": 0.0}, {"id": 3, "item": "pad", "total": 8.5}]
        assert json.loads(sr.get_latest_version("priced-value").schema.schema_str)["title"] == "Priced"
        p.produce("orders", key="o4", value={"id": 4, "item": "refund", "quantity": -1, "price": 2.0}, partition=0)
        assert p.flush(30) == 0
        e = runner.failure()
        assert isinstance(e, ProcessingError) and (e.topic, e.offset) == ("orders", 3), e
        assert "topic priced, subject priced-value" in str(e) and "does not validate against the schema" in str(e), e


ORDER_PROTO = """syntax = "proto3";
package shop;
message Order {
  int64 id = 1; string item = 2; int32 quantity = 3; double price = 4; optional string note = 5;
  message Line { string sku = 1; int32 count = 2; }
}
message Refund { int64 order_id = 1; double amount = 2; }
"""
PRICED_PROTO = """syntax = "proto3";
package shop;
message Priced { int64 id = 1; string item = 2; double total = 3; }
"""


@pytest.fixture
def pb2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """order_pb2 and priced_pb2, generated by protoc from ORDER_PROTO and
    PRICED_PROTO into a temporary directory (one namespace: a pair)."""
    gen = tmp_path / "pb2"
    gen.mkdir()
    (gen / "order.proto").write_text(ORDER_PROTO, encoding="utf-8")
    (gen / "priced.proto").write_text(PRICED_PROTO, encoding="utf-8")
    subprocess.run(["protoc", f"--proto_path={gen}", f"--python_out={gen}", "order.proto", "priced.proto"], check=True)
    monkeypatch.syspath_prepend(str(gen))
    for m in ("order_pb2", "priced_pb2"):
        sys.modules.pop(m, None)
    return importlib.import_module("order_pb2"), importlib.import_module("priced_pb2")


def produce_proto_orders(brokers: str, url: str, order_pb2: Any, orders: list[dict[str, Any]]) -> None:
    """confluent-kafka's ProtobufSerializer registers order.proto under
    orders-value and writes the orders (message indexes [0]), to partition 0."""
    sr = SchemaRegistryClient({"url": url})
    p = SerializingProducer({
        "bootstrap.servers": brokers, "key.serializer": StringSerializer(),
        "value.serializer": ProtobufSerializer(order_pb2.Order, sr, {"use.deprecated.format": False}),
    })
    for o in orders:
        p.produce("orders", key=f"o{o['id']}", value=order_pb2.Order(**{k: v for k, v in o.items() if v is not None}), partition=0)
    assert p.flush(30) == 0


def read_proto_priced(brokers: str, url: str, priced_pb2: Any, n: int) -> list[Any]:
    """n records of priced, read by confluent-kafka's ProtobufDeserializer,
    which fetches each record's schema by id (format=serialized)."""
    c = DeserializingConsumer({
        "bootstrap.servers": brokers, "group.id": "sr-pb-" + uuid.uuid4().hex[:6], "auto.offset.reset": "earliest",
        "key.deserializer": StringDeserializer(),
        "value.deserializer": ProtobufDeserializer(priced_pb2.Priced, {"use.deprecated.format": False},
                                                   schema_registry_client=SchemaRegistryClient({"url": url})),
    })
    c.subscribe(["priced"])
    got: list[Any] = []
    deadline = time.monotonic() + WAIT
    try:
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(m.value())
    finally:
        c.close()
    assert len(got) == n, f"read {len(got)} of {n} records of priced within {WAIT:.0f} s: {got}"
    return got


def test_readme_protobuf_example_runs_verbatim(tmp_path: Path, registry: str, pb2: Any) -> None:
    """sdk-python/README.md's Protobuf example, run as a user would:
    confluent-kafka's ProtobufSerializer writes orders, the example prices
    them, confluent-kafka's ProtobufDeserializer reads what it wrote; the
    .proto is registered under priced-value."""
    order_pb2, priced_pb2 = pb2

    def check(brokers: str) -> None:
        produce_proto_orders(brokers, registry, order_pb2, ORDERS)
        got = sorted(read_proto_priced(brokers, registry, priced_pb2, 2), key=lambda r: r.id)
        assert [(r.id, r.item, r.total) for r in got] == [(w["id"], w["item"], w["total"]) for w in WANT]
        latest = SchemaRegistryClient({"url": registry}).get_latest_version("priced-value")
        assert latest.schema.schema_type == "PROTOBUF" and "message Priced" in latest.schema.schema_str

    run_readme_example(tmp_path, registry, "### Schema Registry (Protobuf)", check)


def test_protobuf_errors_name_subject_id_and_record(tmp_path: Path, registry: str, pb2: Any) -> None:
    """An unknown schema id fails its record (named, nothing committed past
    it); a .proto the registry refuses (409: field 3 changes kind) fails
    the record at the sink, named."""
    order_pb2, _ = pb2
    app_id = "sr-" + uuid.uuid4().hex[:6]
    extra = {"schema.registry.url": registry, "commit.interval.ms": "100"}
    seen: list[dict[str, Any]] = []

    def price(o: dict[str, Any]) -> dict[str, Any]:
        seen.append(o)
        return {"id": o["id"], "item": o["item"], "total": o["quantity"] * o["price"]}

    with App(app_id, Config(state_dir=str(tmp_path / "s"), extra=extra)) as app:
        app.stream("orders", key="string", value=protobuf()).map_values(price).to("priced", value=protobuf(PRICED_PROTO))
        app.start()
        assert app.brokers
        produce_proto_orders(app.brokers, registry, order_pb2, ORDERS[:1])
        runner = Runner(app)
        assert [r.id for r in read_proto_priced(app.brokers, registry, pb2[1], 1)] == [1]
        # What the function saw: protojson of the message, proto names, every field.
        assert seen == [{"id": "1", "item": "pen", "quantity": 3, "price": 1.5}], seen
        p = Producer({"bootstrap.servers": app.brokers})
        p.produce("orders", key=b"o9", value=b"\x00" + struct.pack(">I", 4242) + b"\x00\x08\x09", partition=0)
        assert p.flush(30) == 0
        e = runner.failure()
        assert isinstance(e, ProcessingError), e
        assert (e.topic, e.partition, e.offset) == ("orders", 0, 1), (e.topic, e.partition, e.offset, e)
        assert "value does not decode as protobuf" in str(e), e
        assert "subject orders-value, schema id 4242: schema id 4242 is not registered" in str(e), e
        assert committed(app.brokers, app_id) <= 1


def test_incompatible_protobuf_schema_is_refused_with_its_subject(tmp_path: Path, registry: str, pb2: Any) -> None:
    """priced-value holds a .proto whose field 3 is a string: the sink's
    (a double there) is refused with 409, and the record fails, named."""
    order_pb2, _ = pb2
    other = PRICED_PROTO.replace("double total = 3;", "string total = 3;")
    SchemaRegistryClient({"url": registry}).register_schema("priced-value", Schema(other, "PROTOBUF"))

    def price(o: dict[str, Any]) -> dict[str, Any]:
        return {"id": o["id"], "item": o["item"], "total": 1.0}

    with App("sr-" + uuid.uuid4().hex[:6], Config(state_dir=str(tmp_path / "s2"), extra={"schema.registry.url": registry})) as app:
        app.stream("orders", key="string", value=protobuf()).map_values(price).to("priced", value=protobuf(PRICED_PROTO))
        app.start()
        assert app.brokers
        produce_proto_orders(app.brokers, registry, order_pb2, ORDERS[:1])
        e = Runner(app).failure()
        assert isinstance(e, ProcessingError) and e.offset == 0, e
        assert "topic priced, subject priced-value: incompatible schema" in str(e), e
        assert "field 3 of shop.Priced changes kind from string to double" in str(e), e


def test_protobuf_message_indexes_select_the_message(tmp_path: Path, registry: str, pb2: Any) -> None:
    """confluent-kafka's ProtobufSerializer writes a second top-level
    message (indexes [1]) and a nested one ([0, 0]) of order.proto; the
    engine decodes each as the message its indexes name."""
    order_pb2, _ = pb2
    sr = SchemaRegistryClient({"url": registry})
    with App("sr-" + uuid.uuid4().hex[:6], Config(state_dir=str(tmp_path / "s"), extra={"schema.registry.url": registry})) as app:
        app.stream("events", key="string", value=protobuf()).to("events-json", value="json")
        app.start()
        assert app.brokers
        conf = {"use.deprecated.format": False, "subject.name.strategy": lambda ctx, name: name}
        for msg_type, value in [(order_pb2.Refund, order_pb2.Refund(order_id=7, amount=2.5)),
                                (order_pb2.Order.Line, order_pb2.Order.Line(sku="pen-1", count=2))]:
            p = SerializingProducer({"bootstrap.servers": app.brokers, "key.serializer": StringSerializer(),
                                     "value.serializer": ProtobufSerializer(msg_type, sr, conf)})
            p.produce("events", key=msg_type.DESCRIPTOR.name, value=value, partition=0)
            assert p.flush(30) == 0
        raw = Consumer({"bootstrap.servers": app.brokers, "group.id": "sr-idx", "auto.offset.reset": "earliest"})
        raw.subscribe(["events"])
        wire: list[bytes] = []
        Runner(app)
        c = Consumer({"bootstrap.servers": app.brokers, "group.id": "sr-idx-json", "auto.offset.reset": "earliest"})
        c.subscribe(["events-json"])
        got: list[Any] = []
        deadline = time.monotonic() + WAIT
        try:
            while (len(got) < 2 or len(wire) < 2) and time.monotonic() < deadline:
                for consumer, into in ((c, got), (raw, wire)):
                    m = consumer.poll(0.2)
                    if m is not None and not m.error():
                        into.append(json.loads(m.value()) if consumer is c else m.value())
        finally:
            c.close()
            raw.close()
        # The indexes as confluent-kafka wrote them: [1] and [0, 0] (zigzag varints).
        assert [w[5:7] if w[5] == 2 else w[5:8] for w in wire] == [b"\x02\x02", b"\x04\x00\x00"], wire
        # (events-json's partitions need not keep the order of events/0.)
        assert sorted(got, key=json.dumps) == [{"order_id": "7", "amount": 2.5}, {"sku": "pen-1", "count": 2}], got


def test_protobuf_sink_writes_the_message_it_names(tmp_path: Path, registry: str, pb2: Any) -> None:
    """protobuf(schema, message=...) at a sink writes that message with its
    indexes (a second top-level one: [1], bytes 02 02; a nested one by its
    name in the package: [0, 0], bytes 04 00 00), which confluent-kafka's
    ProtobufDeserializer of that message type reads back."""
    order_pb2, _ = pb2
    with App("sr-" + uuid.uuid4().hex[:6], Config(state_dir=str(tmp_path / "s"), extra={"schema.registry.url": registry})) as app:
        s = app.stream("events", key="string", value="json")
        s.filter(lambda k, v: "order_id" in v).to("refunds", value=protobuf(ORDER_PROTO, message="shop.Refund"))
        s.filter(lambda k, v: "sku" in v).to("lines", value=protobuf(ORDER_PROTO, message="Order.Line"))
        app.start()
        assert app.brokers
        p = Producer({"bootstrap.servers": app.brokers})
        p.produce("events", key=b"r", value=json.dumps({"order_id": "7", "amount": 2.5}).encode(), partition=0)
        p.produce("events", key=b"l", value=json.dumps({"sku": "pen-1", "count": 2}).encode(), partition=0)
        assert p.flush(30) == 0
        Runner(app)
        sr = SchemaRegistryClient({"url": registry})
        for topic, msg_type, index, want in [("refunds", order_pb2.Refund, b"\x02\x02", (7, 2.5)),
                                             ("lines", order_pb2.Order.Line, b"\x04\x00\x00", ("pen-1", 2))]:
            c = Consumer({"bootstrap.servers": app.brokers, "group.id": "sr-msg-" + topic, "auto.offset.reset": "earliest"})
            c.subscribe([topic])
            m = None
            deadline = time.monotonic() + WAIT
            try:
                while m is None and time.monotonic() < deadline:
                    got = c.poll(0.5)
                    if got is not None and not got.error():
                        m = got
            finally:
                c.close()
            assert m is not None, f"no record on {topic} within {WAIT:.0f} s"
            wire = m.value()
            assert wire[5:5 + len(index)] == index, (topic, wire)
            d = ProtobufDeserializer(msg_type, {"use.deprecated.format": False}, schema_registry_client=sr)
            v = d(wire, SerializationContext(topic, MessageField.VALUE))
            fields = (v.order_id, v.amount) if msg_type is order_pb2.Refund else (v.sku, v.count)
            assert fields == want, (topic, v)


MONEY_PROTO = """syntax = "proto3";
package common;
message Money { string currency = 1; int64 units = 2; }
"""
INVOICE_PROTO = """syntax = "proto3";
package shop;
import "common/money.proto";
import "google/protobuf/timestamp.proto";
message Invoice { int64 id = 1; common.Money total = 2; google.protobuf.Timestamp at = 3; }
"""


def test_protobuf_schema_references_from_confluent_kafka(tmp_path: Path, registry: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """invoice.proto imports common/money.proto and a standard file:
    confluent-kafka's ProtobufSerializer registers money.proto as a
    reference (skipping the standard one), and the engine fetches it by
    subject and version to decode the invoices."""
    gen = tmp_path / "pb2refs"
    (gen / "common").mkdir(parents=True)
    (gen / "common" / "money.proto").write_text(MONEY_PROTO, encoding="utf-8")
    (gen / "invoice.proto").write_text(INVOICE_PROTO, encoding="utf-8")
    subprocess.run(["protoc", f"--proto_path={gen}", f"--python_out={gen}", "common/money.proto", "invoice.proto"], check=True)
    monkeypatch.syspath_prepend(str(gen))
    sys.modules.pop("invoice_pb2", None)
    invoice_pb2 = importlib.import_module("invoice_pb2")
    sr = SchemaRegistryClient({"url": registry})
    with App("sr-" + uuid.uuid4().hex[:6], Config(state_dir=str(tmp_path / "s"), extra={"schema.registry.url": registry})) as app:
        app.stream("invoices", key="string", value=protobuf()).to("invoices-json", value="json")
        app.start()
        assert app.brokers
        p = SerializingProducer({"bootstrap.servers": app.brokers, "key.serializer": StringSerializer(),
                                 "value.serializer": ProtobufSerializer(invoice_pb2.Invoice, sr, {"use.deprecated.format": False})})
        inv = invoice_pb2.Invoice(id=1)
        inv.total.currency, inv.total.units = "EUR", 12
        inv.at.FromJsonString("2024-01-02T03:04:05Z")
        p.produce("invoices", key="i1", value=inv, partition=0)
        assert p.flush(30) == 0
        refs = sr.get_latest_version("invoices-value").schema.references
        assert [(r.name, r.subject) for r in refs] == [("common/money.proto", "common/money.proto")], refs
        Runner(app)
        c = Consumer({"bootstrap.servers": app.brokers, "group.id": "sr-refs", "auto.offset.reset": "earliest"})
        c.subscribe(["invoices-json"])
        got = None
        deadline = time.monotonic() + WAIT
        try:
            while got is None and time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is not None and not m.error():
                    got = json.loads(m.value())
        finally:
            c.close()
        assert got == {"id": "1", "total": {"currency": "EUR", "units": "12"}, "at": "2024-01-02T03:04:05Z"}, got
