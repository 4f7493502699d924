"""App and the builder against a fake engine: what goes on the wire, and the host loop."""

from __future__ import annotations

import queue
import threading
import time
from typing import Any

import pytest
from helpers import FakeEngine, connect_error, make_bundle, split_column

from polystreams import (
    App,
    Config,
    FailedPreconditionError,
    HostHealth,
    InvalidArgumentError,
    KGroupedStream,
    KStream,
    KTable,
    Materialized,
    ProcessingError,
)
from polystreams.v1alpha1 import engine_pb2 as pb

KIND_OF = {
    "stream": pb.KIND_STREAM,
    "table": pb.KIND_TABLE,
    "map_values": pb.KIND_STREAM,
    "filter": pb.KIND_STREAM,
    "filter_not": pb.KIND_STREAM,
    "flat_map_values": pb.KIND_STREAM,
    "map": pb.KIND_STREAM,
    "select_key": pb.KIND_STREAM,
    "peek": pb.KIND_STREAM,
    "group_by": pb.KIND_GROUPED_STREAM,
    "group_by_key": pb.KIND_GROUPED_STREAM,
    "count": pb.KIND_TABLE,
    "reduce": pb.KIND_TABLE,
    "aggregate": pb.KIND_TABLE,
    "to_stream": pb.KIND_STREAM,
    "flat_map": pb.KIND_STREAM,
    "process": pb.KIND_STREAM,
}


class Engine:
    """Scripts a FakeEngine as a minimal EngineService."""

    def __init__(self, fake: FakeEngine) -> None:
        self.fake = fake
        self.next_token = 0
        self.next_handle = 0
        self.exchanges: queue.Queue[pb.ExchangeResponse] = queue.Queue()
        self.exchange_requests: list[pb.ExchangeRequest] = []
        self.stopped = False
        self.default_state = pb.STATE_RUNNING
        h = fake.handlers
        h["OpenSession"] = lambda b: pb.OpenSessionResponse(
            session_id="sess-1", config={**pb.OpenSessionRequest.FromString(b).config, "application.id": "x"}
        )
        h["RegisterFunction"] = self.register
        h["Build"] = self.build
        h["Describe"] = lambda b: pb.DescribeResponse(text="Topologies:\n   Sub-topology: 0\n")
        h["Start"] = lambda b: pb.StartResponse()
        h["Exchange"] = self.exchange
        h["Stop"] = self.stop
        h["GetState"] = lambda b: pb.GetStateResponse(state=self.default_state)

    def register(self, body: bytes) -> pb.RegisterFunctionResponse:
        self.next_token += 1
        return pb.RegisterFunctionResponse(token=self.next_token)

    def build(self, body: bytes) -> Any:
        req = pb.BuildRequest.FromString(body)
        op = req.WhichOneof("operation")
        if op in ("to", "foreach", "print", "add_state_store", "add_source", "add_processor", "add_sink"):
            return pb.BuildResponse()
        if op not in KIND_OF:
            return connect_error("invalid_argument", f"Build: unknown op {op}")
        self.next_handle += 1
        return pb.BuildResponse(
            handle=pb.Handle(id=self.next_handle, kind=KIND_OF[op], key_serde="string", value_serde="string", node=f"N-{op}")
        )

    def exchange(self, body: bytes) -> Any:
        req = pb.ExchangeRequest.FromString(body)
        self.exchange_requests.append(req)
        if self.stopped:
            return connect_error("not_found", 'Exchange: session "sess-1" does not exist', 404)
        try:
            return self.exchanges.get_nowait()
        except queue.Empty:
            time.sleep(min(req.wait_ms, 50) / 1000)
            return pb.ExchangeResponse(state=self.default_state)

    def stop(self, body: bytes) -> Any:
        if self.stopped:
            return connect_error("not_found", 'Stop: session "sess-1" does not exist', 404)
        self.stopped = True
        return pb.StopResponse()

    def builds(self) -> list[pb.BuildRequest]:
        return self.fake.requests("Build", pb.BuildRequest)


@pytest.fixture
def engine(fake_engine: FakeEngine) -> Engine:
    return Engine(fake_engine)


