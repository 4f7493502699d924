"""Error policies against the real engine, the dead letter topic read with an
independent Kafka client (confluent-kafka / librdkafka, read_committed)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Consumer, Message, Producer, TopicPartition
from test_engine_e2e import Runner, config, create_topic

from polystreams import App, Config


def test_dead_letter_topic_holds_exactly_the_poison_records(tmp_path: Path, app_id: str) -> None:
    n = 2000
    raising = {100, 777, 1999}  # the function raises on these
    undecodable = {5, 1500}  # not JSON: the source cannot decode them

    def score(v: dict[str, int]) -> dict[str, int]:
        if v["n"] in raising:
            raise ValueError(f"cannot score {v['n']}")
        return {"n": v["n"], "score": v["n"] * 2}

    cfg = Config(
        state_dir=config(tmp_path).state_dir,
        processing_guarantee="exactly_once_v2",
        extra={
            "default.deserialization.exception.handler": "dead_letter",
            "processing.exception.handler": "dead_letter",
            "errors.deadletterqueue.topic.name": "scores-dlq",
        },
    )
    with App(app_id, cfg) as app:
        assert app.brokers
        create_topic(app.brokers, "readings", 2)
        create_topic(app.brokers, "scores", 2)
        p = Producer({"bootstrap.servers": app.brokers, "linger.ms": 5})
        sent: dict[str, tuple[bytes, bytes, list[tuple[str, bytes]]]] = {}
        where: dict[int, str] = {}

        def delivered(i: int, record: tuple[bytes, bytes, list[tuple[str, bytes]]]) -> Callable[[object, Message], None]:
            def on(err: object, m: Message) -> None:
                assert err is None, err
                at = f"{m.partition()}@{m.offset()}"
                where[i] = at
                sent[at] = record
            return on

        for i in range(n):
            key = f"k{i % 10}".encode()
            value = b"{not json" if i in undecodable else json.dumps({"n": i}).encode()
            headers = [("seq", str(i).encode())]
            p.produce("readings", key=key, value=value, headers=headers, on_delivery=delivered(i, (key, value, headers)))
        assert p.flush(30) == 0
        app.stream("readings", key="string", value="json").map_values(score).to("scores")
        runner = Runner(app)

        c = Consumer({"bootstrap.servers": app.brokers, "group.id": "verify-dlq", "enable.auto.commit": False,
                      "isolation.level": "read_committed"})
        got: dict[str, tuple[bytes, bytes, dict[str, bytes], list[tuple[str, bytes]]]] = {}
        deadline = time.monotonic() + 90
        assigned = False
        try:
            while time.monotonic() < deadline and len(got) < len(raising) + len(undecodable):
                assert runner.error is None, f"app.run() failed: {runner.error!r}"
                if not assigned:
                    md = c.list_topics(timeout=5).topics.get("scores-dlq")
                    if md is None or md.error is not None or not md.partitions:
                        time.sleep(0.2)
                        continue
                    c.assign([TopicPartition("scores-dlq", q, 0) for q in md.partitions])
                    assigned = True
                for m in c.consume(100, timeout=0.5):
                    if m.error():
                        continue
                    hs = m.headers() or []
                    h = {k: v for k, v in hs}
                    at = f"{h['__streams.errors.partition'].decode()}@{h['__streams.errors.offset'].decode()}"
                    assert at not in got, f"{at} dead-lettered twice"
                    got[at] = (m.key(), m.value(), h, hs)
            time.sleep(1)  # nothing more arrives
            for m in c.consume(100, timeout=1):
                assert m.error() is not None, f"an extra dead letter: {m.headers()}"
        finally:
            c.close()
        app.stop()
        runner.join(60)
    assert runner.error is None and runner.returned

    poison = {where[i]: i for i in raising | undecodable}
    assert set(got) == set(poison), f"dead letters for {sorted(got)}, want {sorted(poison)}"
    for at, i in poison.items():
        key, value, h, hs = got[at]
        skey, svalue, sheaders = sent[at]
        assert (key, value) == (skey, svalue), f"{at}: the dead letter is not the original record"
        assert hs[: len(sheaders)] == list(sheaders), f"{at}: the original headers come first"
        assert h["__streams.errors.topic"] == b"readings"
        if i in raising:
            assert h["__streams.errors.exception"] == b"ValueError"
            assert h["__streams.errors.message"] == f"ValueError: cannot score {i}".encode()
            assert h["__streams.errors.node"] == b"KSTREAM-MAPVALUES-0000000001"
            assert h["__streams.errors.kind"] == b"processing"
        else:
            assert b"does not decode as json" in h["__streams.errors.message"]
            assert h["__streams.errors.node"] == b"KSTREAM-SOURCE-0000000000"
            assert h["__streams.errors.kind"] == b"deserialization"
        assert f"readings/{at}".encode() in h["__streams.errors.stacktrace"]
