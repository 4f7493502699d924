"""The SDK against the real engine and its embedded Kafka broker, checked with
an independent Kafka client (confluent-kafka / librdkafka)."""

from __future__ import annotations

import collections
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from polystreams import (
    App,
    Config,
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    ProcessingError,
)
from polystreams.v1alpha1 import engine_pb2 as pb

WORDCOUNT_DESCRIBE = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [lines])
      --> KSTREAM-FLATMAPVALUES-0000000001
    Processor: KSTREAM-FLATMAPVALUES-0000000001 (stores: [])
      --> KSTREAM-KEY-SELECT-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-KEY-SELECT-0000000002 (stores: [])
      --> KSTREAM-FILTER-0000000006
      <-- KSTREAM-FLATMAPVALUES-0000000001
    Processor: KSTREAM-FILTER-0000000006 (stores: [])
      --> KSTREAM-SINK-0000000005
      <-- KSTREAM-KEY-SELECT-0000000002
    Sink: KSTREAM-SINK-0000000005 (topic: KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition)
      <-- KSTREAM-FILTER-0000000006

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000007 (topics: [KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition])
      --> KSTREAM-AGGREGATE-0000000004
    Processor: KSTREAM-AGGREGATE-0000000004 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000003])
      --> KTABLE-TOSTREAM-0000000008
      <-- KSTREAM-SOURCE-0000000007
    Processor: KTABLE-TOSTREAM-0000000008 (stores: [])
      --> KSTREAM-SINK-0000000009
      <-- KSTREAM-AGGREGATE-0000000004
    Sink: KSTREAM-SINK-0000000009 (topic: word-counts)
      <-- KTABLE-TOSTREAM-0000000008

"""


def config(tmp_path: Path, **kw: Any) -> Config:
    return Config(state_dir=str(tmp_path / "state"), **kw)


def create_topic(brokers: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": brokers})
    for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(timeout=30)


def produce(brokers: str, topic: str, values: list[str], partition: int | None = None) -> None:
    p = Producer({"bootstrap.servers": brokers, "linger.ms": 5})
    for v in values:
        if partition is None:
            p.produce(topic, value=v.encode())
        else:
            p.produce(topic, value=v.encode(), partition=partition)
    assert p.flush(30) == 0, "produce did not complete"


def word_count(app: App) -> None:
    (app.stream("lines", value="string")
        .flat_map_values(str.split)
        .group_by(lambda key, word: word, key="string")
        .count()
        .to_stream()
        .to("word-counts"))


class Runner:
    """app.run() in a thread; .error is what it raised (None when it returned)."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.error: BaseException | None = None
        self.returned = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.app.run()
            self.returned = True
        except BaseException as e:
            self.error = e

    def join(self, timeout: float) -> None:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), f"app.run() did not return within {timeout}s"


