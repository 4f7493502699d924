"""reduce and aggregate against the real engine and its embedded broker,
checked with an independent Kafka client (confluent-kafka / librdkafka)."""

from __future__ import annotations

import collections
import json
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from test_engine_e2e import Runner, config, create_topic, read_until

import polystreams.app
from polystreams import App, InvalidArgumentError, Materialized
from polystreams._bundle import Executor
from polystreams.v1alpha1 import engine_pb2 as pb

REDUCE_DESCRIBE = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [in])
      --> KSTREAM-REDUCE-0000000002
    Processor: KSTREAM-REDUCE-0000000002 (stores: [KSTREAM-REDUCE-STATE-STORE-0000000001])
      --> none
      <-- KSTREAM-SOURCE-0000000000

"""

REDUCE_TO_STREAM_DESCRIBE = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [in])
      --> KSTREAM-REDUCE-0000000002
    Processor: KSTREAM-REDUCE-0000000002 (stores: [KSTREAM-REDUCE-STATE-STORE-0000000001])
      --> KTABLE-TOSTREAM-0000000003
      <-- KSTREAM-SOURCE-0000000000
    Processor: KTABLE-TOSTREAM-0000000003 (stores: [])
      --> KSTREAM-SINK-0000000004
      <-- KSTREAM-REDUCE-0000000002
    Sink: KSTREAM-SINK-0000000004 (topic: out)
      <-- KTABLE-TOSTREAM-0000000003

"""


class Seen:
    """What the host's executors were handed: bundles, and values of fold bundles."""

    def __init__(self) -> None:
        self.bundles = 0
        self.fold_bundles = 0
        self.fold_values = 0
        self.largest = 0


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> Iterator[Seen]:
    s = Seen()

    class CountingExecutor(Executor):
        def process(self, bundle: pb.Bundle) -> pb.BundleResult:
            s.bundles += 1
            if len(bundle.steps) == 1 and bundle.steps[0].operation in (pb.OPERATION_REDUCE, pb.OPERATION_AGGREGATE):
                s.fold_bundles += 1
                s.fold_values += len(bundle.value_lengths)
                s.largest = max(s.largest, len(bundle.value_lengths))
            return super().process(bundle)

    monkeypatch.setattr(polystreams.app, "Executor", CountingExecutor)
    yield s


def produce_keyed(brokers: str, topic: str, records: list[tuple[str, bytes]]) -> None:
    p = Producer({"bootstrap.servers": brokers, "linger.ms": 5})
    for k, v in records:
        p.produce(topic, key=k.encode(), value=v)
    assert p.flush(30) == 0, "produce did not complete"


def long_of(b: bytes) -> int:
    assert len(b) == 8, f"{b!r} is {len(b)} bytes, want an 8-byte long"
    value: int = struct.unpack(">q", b)[0]
    return value


def run_until(app: App, topic: str, done: Callable[[dict[str, bytes]], bool]) -> dict[str, bytes]:
    """Runs app until the output topic's last values per key satisfy done, then stops it."""
    assert app.brokers
    runner = Runner(app)
    last = read_until(app.brokers, topic, done, 90, runner)
    app.stop()
    runner.join(60)
    assert runner.error is None and runner.returned, repr(runner.error)
    return last


def test_aggregate_sums_a_json_field_per_key(tmp_path: Path, app_id: str, seen: Seen) -> None:
    n, keys = 3000, 17
    records = [(f"cust-{i % keys}", {"amount": (i * 37) % 101, "order": i}) for i in range(n)]
    want = collections.Counter[str]()
    for k, v in records:
        want[k] += v["amount"]
    initializer_calls = collections.Counter[str]()

    def zero() -> int:
        initializer_calls["all"] += 1
        return 0

    with App(app_id, config(tmp_path, commit_interval_ms=100)) as app:
        assert app.brokers
        create_topic(app.brokers, "orders", 3)
        create_topic(app.brokers, "totals", 3)
        produce_keyed(app.brokers, "orders", [(k, json.dumps(v).encode()) for k, v in records])
        table = (
            app.stream("orders", key="string", value="json")
            .group_by_key()
            .aggregate(zero, lambda k, v, a: a + v["amount"], materialized=Materialized(value="long"))
        )
        assert table.handle.kind == "table" and table.handle.value_serde == "long"
        assert table.handle.node == "KSTREAM-AGGREGATE-0000000002"
        table.to_stream().to("totals")
        last = run_until(app, "totals", lambda last: all(k in last and long_of(last[k]) == w for k, w in want.items()))
    assert {k: long_of(v) for k, v in last.items()} == dict(want)
    # One initializer call per key: later bundles start from the stored aggregate.
    assert initializer_calls["all"] == keys
    assert seen.fold_values == n and seen.fold_bundles == seen.bundles


