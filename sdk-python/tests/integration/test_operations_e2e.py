"""Operations Kafka Streams users look for, against the real engine:
auto.offset.reset, default serdes, pause/resume/is_paused and clean_up."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from test_engine_e2e import Runner, create_topic, produce

from polystreams import App, Config, FailedPreconditionError, InvalidArgumentError


def read_values(brokers: str, topic: str) -> list[str]:
    c = Consumer({"bootstrap.servers": brokers, "group.id": "verify-ops", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        return [m.value().decode() for m in c.consume(100, timeout=1) if m.error() is None]
    finally:
        c.close()


def test_offset_reset_default_serdes_pause_and_clean_up(tmp_path: Path, app_id: str) -> None:
    cfg = Config(
        state_dir=str(tmp_path / "state"),
        commit_interval_ms=100,
        auto_offset_reset="latest",
        default_key_serde="string",
        default_value_serde="string",
        default_production_exception_handler="continue",
        num_stream_threads=2,
    )
    with App(app_id, cfg) as app:
        assert app.brokers
        create_topic(app.brokers, "ops-in", 1)
        create_topic(app.brokers, "ops-out", 1)
        produce(app.brokers, "ops-in", ["before"])
        # default_value_serde: the function gets str (bytes + str raises).
        app.stream("ops-in").map_values(lambda v: v + "!").to("ops-out")
        assert app.config["auto.offset.reset"] == "latest"
        assert app.config["num.stream.threads"] == "2"
        app.pause()  # before start: it starts paused
        assert app.is_paused()
        runner = Runner(app)
        deadline = time.monotonic() + 60
        while app.state() != "running":
            assert time.monotonic() < deadline, f"state {app.state()}"
            time.sleep(0.05)
        with pytest.raises(FailedPreconditionError, match="the application is running"):
            app.clean_up()
        produce(app.brokers, "ops-in", ["paused"])
        time.sleep(1)  # a paused application processes nothing: watch a while
        assert read_values(app.brokers, "ops-out") == []
        app.resume()
        assert not app.is_paused()
        # latest: "before" is skipped, everything from the start on comes out.
        while "paused!" not in (out := read_values(app.brokers, "ops-out")):
            assert runner.error is None, runner.error
            assert time.monotonic() < deadline, f"ops-out: {out}"
        assert "before!" not in out
        app.stop()
        runner.join(60)
        assert runner.error is None and runner.returned
        assert app.clean_up() == str(tmp_path / "state" / app_id)
        assert not (tmp_path / "state" / app_id).exists()


def test_operations_config_is_checked(tmp_path: Path, app_id: str) -> None:
    cfg = Config(state_dir=str(tmp_path), extra={"auto.offset.reset": "smallest", "num.stream.threads": "0"})
    with pytest.raises(InvalidArgumentError) as e:
        App(app_id, cfg)
    assert "auto.offset.reset: want earliest (the default), latest or none" in str(e.value)
    assert "num.stream.threads: want an integer from 1 to 65536" in str(e.value)
    with App(app_id, Config(state_dir=str(tmp_path))) as app, pytest.raises(InvalidArgumentError, match="offset_reset \"smallest\""):
        app.stream("x", offset_reset="smallest")  # type: ignore[arg-type]