def read_until(brokers: str, topic: str, done: Callable[[dict[str, bytes]], bool], timeout: float, runner: Runner) -> dict[str, bytes]:
    """Reads topic from the beginning, keeping each key's last value, until
    done(last) or timeout."""
    c = Consumer({"bootstrap.servers": brokers, "group.id": "verify-" + topic, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    last: dict[str, bytes] = {}
    deadline = time.monotonic() + timeout
    assigned = False
    try:
        while time.monotonic() < deadline:
            assert runner.error is None, f"app.run() failed: {runner.error!r}"
            if not assigned:
                md = c.list_topics(timeout=5).topics.get(topic)
                if md is None or md.error is not None or not md.partitions:
                    time.sleep(0.2)
                    continue
                c.assign([TopicPartition(topic, p, 0) for p in md.partitions])
                assigned = True
            for m in c.consume(1000, timeout=0.5):
                if m.error():
                    continue
                last[m.key().decode()] = m.value()
            if done(last):
                return last
    finally:
        c.close()
    return last


def test_word_count_end_to_end(tmp_path: Path, app_id: str) -> None:
    lines = [" ".join(f"w{(i * 7 + j * 13) % 41}" for j in range(i % 6 + 1)) for i in range(3000)]
    expected = collections.Counter(w for line in lines for w in line.split())
    with App(app_id, config(tmp_path, commit_interval_ms=100)) as app:
        assert app.brokers, "a dev engine reports its embedded broker"
        create_topic(app.brokers, "lines", 4)
        create_topic(app.brokers, "word-counts", 4)  # as with Kafka Streams, output topics are the user's
        produce(app.brokers, "lines", lines)
        word_count(app)
        runner = Runner(app)

        def complete(last: dict[str, bytes]) -> bool:
            return len(last) == len(expected) and all(
                len(last[w]) == 8 and struct.unpack(">q", last[w])[0] == n for w, n in expected.items()
            )

        last = read_until(app.brokers, "word-counts", complete, 90, runner)
        app.stop()
        runner.join(60)
    assert runner.error is None and runner.returned
    for w, n in expected.items():
        assert w in last, f"no count for {w!r}"
        assert len(last[w]) == 8, f"count of {w!r} is {len(last[w])} bytes, want an 8-byte long"
        assert struct.unpack(">q", last[w])[0] == n, f"count of {w!r}"
    assert set(last) == set(expected)


def test_describe_is_kafka_streams_text(tmp_path: Path, app_id: str) -> None:
    with App(app_id, config(tmp_path)) as app:
        word_count(app)
        assert app.describe() == WORDCOUNT_DESCRIBE


def test_bad_input_names_the_offender_and_keeps_the_session(tmp_path: Path, app_id: str) -> None:
    with App(app_id, config(tmp_path)) as app:
        assert app.brokers
        create_topic(app.brokers, "in", 1)
        create_topic(app.brokers, "out", 1)
        with pytest.raises(InvalidArgumentError, match="xml"):
            app.stream("in", value="xml")  # type: ignore[arg-type]
        s = app.stream("in", value="string")
        # The SDK has no count() on a KStream; the engine refuses it too.
        raw = app._client
        with pytest.raises(InvalidArgumentError) as info:
            raw.build(pb.BuildRequest(session_id=app._session, count=pb.CountOp(input=s.handle.id)))
        assert "count" in info.value.message and str(s.handle.id) in info.value.message
        tok = raw.register_function(pb.RegisterFunctionRequest(session_id=app._session, name="f")).token
        with pytest.raises(NotFoundError, match="999"):
            raw.build(pb.BuildRequest(session_id=app._session, map_values=pb.MapValuesOp(input=999, token=tok)))
        with pytest.raises(NotFoundError, match="token 77"):
            raw.build(pb.BuildRequest(session_id=app._session, map_values=pb.MapValuesOp(input=s.handle.id, token=77)))
        with pytest.raises(InvalidArgumentError, match="topic"):
            app.stream([])
        # Still usable, and refused calls burned no node number.
        m = s.map_values(str.upper)
        assert m.handle.node == "KSTREAM-MAPVALUES-0000000001"
        assert m.handle.kind == "stream" and m.handle.value_serde == "string"
        m.to("out")
        app.start()
        with pytest.raises(FailedPreconditionError, match="after Start"):
            app.stream("in")
        assert app.state() in ("rebalancing", "running")


def test_raising_function_fails_the_topology_naming_the_record(tmp_path: Path, app_id: str) -> None:
    def upper(v: str) -> str:
        if v == "poison":
            raise ValueError("poison pill")
        return v.upper()

    with App(app_id, config(tmp_path, commit_interval_ms=100)) as app:
        assert app.brokers
        create_topic(app.brokers, "in", 1)
        create_topic(app.brokers, "out", 1)
        produce(app.brokers, "in", ["a", "b", "poison", "c"], partition=0)
        app.stream("in", value="string").map_values(upper).to("out")
        runner = Runner(app)
        runner.join(90)
    assert isinstance(runner.error, ProcessingError), repr(runner.error)
    e = runner.error
    assert "in/0@2" in e.message and "KSTREAM-MAPVALUES-0000000001" in e.message
    assert "ValueError: poison pill" in e.message
    assert (e.topic, e.partition, e.offset, e.node) == ("in", 0, 2, "KSTREAM-MAPVALUES-0000000001")


CTRL_C_SCRIPT = """
import sys
sys.path.insert(0, {src!r})
from confluent_kafka.admin import AdminClient, NewTopic
from polystreams import App, Config
with App({app_id!r}, Config(state_dir={state!r})) as app:
    admin = AdminClient({{"bootstrap.servers": app.brokers}})
    for f in admin.create_topics([NewTopic("in", 1, 1), NewTopic("out", 1, 1)]).values():
        f.result(timeout=30)
    app.stream("in", value="string").map_values(str.upper).to("out")
    print(app._engine.pid, flush=True)
    app.run()
print("returned", flush=True)
"""


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_signal_stops_cleanly_and_ends_the_engine(tmp_path: Path, app_id: str, sig: str) -> None:
    import os
    import select
    import signal
    import subprocess
    import sys

    src = str(Path(__file__).resolve().parents[2] / "src")
    script = CTRL_C_SCRIPT.format(src=src, app_id=app_id, state=str(tmp_path / "state"))
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        ready, _, _ = select.select([p.stdout], [], [], 60)
        assert ready, "the app did not start within 60s"
        line = p.stdout.readline()
        assert line.strip().isdigit(), p.stderr.read() if p.stderr else line
        engine_pid = int(line)
        time.sleep(1.5)  # in run(): started and exchanging
        p.send_signal(getattr(signal, sig))
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 0, err
    assert "Traceback" not in err, err
    assert out.strip() == "returned"
    # The engine child is gone (reaped by close()).
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(engine_pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"engine {engine_pid} still running after the app exited")


WAITING_SCRIPT = """
import sys
sys.path.insert(0, {src!r})
from polystreams import App, Config
with App({app_id!r}, Config(state_dir={state!r}), brokers={brokers!r}) as app:
    app.stream("in", value="string").map_values(str.upper).to("out")
    print("built", flush=True)
    app.run()
print("returned", flush=True)
"""


def test_ctrl_c_while_waiting_for_brokers_is_clean(tmp_path: Path, app_id: str) -> None:
    """Ctrl-C at a terminal (SIGINT to the whole foreground process group)
    while the engine waits for brokers that do not answer: the program
    returns cleanly, with no "engine unreachable" error (the engine, in its
    own process group, is stopped by the app, not by the signal)."""
    import os
    import select
    import signal
    import socket
    import subprocess
    import sys

    with socket.socket() as s:  # a port where nothing listens
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"
    src = str(Path(__file__).resolve().parents[2] / "src")
    script = WAITING_SCRIPT.format(src=src, app_id=app_id, state=str(tmp_path / "state"), brokers=dead)
    p = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert p.stdout is not None and p.stderr is not None
        ready, _, _ = select.select([p.stdout], [], [], 60)
        assert ready, "the app did not build within 60s"
        assert p.stdout.readline().strip() == "built", p.stderr.read()
        # Wait until the engine says it is waiting for the brokers.
        waited = ""
        while "waiting for the brokers" not in waited:
            ready, _, _ = select.select([p.stderr], [], [], 60)
            assert ready, f"the engine never said it waits for the brokers: {waited}"
            line = p.stderr.readline()
            assert line, f"stderr closed: {waited}"
            waited += line
        os.killpg(p.pid, signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 0, waited + err
    assert "unreachable" not in err, err
    assert "Traceback" not in err, err
    assert out.strip() == "returned"