def test_reduce_with_a_python_function(tmp_path: Path, app_id: str, seen: Seen) -> None:
    words = ["a", "kafka", "is", "streams", "polystreams", "go", "python", "extraordinarily", "x", "fold"]
    records = [(f"k{i % 5}", words[(i * 3) % len(words)]) for i in range(500)]
    longest: dict[str, str] = {}
    for k, w in records:
        if k not in longest or len(w) > len(longest[k]):
            longest[k] = w

    def keep_longest(a: str, v: str) -> str:
        return a if len(a) >= len(v) else v

    with App(app_id, config(tmp_path, commit_interval_ms=100)) as app:
        assert app.brokers
        create_topic(app.brokers, "in", 2)
        create_topic(app.brokers, "out", 2)
        produce_keyed(app.brokers, "in", [(k, w.encode()) for k, w in records])
        table = app.stream("in", key="string", value="string").group_by_key().reduce(keep_longest, materialized="longest")
        # A named store burns no name number: the processor is 1 (as in Kafka Streams).
        assert table.handle.node == "KSTREAM-REDUCE-0000000001" and table.handle.value_serde == "string"
        table.to_stream().to("out")
        last = run_until(app, "out", lambda last: {k: v.decode() for k, v in last.items()} == longest)
    assert {k: v.decode() for k, v in last.items()} == longest
    assert seen.fold_values == len(records)


def test_builtin_sum_never_crosses(tmp_path: Path, app_id: str, seen: Seen) -> None:
    records = [(f"k{i % 7}", i - 250) for i in range(1000)]
    want = collections.Counter[str]()
    for k, v in records:
        want[k] += v
    with App(app_id, config(tmp_path, commit_interval_ms=100)) as app:
        assert app.brokers
        create_topic(app.brokers, "in", 2)
        create_topic(app.brokers, "out", 2)
        produce_keyed(app.brokers, "in", [(k, struct.pack(">q", v)) for k, v in records])
        g = app.stream("in", key="string", value="long").group_by_key()
        g.reduce("sum").to_stream().to("out")
        assert app._functions == {}  # nothing registered: the sum runs in the engine
        last = run_until(app, "out", lambda last: all(k in last and long_of(last[k]) == w for k, w in want.items()))
    assert {k: long_of(v) for k, v in last.items()} == dict(want)
    assert seen.bundles == 0, f"a built-in reduce crossed {seen.bundles} bundles"


def test_builtin_sum_of_strings_is_refused_with_the_engines_message(tmp_path: Path, app_id: str) -> None:
    with App(app_id, config(tmp_path)) as app:
        g = app.stream("in", key="string", value="string").group_by_key()
        with pytest.raises(InvalidArgumentError) as info:
            g.reduce("max")
        assert "long or double" in info.value.message and "string" in info.value.message
        # The session stays usable; the refused call burned no name.
        g.reduce("latest")
        assert "KSTREAM-REDUCE-0000000002 (stores: [KSTREAM-REDUCE-STATE-STORE-0000000001])" in app.describe()


def test_describe_names_reduce_as_kafka_streams(tmp_path: Path, app_id: str) -> None:
    with App(app_id, config(tmp_path)) as app:
        app.stream("in", key="string", value="long").group_by_key().reduce(lambda a, v: a + v)
        assert app.describe() == REDUCE_DESCRIBE
    with App(app_id + "-b", config(tmp_path)) as app:
        app.stream("in", key="string", value="long").group_by_key().reduce("sum").to_stream().to("out")
        assert app.describe() == REDUCE_TO_STREAM_DESCRIBE


def test_a_hot_key_crosses_in_few_bundles(tmp_path: Path, app_id: str, seen: Seen) -> None:
    n = 20000
    calls = collections.Counter[str]()

    def add(a: int, v: int) -> int:
        calls["reduce"] += 1
        return a + v

    with App(app_id, config(tmp_path, commit_interval_ms=100)) as app:
        assert app.brokers
        create_topic(app.brokers, "in", 1)
        create_topic(app.brokers, "out", 1)
        produce_keyed(app.brokers, "in", [("hot", struct.pack(">q", i)) for i in range(n)])
        app.stream("in", key="string", value="long").group_by_key().reduce(add).to_stream().to("out")
        want = n * (n - 1) // 2
        last = run_until(app, "out", lambda last: "hot" in last and long_of(last["hot"]) == want)
    assert long_of(last["hot"]) == want
    assert calls["reduce"] == n - 1  # the first value became the aggregate without a call
    assert seen.fold_values == n
    # One crossing per bundle, however hot the key: far fewer bundles than records.
    assert seen.fold_bundles * 20 <= n, f"{n} records of one key crossed in {seen.fold_bundles} bundles"
    print(f"\n  hot key: {n} records in {seen.fold_bundles} fold bundles (largest {seen.largest} values)")


def test_a_raising_reducer_fails_the_topology_naming_the_record(tmp_path: Path, app_id: str) -> None:
    def add(a: int, v: int) -> Any:
        if v == 3:
            raise ValueError("three")
        return a + v

    with App(app_id, config(tmp_path, commit_interval_ms=100)) as app:
        assert app.brokers
        create_topic(app.brokers, "in", 1)
        create_topic(app.brokers, "out", 1)
        produce_keyed(app.brokers, "in", [("k", struct.pack(">q", i)) for i in range(6)])
        app.stream("in", key="string", value="long").group_by_key().reduce(add).to_stream().to("out")
        runner = Runner(app)
        runner.join(90)
    e = runner.error
    assert isinstance(e, polystreams.ProcessingError), repr(e)
    assert "ValueError: three" in e.message
    assert (e.topic, e.partition, e.offset, e.node) == ("in", 0, 3, "KSTREAM-REDUCE-0000000002")