def test_word_count_builder_replays_one_build_per_operator(engine: Engine) -> None:
    app = App("wordcount", engine=engine.fake.url)
    split = str.split

    def word(key: Any, w: str) -> str:
        return w

    counts = (
        app.stream("lines", value="string")
        .flat_map_values(split)
        .group_by(word, key="string")
        .count()
    )
    assert isinstance(counts, KTable)
    out = counts.to_stream()
    assert isinstance(out, KStream)
    out.to("word-counts")
    builds = engine.builds()
    assert [b.WhichOneof("operation") for b in builds] == ["stream", "flat_map_values", "group_by", "count", "to_stream", "to"]
    assert all(b.session_id == "sess-1" for b in builds)
    assert list(builds[0].stream.topics) == ["lines"] and builds[0].stream.value_serde == "string"
    assert builds[0].stream.key_serde == ""
    assert builds[1].flat_map_values.input == 1 and builds[1].flat_map_values.token == 1
    assert builds[2].group_by.token == 2 and builds[2].group_by.key_serde == "string"
    assert not builds[3].count.HasField("materialized")
    assert builds[5].to.topic == "word-counts" and builds[5].to.input == 5
    names = [r.name for r in engine.fake.requests("RegisterFunction", pb.RegisterFunctionRequest)]
    assert names == ["str.split", "test_word_count_builder_replays_one_build_per_operator.<locals>.word"]
    assert app._functions == {1: split, 2: word}
    assert app.describe().startswith("Topologies:")


def test_every_operator_and_its_options(engine: Engine) -> None:
    app = App("ops", engine=engine.fake.url)
    s = app.stream(["a", "b"], key="long", value="json", name="src")
    s2 = (
        s.map_values(str, value="string", name="mv")
        .filter(lambda k, v: True)
        .filter_not(lambda k, v: False, name="fn")
        .map(lambda k, v: (v, k), key="string", value="long")
        .select_key(lambda k, v: v, key="integer")
        .peek(print)
    )
    s2.foreach(print, name="each")
    g = s2.group_by_key(key="string", value="json", name="grp")
    assert isinstance(g, KGroupedStream)
    g.count(materialized="store-a")
    g.count(materialized=Materialized(key="string", value="long"), name="cnt")
    g.count(materialized=Materialized("store-b"))
    b = engine.builds()
    ops = [x.WhichOneof("operation") for x in b]
    assert ops == ["stream", "map_values", "filter", "filter_not", "map", "select_key", "peek", "foreach",
                   "group_by_key", "count", "count", "count"]
    assert list(b[0].stream.topics) == ["a", "b"] and b[0].stream.key_serde == "long" and b[0].stream.name == "src"
    assert b[1].map_values.value_serde == "string" and b[1].map_values.name == "mv"
    assert b[3].filter_not.name == "fn"
    assert b[4].map.key_serde == "string" and b[4].map.value_serde == "long"
    assert b[5].select_key.key_serde == "integer"
    assert b[7].foreach.name == "each"
    assert b[8].group_by_key.key_serde == "string" and b[8].group_by_key.value_serde == "json" and b[8].group_by_key.name == "grp"
    assert b[9].count.HasField("materialized") and b[9].count.materialized.store_name == "store-a"
    m = b[10].count
    assert m.HasField("materialized") and m.materialized.store_name == "" and m.materialized.key_serde == "string"
    assert m.materialized.value_serde == "long" and m.name == "cnt"
    assert b[11].count.materialized.store_name == "store-b"


def test_flat_map_with_key_mappers_to_stream_mapper_and_print_on_the_wire(engine: Engine, capsys: pytest.CaptureFixture[str]) -> None:
    app = App("more-ops", engine=engine.fake.url)
    s = app.stream("in", key="string", value="string")
    fm = s.flat_map(lambda k, v: [(v, k)], key="string", value="string", name="fm")
    mv = fm.map_values_with_key(lambda k, v: k, value="string")
    mv.flat_map_values_with_key(lambda k, v: [k, v], name="fmv")
    table = app.table("t", key="string", value="string")
    with pytest.raises(TypeError, match="no mapper was given"):
        table.to_stream(key="string")
    table.to_stream(lambda k, v: v, key="string", name="changes")
    fm.print()
    fm.print(label="lbl", mapper=lambda k, v: f"{k}={v}", name="show")
    b = engine.builds()
    ops = [x.WhichOneof("operation") for x in b]
    assert ops == ["stream", "flat_map", "map_values", "flat_map_values", "table", "to_stream", "select_key", "print", "print"]
    assert b[1].flat_map.key_serde == "string" and b[1].flat_map.value_serde == "string" and b[1].flat_map.name == "fm"
    assert b[2].map_values.with_key and b[2].map_values.input == b[1].flat_map.input + 1
    assert b[3].flat_map_values.with_key and b[3].flat_map_values.name == "fmv"
    assert b[5].to_stream.name == "changes" and b[6].select_key.key_serde == "string" and b[6].select_key.name == ""
    assert b[7].print.name == "" and b[8].print.name == "show"
    # The printers print where they run: the default label is the node the
    # stream comes from (the handle's node), None prints as null.
    app._functions[b[7].print.token]("k", None)
    app._functions[b[8].print.token]("k", "v")
    assert capsys.readouterr().out == "[N-flat_map]: k, null\n[lbl]: k=v\n"


