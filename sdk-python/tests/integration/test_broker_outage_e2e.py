"""A Kafka broker that stops answering, as the SDK sees it, against the real
engine: the state listener hears ``running`` -> ``degraded`` -> ``running``.

The broker is a ``polystreams dev`` process of its own (the embedded broker);
the application runs on an engine spawned against it. Freezing that process
(SIGSTOP) makes the broker stop answering without closing a connection;
SIGCONT brings it back.
"""

from __future__ import annotations

import os
import signal
import struct
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from test_engine_e2e import Runner, config, create_topic, produce, read_until, word_count

from polystreams import App, BrokerOutage
from polystreams._engine import EngineProcess


@pytest.fixture
def broker(real_engine: str) -> Iterator[EngineProcess]:
    proc = EngineProcess(real_engine)
    try:
        yield proc
    finally:
        os.kill(proc.pid, signal.SIGCONT)  # never leave it frozen
        proc.close()


def counts(last: dict[str, bytes]) -> dict[str, int]:
    return {k: struct.unpack(">q", v)[0] for k, v in last.items()}


def test_state_listener_sees_degraded_while_the_broker_is_frozen(tmp_path: Path, app_id: str, broker: EngineProcess) -> None:
    assert broker.broker
    brokers = broker.broker
    create_topic(brokers, "lines", 2)
    create_topic(brokers, "word-counts", 2)
    produce(brokers, "lines", ["a b a"])
    transitions: list[tuple[str, str]] = []
    outages: list[BrokerOutage | None] = []
    changed = threading.Condition()

    def wait_for(what: str, cond: Callable[[], bool], timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        with changed:
            while not cond():
                left = deadline - time.monotonic()
                assert left > 0, f"{what}: not within {timeout}s; transitions {transitions}"
                changed.wait(left)

    with App(app_id, config(tmp_path, commit_interval_ms=100), brokers=brokers) as app:
        word_count(app)
        assert app.broker_outage() is None  # before start

        @app.on_state_change
        def on_change(new: str, old: str) -> None:
            if new == "degraded":
                outages.append(app.broker_outage())
            with changed:
                transitions.append((new, old))
                changed.notify_all()

        runner = Runner(app)
        assert counts(read_until(brokers, "word-counts", lambda last: counts(last) == {"a": 2, "b": 1}, 90, runner)) == {"a": 2, "b": 1}
        wait_for("running", lambda: bool(transitions) and transitions[-1][0] == "running")
        assert app.broker_outage() is None

        os.kill(broker.pid, signal.SIGSTOP)
        try:
            wait_for("degraded", lambda: transitions[-1][0] == "degraded")
            assert app.state() == "degraded"
        finally:
            os.kill(broker.pid, signal.SIGCONT)
        wait_for("running again", lambda: transitions[-1][0] == "running")
        assert app.broker_outage() is None

        produce(brokers, "lines", ["b c"])
        want = {"a": 2, "b": 2, "c": 1}
        assert counts(read_until(brokers, "word-counts", lambda last: counts(last) == want, 90, runner)) == want
        app.stop()
        runner.join(60)
    assert runner.error is None and runner.returned
    states = [new for new, _ in transitions]
    assert states.count("degraded") == 1, transitions
    i = states.index("degraded")
    assert "running" in states[:i] and "running" in states[i + 1:], transitions
    assert transitions[-1] == ("stopped", "running"), transitions
    # What the listener read when it heard of the outage: the brokers and since when.
    assert len(outages) == 1 and outages[0] is not None, outages
    assert outages[0].brokers == (brokers,)
    assert outages[0].outages == 1
    assert 0 < outages[0].since_ms <= time.time() * 1000
