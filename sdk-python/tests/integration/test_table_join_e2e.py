"""Table-table joins (KTable.join / left_join / outer_join) against the real
engine, read back with an independent Kafka client (confluent-kafka /
librdkafka)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from test_engine_e2e import Runner, config, create_topic

from polystreams import App, InvalidArgumentError, Materialized


class Reader:
    """Every record of a topic, per key in order, as "value@timestamp"
    ("None@ts" for a tombstone), read as they come."""

    def __init__(self, brokers: str, topic: str) -> None:
        self.topic = topic
        self.c = Consumer({"bootstrap.servers": brokers, "group.id": "tt-" + topic, "enable.auto.commit": False})
        md = self.c.list_topics(topic, timeout=10).topics[topic]
        self.c.assign([TopicPartition(topic, p, 0) for p in md.partitions])
        self.by_key: dict[str, list[str]] = {}
        self.n = 0

    def read_until(self, n: int, runner: Runner, timeout: float = 30) -> dict[str, list[str]]:
        deadline = time.monotonic() + timeout
        while self.n < n and time.monotonic() < deadline:
            assert runner.error is None, f"app.run() failed: {runner.error!r}"
            for m in self.c.consume(100, timeout=0.2):
                if m.error():
                    continue
                v = None if m.value() is None else m.value().decode()
                self.by_key.setdefault(m.key().decode(), []).append(f"{v}@{m.timestamp()[1]}")
                self.n += 1
        return self.by_key


def put(p: Producer, topic: str, key: str, value: str | None, ts: int) -> None:
    # murmur2, as the engine (and Kafka's Java clients) partition keys.
    p.produce(topic, key=key.encode(), value=None if value is None else value.encode(), timestamp=ts)
    assert p.flush(30) == 0


def joiner(v: str | None, o: str | None) -> str:
    return f"{v}+{o}"


# (topic, key, value, ts) and what the inner, left and outer joins forward
# for it, per key: KTableKTableInnerJoin forwards only for keys both tables
# hold (a delete of either side: a tombstone); the left join's other side
# (KTableKTableRightJoin) joins with None for a deleted row; the outer join
# forwards for every change. A joined change's timestamp is the later of
# both sides' (max), as Kafka Streams has it.
STEPS: list[tuple[str, str, str | None, int, list[str], list[str], list[str]]] = [
    ("ta", "k1", "a1", 10, [], ["k1=a1+None@10"], ["k1=a1+None@10"]),
    ("tb", "k1", "b1", 5, ["k1=a1+b1@10"], ["k1=a1+b1@10"], ["k1=a1+b1@10"]),
    ("ta", "k1", "a2", 20, ["k1=a2+b1@20"], ["k1=a2+b1@20"], ["k1=a2+b1@20"]),
    ("tb", "k2", "b2", 30, [], [], ["k2=None+b2@30"]),
    ("tb", "k1", None, 40, ["k1=None@40"], ["k1=a2+None@40"], ["k1=a2+None@40"]),
    ("ta", "k1", None, 50, [], ["k1=None@50"], ["k1=None@50"]),
    ("ta", "k2", "a3", 25, ["k2=a3+b2@30"], ["k2=a3+b2@30"], ["k2=a3+b2@30"]),
    ("tb", "k2", None, 60, ["k2=None@60"], ["k2=a3+None@60"], ["k2=a3+None@60"]),
]


def per_key(lines: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in lines:
        k, v = line.split("=", 1)
        out.setdefault(k, []).append(v)
    return out


def test_inner_left_outer_update_sequences(tmp_path: Path, app_id: str) -> None:
    with App(app_id, config(tmp_path, commit_interval_ms=100)) as app:
        assert app.brokers
        for t in ("ta", "tb", "inner", "left", "outer"):
            create_topic(app.brokers, t, 2)
        ta = app.table("ta", key="string", value="string")
        tb = app.table("tb", key="string", value="string")
        inner = ta.join(tb, joiner)
        assert inner.handle.node == "KTABLE-MERGE-0000000006" and inner.store is None
        inner.to_stream().to("inner")
        ta.left_join(tb, joiner, name="lj").to_stream().to("left")
        outer = ta.outer_join(tb, joiner, materialized="outer-joined")
        assert outer.store == "outer-joined"
        outer.to_stream().to("outer")
        assert "Processor: lj-join-this (stores: [tb-STATE-STORE-0000000003])" in app.describe()
        runner = Runner(app)
        readers = {t: Reader(app.brokers, t) for t in ("inner", "left", "outer")}
        p = Producer({"bootstrap.servers": app.brokers, "partitioner": "murmur2_random"})
        want: dict[str, list[str]] = {"inner": [], "left": [], "outer": []}
        for i, (topic, key, value, ts, *forwarded) in enumerate(STEPS):
            put(p, topic, key, value, ts)
            for t, lines in zip(("inner", "left", "outer"), forwarded):
                want[t].extend(lines)
            # Each step makes the outer join forward; once all three joins
            # have forwarded what they should, the next step may go.
            for t in ("inner", "left", "outer"):
                got = readers[t].read_until(len(want[t]), runner)
                assert got == per_key(want[t]), f"after step {i + 1} {STEPS[i][:4]}: {t} join"
        time.sleep(0.5)  # nothing more comes
        for t in ("inner", "left", "outer"):
            assert readers[t].read_until(len(want[t]) + 1, runner, timeout=0.5) == per_key(want[t]), t
        assert dict(outer.query().all()) == {"k2": "a3+None"}
        app.stop()
        runner.join(60)


def test_table_join_refusals_name_the_offender(tmp_path: Path, app_id: str) -> None:
    with App(app_id, config(tmp_path)) as app:
        ta = app.table("ta", key="string", value="string")
        tb = app.table("tb", key="long", value="string")
        with pytest.raises(InvalidArgumentError, match="table handle 1 has string keys and table handle 2 long keys"):
            ta.join(tb, joiner)
        grouped = ta.group_by(lambda k, v: (v, k), key="string", value="string")
        with pytest.raises(TypeError, match="other must be a KTable, not KGroupedTable"):
            ta.outer_join(grouped, joiner)  # type: ignore[arg-type]
        # A filter reads through its value getter; over an unmaterialized
        # join result it reaches no store.
        filtered = ta.join(app.table("te", key="string", value="string"), joiner).filter(lambda k, v: True)
        with pytest.raises(InvalidArgumentError, match=r"this table handle \d+ \(KTABLE-FILTER-\d+\) keeps no store"):
            filtered.left_join(app.table("tc", key="string", value="string"), joiner)
        # A Materialized with serdes only still keeps the result in a store.
        tc = app.table("td", key="string", value="string")
        joined = ta.left_join(tc, joiner, materialized=Materialized(value="string"))
        assert joined.store is not None and joined.store.startswith("KTABLE-MERGE-STATE-STORE-")
        joined.to_stream().to("out")  # the session goes on