def test_reduce_and_aggregate_builders(engine: Engine) -> None:
    app = App("folds", engine=engine.fake.url)
    g = app.stream("in", key="string", value="long").group_by_key()

    def longest(a: str, v: str) -> str:
        return a if len(a) >= len(v) else v

    def zero() -> int:
        return 0

    def add(k: str, v: dict[str, int], a: int) -> int:
        return a + v["amount"]

    t1 = g.reduce(longest)
    t2 = g.reduce("sum", materialized="sums", name="total")
    t3 = g.reduce("latest", materialized=Materialized(value="json"))
    t4 = g.aggregate(zero, add, materialized=Materialized("amounts", value="long"), name="agg")
    t5 = g.aggregate(zero, add)
    assert all(isinstance(t, KTable) for t in (t1, t2, t3, t4, t5))
    b = engine.builds()
    assert [x.WhichOneof("operation") for x in b] == [
        "stream", "group_by_key", "reduce", "reduce", "reduce", "aggregate", "aggregate"
    ]
    r1, r2, r3 = b[2].reduce, b[3].reduce, b[4].reduce
    assert r1.input == g.handle.id and r1.token == 1 and r1.builtin == pb.REDUCER_UNSPECIFIED
    assert not r1.HasField("materialized") and r1.name == ""
    assert r2.token == 0 and r2.builtin == pb.REDUCER_SUM and r2.name == "total"
    assert r2.HasField("materialized") and r2.materialized.store_name == "sums"
    assert r3.builtin == pb.REDUCER_LATEST and r3.materialized.value_serde == "json" and r3.materialized.store_name == ""
    a4, a5 = b[5].aggregate, b[6].aggregate
    assert (a4.initializer_token, a4.aggregator_token) == (2, 3)
    assert a4.materialized.store_name == "amounts" and a4.materialized.value_serde == "long" and a4.name == "agg"
    assert (a5.initializer_token, a5.aggregator_token) == (4, 5) and not a5.HasField("materialized")
    # Built-ins never cross: only the Python functions are registered.
    names = [r.name for r in engine.fake.requests("RegisterFunction", pb.RegisterFunctionRequest)]
    assert [n.rsplit(".", 1)[-1] for n in names] == ["longest", "zero", "add", "zero", "add"]
    assert app._functions == {1: longest, 2: zero, 3: add, 4: zero, 5: add}


def test_reduce_and_aggregate_bad_arguments(engine: Engine) -> None:
    app = App("folds", engine=engine.fake.url)
    g = app.stream("in").group_by_key()
    with pytest.raises(ValueError, match="'avg' is not a built-in reducer"):
        g.reduce("avg")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not callable"):
        g.reduce(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="materialized must be a str or Materialized"):
        g.aggregate(lambda: 0, lambda k, v, a: a, materialized=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="aggregator 7 is not callable"):
        g.aggregate(lambda: 0, 7)  # type: ignore[arg-type]
    assert "RegisterFunction" not in engine.fake.methods()
    # A refused aggregate forgets both of its functions.
    engine.fake.handlers["Build"] = lambda body: connect_error(
        "invalid_argument", 'Build(reduce): built-in reducer "sum" needs long or double values, but the grouped stream\'s values are bytes'
    )
    with pytest.raises(InvalidArgumentError, match="needs long or double values"):
        g.reduce("sum")
    with pytest.raises(InvalidArgumentError):
        g.aggregate(lambda: 0, lambda k, v, a: a)
    with pytest.raises(InvalidArgumentError):
        g.reduce(lambda a, v: a)
    assert app._functions == {}


