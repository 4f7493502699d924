"""describe(format=...) and metrics() against the real engine."""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path

import pytest
from test_engine_e2e import Runner, config, create_topic, produce, read_until, word_count

from polystreams import App, DescribeFormat, HostHealth

GOLDENS = Path(__file__).resolve().parents[3] / "core" / "internal" / "topology" / "testdata" / "render"


@pytest.mark.parametrize("fmt", ["text", "json", "mermaid", "dot", "svg"])
def test_describe_formats_match_the_engine_goldens(tmp_path: Path, app_id: str, fmt: DescribeFormat) -> None:
    # The engine's golden word count (core/internal/topology/render_test.go)
    # is the same DSL chain as word_count: the SDK gets it byte for byte.
    with App(app_id, config(tmp_path)) as app:
        word_count(app)
        assert app.describe(format=fmt) == (GOLDENS / f"wordcount.{fmt}").read_text()
    if fmt == "json":
        d = json.loads((GOLDENS / "wordcount.json").read_text())
        assert [s["id"] for s in d["subtopologies"]] == [0, 1]


def test_metrics_summary(tmp_path: Path, app_id: str) -> None:
    lines = [f"a b c{i % 5}" for i in range(3000)]
    with App(app_id, config(tmp_path, commit_interval_ms=100)) as app:
        assert app.metrics().state == "created" and app.metrics().nodes == ()
        assert app.brokers
        create_topic(app.brokers, "lines", 2)
        create_topic(app.brokers, "word-counts", 2)
        produce(app.brokers, "lines", lines)
        word_count(app)
        runner = Runner(app)
        want = {"a": 3000, "b": 3000, **{f"c{i}": 600 for i in range(5)}}
        read_until(app.brokers, "word-counts",
                   lambda last: {k: struct.unpack(">q", v)[0] for k, v in last.items()} == want, 60, runner)
        deadline = time.monotonic() + 30
        while True:
            m = app.metrics()
            if (m.lag == 0 and m.state == "running") or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        app.stop()
        runner.join(60)
    assert m.state == "running" and m.metrics_enabled
    assert m.node("KSTREAM-SOURCE-0000000000").records == 3000
    flat = m.node("KSTREAM-FLATMAPVALUES-0000000001")
    assert flat.records == 3000 and flat.bundles > 0 and flat.mean_crossing_seconds > 0
    assert m.node("KSTREAM-KEY-SELECT-0000000002").fused_into == "KSTREAM-FLATMAPVALUES-0000000001"
    assert m.node("KSTREAM-AGGREGATE-0000000004").records == 9000
    assert sorted(t.id for t in m.tasks) == ["0_0", "0_1", "1_0", "1_1"]
    assert m.lag == 0, m.tasks
    entries = sum(s.entries for t in m.tasks for s in t.stores)
    assert entries == len(want)
    assert m.dropped_records == 0 and m.failed_records == 0


def test_host_health_of_a_serving_host(tmp_path: Path, app_id: str) -> None:
    # A host that serves its session: once its input is counted nothing
    # waits for it and it is not stalled (core/internal/server's
    # TestGetStateReportsAHostThatStopsExchanging covers the stall). The
    # engine takes num.standby.replicas from the typed config.
    with App(app_id, config(tmp_path, num_standby_replicas=1)) as app:
        assert app.host_health() == HostHealth()  # before start: nothing
        assert app.brokers
        create_topic(app.brokers, "lines", 2)
        create_topic(app.brokers, "word-counts", 2)
        produce(app.brokers, "lines", ["a b", "b"])
        word_count(app)
        runner = Runner(app)
        read_until(app.brokers, "word-counts",
                   lambda last: {k: struct.unpack(">q", v)[0] for k, v in last.items()} == {"a": 1, "b": 2}, 60, runner)
        h = app.host_health()
        app.stop()
        runner.join(60)
    assert h.bundles_waiting == 0 and not h.stalled, h