def test_run_serves_fold_bundles(engine: Engine) -> None:
    app = App("fold-run", engine=engine.fake.url)
    app.stream("in", key="string", value="long").group_by_key().reduce(lambda a, v: a + v).to_stream().to("out")
    b = pb.Bundle(
        id=3,
        steps=[pb.Step(token=1, operation=pb.OPERATION_REDUCE, node="KSTREAM-REDUCE-0000000002")],
        key_serde="string", value_serde="long", output_key_serde="string", output_value_serde="long", aggregate_serde="long",
        key_lengths=[1], keys=b"k", group_sizes=[3], aggregate_lengths=[-1],
        value_lengths=[8, 8, 8], values=b"".join(v.to_bytes(8, "big") for v in (1, 2, 3)),
        topic="in", partition=0, offsets=[0, 1, 2], timestamps=[0, 0, 0],
    )
    engine.exchanges.put(pb.ExchangeResponse(state=pb.STATE_RUNNING, bundles=[b]))
    engine.exchanges.put(pb.ExchangeResponse(state=pb.STATE_STOPPED))
    app.run()
    (res,) = engine.exchange_requests[1].results
    assert res.bundle_id == 3 and list(res.output_counts) == [1, 1, 1]
    assert split_column(res.values, res.value_lengths, "long") == [1, 3, 6]


def test_builder_error_raises_at_once_with_the_engines_message(engine: Engine) -> None:
    app = App("bad", engine=engine.fake.url)
    s = app.stream("in")
    engine.fake.handlers["Build"] = lambda body: connect_error("invalid_argument", "Build(stream): unknown serde \"avro\"")
    with pytest.raises(InvalidArgumentError, match='unknown serde "avro"'):
        app.stream("in", value="avro")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        s.map_values(str.upper)
    assert 2 not in app._functions  # the function of a refused call is forgotten
    with pytest.raises(TypeError, match="not callable"):
        s.map_values("upper")  # type: ignore[arg-type]


def test_config_goes_on_the_wire_and_secrets_stay_hidden(engine: Engine) -> None:
    cfg = Config(
        processing_guarantee="exactly_once_v2",
        commit_interval_ms=100,
        extra={"sasl.password": "hunter2", "sasl.username": "u"},
    )
    assert "hunter2" not in repr(cfg) and "[hidden]" in repr(cfg)
    app = App("cfg", cfg, engine=engine.fake.url, brokers="k1:9092")
    req = engine.fake.requests("OpenSession", pb.OpenSessionRequest)[0]
    assert req.application_id == "cfg"
    assert dict(req.config) == {
        "processing.guarantee": "exactly_once_v2",
        "commit.interval.ms": "100",
        "sasl.password": "hunter2",
        "sasl.username": "u",
        "bootstrap.servers": "k1:9092",
    }
    assert app.config["sasl.password"] == "[hidden]"
    assert app.brokers == "k1:9092"
    assert "hunter2" not in repr(app)


def test_num_standby_replicas_is_kafka_streams_num_standby_replicas(engine: Engine) -> None:
    cfg = Config(num_standby_replicas=1, commit_interval_ms=100)
    assert cfg.properties() == {"num.standby.replicas": "1", "commit.interval.ms": "100"}
    assert "num_standby_replicas=1" in repr(cfg)
    assert "num.standby.replicas" not in Config().properties()  # unset: the engine's default, 0
    App("standby", cfg, engine=engine.fake.url)
    assert engine.fake.requests("OpenSession", pb.OpenSessionRequest)[0].config["num.standby.replicas"] == "1"


def test_max_task_idle_ms_is_kafka_streams_max_task_idle_ms(engine: Engine) -> None:
    cfg = Config(max_task_idle_ms=-1)
    assert cfg.properties() == {"max.task.idle.ms": "-1"}
    assert "max_task_idle_ms=-1" in repr(cfg)
    assert "max.task.idle.ms" not in Config().properties()  # unset: the engine's default, 0
    App("idle", cfg, engine=engine.fake.url)
    assert engine.fake.requests("OpenSession", pb.OpenSessionRequest)[0].config["max.task.idle.ms"] == "-1"


def test_host_health_reads_get_state(engine: Engine) -> None:
    app = App("health", engine=engine.fake.url)
    engine.fake.handlers["GetState"] = lambda body: pb.GetStateResponse(
        state=pb.STATE_RUNNING, bundles_waiting=3, host_idle_ms=7250, host_stalled=True
    )
    assert app.host_health() == HostHealth(bundles_waiting=3, idle_ms=7250, stalled=True)
    assert app.state() == "running"  # a stalled host leaves the state alone


def test_mapping_config(engine: Engine) -> None:
    App("m", {"commit.interval.ms": "5"}, engine=engine.fake.url)
    assert dict(engine.fake.requests("OpenSession", pb.OpenSessionRequest)[0].config) == {"commit.interval.ms": "5"}


def test_engine_url_from_environment(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYSTREAMS_URL", engine.fake.url)
    app = App("env")
    assert app.engine_url == engine.fake.url


def _wordcount_app(engine: Engine) -> App:
    app = App("wc", engine=engine.fake.url)
    app.stream("lines", value="string").flat_map_values(str.split).group_by(lambda k, w: w, key="string").count()
    return app


def test_run_serves_bundles_and_returns_results(engine: Engine) -> None:
    app = _wordcount_app(engine)
    b = make_bundle([(pb.OPERATION_FLAT_MAP_VALUES, 1), (pb.OPERATION_SELECT_KEY, 2)], ["a b", "c"], bundle_id=11)
    engine.exchanges.put(pb.ExchangeResponse(state=pb.STATE_RUNNING, bundles=[b]))
    engine.exchanges.put(pb.ExchangeResponse(state=pb.STATE_RUNNING))
    engine.exchanges.put(pb.ExchangeResponse(state=pb.STATE_STOPPED))
    app.run()
    reqs = engine.exchange_requests
    assert reqs[0].max_bundles == 8 and reqs[0].wait_ms == 500 and reqs[0].session_id == "sess-1"
    assert reqs[0].worker_id and all(r.worker_id == reqs[0].worker_id for r in reqs)
    assert len(reqs[0].results) == 0
    (res,) = reqs[1].results
    assert res.bundle_id == 11 and list(res.output_counts) == [2, 1]
    assert split_column(res.keys, res.key_lengths, "string") == ["a", "b", "c"]
    assert len(reqs[2].results) == 0
    assert engine.fake.methods().count("Start") == 1
    assert "Stop" in engine.fake.methods()


def test_run_raises_processing_error_on_state_error(engine: Engine) -> None:
    app = _wordcount_app(engine)
    text = "engine: record at lines/3@1842 failed in node KSTREAM-FLATMAPVALUES-0000000001: ValueError: bad"
    engine.exchanges.put(pb.ExchangeResponse(state=pb.STATE_ERROR, error=text))
    with pytest.raises(ProcessingError) as info:
        app.run()
    e = info.value
    assert e.message == text
    assert (e.topic, e.partition, e.offset, e.node) == ("lines", 3, 1842, "KSTREAM-FLATMAPVALUES-0000000001")
    assert engine.fake.methods()[-1] == "Stop"


def test_processing_error_takes_the_structured_record_context(engine: Engine) -> None:
    app = _wordcount_app(engine)
    # The text does not follow the engine's usual form: the fields must come
    # from failed_record, not from parsing.
    ctx = pb.RecordContext(topic="orders", partition=7, offset=99, node="KSTREAM-MAP-0000000004")
    engine.exchanges.put(pb.ExchangeResponse(state=pb.STATE_ERROR, error="something failed", failed_record=ctx))
    with pytest.raises(ProcessingError) as info:
        app.run()
    e = info.value
    assert e.message == "something failed"
    assert (e.topic, e.partition, e.offset, e.node) == ("orders", 7, 99, "KSTREAM-MAP-0000000004")


def test_stop_from_another_thread_delivers_results_then_stops(engine: Engine) -> None:
    app = _wordcount_app(engine)
    done: list[BaseException | None] = []

    def serve() -> None:
        try:
            app.run()
            done.append(None)
        except BaseException as e:
            done.append(e)

    t = threading.Thread(target=serve)
    t.start()
    b = make_bundle([(pb.OPERATION_FLAT_MAP_VALUES, 1), (pb.OPERATION_SELECT_KEY, 2)], ["x"], bundle_id=5)
    engine.exchanges.put(pb.ExchangeResponse(state=pb.STATE_RUNNING, bundles=[b]))
    deadline = time.monotonic() + 5
    while not any(len(r.results) for r in engine.exchange_requests) and time.monotonic() < deadline:
        time.sleep(0.01)
    app.stop()
    t.join(5)
    assert not t.is_alive() and done == [None]
    last = engine.exchange_requests[-1]
    assert last.max_bundles == 0  # the final call only delivers
    assert engine.fake.methods()[-1] == "Stop"
    assert engine.fake.methods().count("Stop") == 1
    app.stop()  # idempotent
    app.close()
    assert engine.fake.methods().count("Stop") == 1


def test_results_held_when_stop_is_asked_are_delivered(engine: Engine) -> None:
    app = _wordcount_app(engine)
    b = make_bundle([(pb.OPERATION_FLAT_MAP_VALUES, 1), (pb.OPERATION_SELECT_KEY, 2)], ["y z"], bundle_id=9)

    def exchange(body: bytes) -> Any:
        req = pb.ExchangeRequest.FromString(body)
        engine.exchange_requests.append(req)
        if len(engine.exchange_requests) == 1:
            app.stop()  # arrives while the bundle is about to be processed
            return pb.ExchangeResponse(state=pb.STATE_RUNNING, bundles=[b])
        return pb.ExchangeResponse(state=pb.STATE_RUNNING)

    engine.fake.handlers["Exchange"] = exchange
    app.run()
    assert [len(r.results) for r in engine.exchange_requests] == [0, 1]
    assert engine.exchange_requests[1].results[0].bundle_id == 9


def test_builder_after_start_and_run_after_stop(engine: Engine) -> None:
    app = _wordcount_app(engine)
    app.start()
    engine.fake.handlers["Build"] = lambda body: connect_error(
        "failed_precondition", "Build(stream): the topology is started; builder calls are refused after Start"
    )
    with pytest.raises(FailedPreconditionError, match="after Start"):
        app.stream("more")
    app.stop()
    app.run()  # returns at once: stop() came first
    assert "Exchange" not in engine.fake.methods()
    app.close()
    with pytest.raises(FailedPreconditionError, match="closed"):
        app.run()


def test_run_returns_quietly_if_the_session_disappears_while_stopping(engine: Engine) -> None:
    app = _wordcount_app(engine)

    def exchange(body: bytes) -> Any:
        app._stop_requested.set()
        engine.stopped = True
        return connect_error("not_found", "Exchange: session gone", 404)

    engine.fake.handlers["Exchange"] = exchange
    app.run()  # no exception


def test_context_manager_stops_the_session(engine: Engine) -> None:
    with App("ctx", engine=engine.fake.url) as app:
        app.stream("in")
    assert engine.fake.methods()[-1] == "Stop"


def test_state(engine: Engine) -> None:
    app = App("st", engine=engine.fake.url)
    engine.default_state = pb.STATE_REBALANCING
    assert app.state() == "rebalancing"


SERVE_SCRIPT = """
import sys
sys.path.insert(0, {src!r})
from polystreams import App
app = App("sig", engine={url!r})
app.stream("in", value="string").map_values(str.upper).to("out")
print("serving", flush=True)
app.run()
print("returned", flush=True)
"""


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_signal_stops_run_cleanly(engine: Engine, sig: str) -> None:
    import signal
    import subprocess
    import sys
    from pathlib import Path

    src = str(Path(__file__).parent.parent / "src")
    script = SERVE_SCRIPT.format(src=src, url=engine.fake.url)
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        assert p.stdout.readline().strip() == "serving"
        deadline = time.monotonic() + 10
        while not engine.exchange_requests and time.monotonic() < deadline:
            time.sleep(0.01)
        assert engine.exchange_requests, "run() never called Exchange"
        p.send_signal(getattr(signal, sig))
        out, err = p.communicate(timeout=10)
    finally:
        p.kill()
    assert p.returncode == 0, err
    assert "Traceback" not in err
    assert out.strip() == "returned"
    assert engine.fake.methods()[-1] == "Stop"


def test_slow_bundles_deliver_results_early(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    import polystreams.app

    monkeypatch.setattr(polystreams.app, "DELIVER_AFTER_S", 0.0)
    app = _wordcount_app(engine)
    bundles = [
        make_bundle([(pb.OPERATION_FLAT_MAP_VALUES, 1), (pb.OPERATION_SELECT_KEY, 2)], ["a"], bundle_id=i) for i in (1, 2)
    ]
    engine.exchanges.put(pb.ExchangeResponse(state=pb.STATE_RUNNING, bundles=bundles))
    engine.exchanges.put(pb.ExchangeResponse(state=pb.STATE_RUNNING))
    engine.exchanges.put(pb.ExchangeResponse(state=pb.STATE_RUNNING))
    engine.exchanges.put(pb.ExchangeResponse(state=pb.STATE_STOPPED))
    app.run()
    reqs = engine.exchange_requests
    assert [[r.bundle_id for r in q.results] for q in reqs] == [[], [1], [2], []]
    assert [q.max_bundles for q in reqs] == [8, 0, 0, 8]


def test_table_group_by_mapper_may_return_no_pair(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """KTableRepartitionMap skips a row whose mapper returns null: the
    registered function sends it as a pair with a None key and value, which
    the engine skips; a pair passes unchanged; the name is the user's."""
    monkeypatch.setitem(KIND_OF, "group_by", pb.KIND_GROUPED_TABLE)
    app = App("regroup", engine=engine.fake.url)

    def region(key: Any, row: dict[str, Any]) -> tuple[Any, Any] | None:
        return (row["region"], row) if "region" in row else None

    app.table("accounts", key="string", value="json").group_by(region).count()
    names = [r.name for r in engine.fake.requests("RegisterFunction", pb.RegisterFunctionRequest)]
    assert names == ["test_table_group_by_mapper_may_return_no_pair.<locals>.region"]
    registered = app._functions[engine.builds()[1].group_by.token]
    assert registered("a1", {"region": "eu"}) == ("eu", {"region": "eu"})
    assert registered("a2", {}) == (None, None)


def test_a_processor_bundle_reads_through_the_read_rpc_of_its_session(engine: Engine) -> None:
    from polystreams import Processor, ProcessorContext, Record, Stores

    class Count(Processor):
        def init(self, context: ProcessorContext) -> None:
            self.ctx = context
            self.store = context.get_state_store("counts")

        def process(self, record: Record) -> None:  # type: ignore[type-arg]
            n = (self.store.get(record.key) or 0) + 1
            self.store.put(record.key, n)
            self.ctx.forward(record.with_value(str(n)))

    reads: list[pb.ReadRequest] = []

    def read(body: bytes) -> pb.ReadResponse:
        reads.append(pb.ReadRequest.FromString(body))
        return pb.ReadResponse(key_lengths=[1], keys=b"a", value_lengths=[8], values=(41).to_bytes(8, "big"))

    engine.fake.handlers["Read"] = read
    app = App("proc", engine=engine.fake.url)
    app.add_state_store(Stores.key_value_store("counts", key="string", value="long"))
    app.stream("in", key="string", value="string").process(Count, stores=["counts"], name="count").to("out")
    builds = engine.builds()
    assert [b.WhichOneof("operation") for b in builds] == ["add_state_store", "stream", "process", "to"]
    assert builds[0].add_state_store.name == "counts" and builds[0].add_state_store.type == pb.STORE_TYPE_KEY_VALUE
    assert list(builds[2].process.stores) == ["counts"] and builds[2].process.name == "count"
    (opened,) = engine.fake.requests("OpenSession", pb.OpenSessionRequest)
    assert {"processors", "metadata"} <= set(opened.host_features)

    b = make_bundle([(pb.OPERATION_PROCESS, builds[2].process.token)], ["x", "y"], ["a", "a"], bundle_id=21)
    b.steps[0].stores.append("counts")
    b.steps[0].children.append("sink")
    b.task = "0_0"
    b.inits.append(pb.BundleEntry(kind=pb.BundleEntry.KIND_INIT, step=0))
    b.stores.append(pb.StoreView(store="counts", key_serde="string", value_serde="long", type=pb.STORE_TYPE_KEY_VALUE))
    engine.exchanges.put(pb.ExchangeResponse(state=pb.STATE_RUNNING, bundles=[b]))
    engine.exchanges.put(pb.ExchangeResponse(state=pb.STATE_RUNNING))
    engine.exchanges.put(pb.ExchangeResponse(state=pb.STATE_STOPPED))
    app.run()
    (r,) = reads  # a is read once; the second record reads the first's write
    assert (r.session_id, r.bundle_id, r.store, r.get) == ("sess-1", 21, "counts", b"a")
    (res,) = engine.exchange_requests[1].results
    assert not res.failures
    assert list(res.op_counts) == [0, 2, 2]
    assert res.op_values == (42).to_bytes(8, "big") + b"42" + (43).to_bytes(8, "big") + b"43"
