"""Windowed aggregations: window specs, windowed keys, suppress, session
merges in the fold executor, window store queries and dropped records."""

from __future__ import annotations

import datetime
import struct
from typing import Any

import pytest
from helpers import FakeEngine, column, connect_error, make_bundle, split_column
from test_app import Engine
from test_fold import AGGREGATE, NONE, REDUCE, Calls, fold_bundle, outputs, run

from polystreams import (
    App,
    BufferConfig,
    EmitStrategy,
    Handle,
    InvalidArgumentError,
    KTable,
    Materialized,
    PolystreamsError,
    SessionWindowedKStream,
    SessionWindows,
    SlidingWindows,
    Suppressed,
    TimeWindowedKStream,
    TimeWindows,
    Windowed,
    WindowStore,
    serde,
)
from polystreams.v1alpha1 import engine_pb2 as pb

MINUTE = datetime.timedelta(minutes=1)


# Window specs.


def test_time_windows_take_timedeltas_or_milliseconds() -> None:
    assert TimeWindows.of_size_with_no_grace(MINUTE) == TimeWindows(60_000, 60_000, 0)
    assert TimeWindows.of_size_and_grace(60_000, datetime.timedelta(seconds=5)) == TimeWindows(60_000, 60_000, 5_000)
    assert TimeWindows.of_size_with_no_grace(MINUTE).advance_by(datetime.timedelta(seconds=5)) == TimeWindows(60_000, 5_000, 0)
    assert SlidingWindows.of_time_difference_with_no_grace(10) == SlidingWindows(10, 0)
    assert SlidingWindows.of_time_difference_and_grace(10, 2) == SlidingWindows(10, 2)
    assert SessionWindows.of_inactivity_gap_with_no_grace(MINUTE) == SessionWindows(60_000, 0)
    assert SessionWindows.of_inactivity_gap_and_grace(5, 1) == SessionWindows(5, 1)
    # Values are the engine's to check; types are checked here.
    assert TimeWindows.of_size_with_no_grace(0).size_ms == 0
    with pytest.raises(TypeError, match="TimeWindows.of_size_with_no_grace: size: want a timedelta or int milliseconds, got float"):
        TimeWindows.of_size_with_no_grace(1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got bool"):
        SessionWindows.of_inactivity_gap_with_no_grace(True)


def test_suppressed() -> None:
    assert Suppressed.until_window_closes() == Suppressed("")
    assert Suppressed.until_window_closes(name="final").name == "final"
    with pytest.raises(TypeError):
        Suppressed.until_window_closes(name=3)  # type: ignore[arg-type]


def test_suppressed_until_time_limit_and_buffer_config() -> None:
    s = Suppressed.until_time_limit(datetime.timedelta(seconds=2), BufferConfig(max_records=10, max_bytes=1 << 20), name="held")
    op = s._pb(7)
    assert op.input == 7 and op.name == "held" and op.time_limit_ms == 2000
    assert op.buffer.max_records == 10 and op.buffer.max_bytes == 1 << 20
    assert op.buffer.when_full == pb.BUFFER_FULL_EMIT_EARLY
    strict = Suppressed.until_window_closes(BufferConfig(max_bytes=100, when_full="shut_down"))._pb(1)
    assert not strict.HasField("time_limit_ms") and not strict.buffer.HasField("max_records")
    assert strict.buffer.max_bytes == 100 and strict.buffer.when_full == pb.BUFFER_FULL_SHUT_DOWN
    # Unbounded sends no buffer: the engine's default.
    assert not Suppressed.until_time_limit(0, BufferConfig.unbounded())._pb(1).HasField("buffer")
    with pytest.raises(ValueError):
        BufferConfig(max_records=1, when_full="drop")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        BufferConfig(max_records="1")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Suppressed.until_time_limit(5, buffer=3)  # type: ignore[arg-type]


# Windowed keys, byte for byte as Kafka Streams' windowed serdes.


def test_time_windowed_key_is_inner_key_then_start() -> None:
    name = "windowed(string,60000)"
    w = Windowed("a", 120_000, 180_000)
    b = serde.encode(name, w)
    assert b == b"a" + struct.pack(">q", 120_000)  # TimeWindowedSerializer: key ‖ start
    assert serde.decode(name, b) == w  # the end is start + size
    assert serde.decode("windowed(long,10)", struct.pack(">qq", 7, 20)) == Windowed(7, 20, 30)
    assert serde.windowed_codec(name) and not serde.windowed_codec("string") and not serde.windowed_codec("windowed(nope,1)")


def test_session_windowed_key_is_inner_key_then_end_then_start() -> None:
    name = "session-windowed(string)"
    w = Windowed("user", 1_000, 5_000)
    b = serde.encode(name, w)
    assert b == b"user" + struct.pack(">qq", 5_000, 1_000)  # SessionKeySchema: key ‖ end ‖ start
    assert serde.decode(name, b) == w


def test_windowed_columns_and_errors() -> None:
    name = "windowed(string,10)"
    keys = [Windowed("a", 0, 10), None, Windowed("bé", 20, 30)]
    data, lengths, failures = serde.encode_column(name, keys)
    assert not failures and lengths == [9, -1, 11]
    assert split_column(data, lengths, name) == keys
    _, _, failures = serde.encode_column(name, ["a"])
    assert failures == {0: "TypeError: windowed(string,10) serde: want a Windowed key, got str"}
    items, failures = serde.decode_column(name, b"abc", [3])
    assert items == [None] and failures == {0: "ValueError: windowed(string,10) serde: want at least 8 bytes, got 3"}
    with pytest.raises(ValueError, match="unknown serde 'windowed"):
        serde.decode("windowed(string)", b"")


def test_functions_after_to_stream_see_windowed_keys_and_may_make_them() -> None:
    """A chain after a windowed table's to_stream() decodes its keys to
    Windowed, and a map may return Windowed keys, encoded as Kafka's bytes."""
    name = "windowed(string,10)"
    seen: list[tuple[Any, Any]] = []
    keep = Calls(lambda k, v: seen.append((k, v)) or k.start >= 10)
    shift = Calls(lambda k, v: (Windowed(k.key.upper(), k.start + 10, k.end + 10), v))
    keys = [Windowed("a", 0, 10), Windowed("a", 10, 20), Windowed("b", 20, 30)]
    b = make_bundle([(pb.OPERATION_FILTER, 1), (pb.OPERATION_MAP, 2)], [1, 2, 3], keys, key_serde=name, value_serde="long")
    r = run({1: keep, 2: shift}, b)
    assert not r.failures and list(r.output_counts) == [0, 1, 1]
    assert seen == [(Windowed("a", 0, 10), 1), (Windowed("a", 10, 20), 2), (Windowed("b", 20, 30), 3)]
    assert split_column(r.keys, r.key_lengths, name) == [Windowed("A", 20, 30), Windowed("B", 30, 40)]
    assert r.keys[:9] == b"A" + struct.pack(">q", 20)


# The builder.


class WindowEngine(Engine):
    """Answers windowed builds with windowed handles."""

    windowed_kinds: dict[int, int]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.windowed_kinds = {}

    KINDS = {
        "stream": pb.KIND_STREAM,
        "group_by_key": pb.KIND_GROUPED_STREAM,
        "to_stream": pb.KIND_STREAM,
        "count": pb.KIND_TABLE,
        "reduce": pb.KIND_TABLE,
        "aggregate": pb.KIND_TABLE,
        "suppress": pb.KIND_TABLE,
        "to_table": pb.KIND_TABLE,
    }

    def build(self, body: bytes) -> Any:
        req = pb.BuildRequest.FromString(body)
        op = req.WhichOneof("operation")
        if op in ("to", "foreach"):
            return pb.BuildResponse()
        if op == "windowed_by":
            w = req.windowed_by
            if w.HasField("time") and w.time.size_ms <= 0:
                return connect_error("invalid_argument", f"topology: windowed_by: size_ms {w.time.size_ms} must be > 0")
            kind = pb.KIND_SESSION_WINDOWED_STREAM if w.HasField("session") else pb.KIND_WINDOWED_STREAM
            self.windowed_kinds[self.next_handle + 1] = kind
        elif op == "emit_strategy":
            kind = self.windowed_kinds[req.emit_strategy.input]
        else:
            kind = self.KINDS[op]
        self.next_handle += 1
        key = "windowed(string,60000)" if kind == pb.KIND_TABLE else "string"
        store = "wcounts" if op in ("count", "reduce", "aggregate") else ""
        return pb.BuildResponse(
            handle=pb.Handle(id=self.next_handle, kind=kind, key_serde=key, value_serde="long", node=f"N-{op}", store=store)
        )


@pytest.fixture
def engine(fake_engine: FakeEngine) -> WindowEngine:
    return WindowEngine(fake_engine)


def test_windowed_by_and_its_aggregations_on_the_wire(engine: WindowEngine) -> None:
    app = App("w", engine=engine.fake.url)
    g = app.stream("in", key="string", value="long").group_by_key()
    tw = g.windowed_by(TimeWindows.of_size_and_grace(MINUTE, 5_000).advance_by(10_000))
    sw = g.windowed_by(SlidingWindows.of_time_difference_with_no_grace(30_000))
    ss = g.windowed_by(SessionWindows.of_inactivity_gap_and_grace(MINUTE, 0))
    assert isinstance(tw, TimeWindowedKStream) and isinstance(sw, TimeWindowedKStream)
    assert isinstance(ss, SessionWindowedKStream)
    assert tw.handle.kind == "windowed_stream" and ss.handle.kind == "session_windowed_stream"

    def zero() -> int:
        return 0

    def add(k: str, v: int, a: int) -> int:
        return a + v

    def merge(k: str, a: int, b: int) -> int:
        return a + b

    c = tw.count(materialized=Materialized("wcounts", retention=datetime.timedelta(hours=1)))
    r = sw.reduce("sum", name="sums")
    a = ss.aggregate(zero, add, merge, materialized=Materialized(value="long"))
    s = c.suppress(Suppressed.until_window_closes(name="final"))
    assert all(isinstance(t, KTable) for t in (c, r, a, s))
    b = engine.builds()
    ops = [x.WhichOneof("operation") for x in b]
    assert ops == ["stream", "group_by_key", "windowed_by", "windowed_by", "windowed_by", "count", "reduce", "aggregate", "suppress"]
    assert b[2].windowed_by.input == g.handle.id
    assert b[2].windowed_by.WhichOneof("windows") == "time"
    assert (b[2].windowed_by.time.size_ms, b[2].windowed_by.time.advance_ms, b[2].windowed_by.time.grace_ms) == (60_000, 10_000, 5_000)
    assert b[3].windowed_by.sliding.time_difference_ms == 30_000 and b[3].windowed_by.sliding.grace_ms == 0
    assert b[4].windowed_by.session.inactivity_gap_ms == 60_000
    assert b[5].count.input == tw.handle.id
    assert b[5].count.materialized.store_name == "wcounts" and b[5].count.materialized.retention_ms == 3_600_000
    assert b[6].reduce.builtin == pb.REDUCER_SUM and b[6].reduce.name == "sums"
    agg = b[7].aggregate
    assert (agg.initializer_token, agg.aggregator_token, agg.merger_token) == (1, 2, 3)
    assert app._functions == {1: zero, 2: add, 3: merge}
    assert b[8].suppress.input == c.handle.id and b[8].suppress.name == "final"
    assert c.handle.key_serde == "windowed(string,60000)"


def test_the_engines_refusal_reaches_the_user_unchanged(engine: WindowEngine) -> None:
    app = App("w", engine=engine.fake.url)
    g = app.stream("in", key="string").group_by_key()
    with pytest.raises(InvalidArgumentError) as e:
        g.windowed_by(TimeWindows.of_size_with_no_grace(0))
    assert e.value.message == "topology: windowed_by: size_ms 0 must be > 0"
    with pytest.raises(TypeError, match="want TimeWindows, SlidingWindows or SessionWindows, not int"):
        g.windowed_by(60_000)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="suppress: want a Suppressed"):
        g.count().suppress("until_window_closes")  # type: ignore[arg-type]
    # A refused aggregate forgets the functions registered for it, merger included.
    engine.fake.handlers["Build"] = lambda b: connect_error("invalid_argument", "topology: aggregate: no")
    ss = SessionWindowedKStream(app, Handle(99, "session_windowed_stream", "string", "long", "N"))
    with pytest.raises(InvalidArgumentError):
        ss.aggregate(lambda: 0, lambda k, v, a: a, lambda k, a, b: a)
    assert app._functions == {}


# Session merges in the fold executor.


def test_value_refs_fold_each_record_into_every_window_it_is_in() -> None:
    """fold_value_refs: the bundle holds each record once; fold value i is
    record value_refs[i]; outputs and failures index fold values."""
    agg = Calls(lambda k, v, a: a + v)
    # Records 5, 7 (bad: raises), 1; windows w0: [5, 7], w1: [5, 7, 1] (groups keyed "a").
    b = fold_bundle(AGGREGATE, [("a", NONE, [0, 0]), ("a", 100, [0, 0, 0])], token=2, initializer_token=1)
    vdata, vlens = column("long", [5, 7, 1])
    b.values, b.value_lengths[:] = vdata, vlens
    b.value_refs.extend([0, 1, 0, 1, 2])

    def add(k: str, v: int, a: int) -> int:
        if v == 7:
            raise ValueError("seven")
        return int(agg(k, v, a))

    r = run({1: lambda: 0, 2: add}, b)
    assert list(r.output_counts) == [1, 0, 1, 0, 1]
    assert outputs(r) == [5, 105, 106]
    assert [(f.index, f.message) for f in r.failures] == [(1, "ValueError: seven"), (3, "ValueError: seven")]
    b.value_refs[:] = [0, 1, 0, 1, 3]
    r = run({1: lambda: 0, 2: add}, b)
    assert list(r.output_counts) == [0] * 5 and "value refs from 0 to 3 for 3 records" in r.failures[0].message


def test_the_host_offers_fold_value_refs_at_open_session(engine: WindowEngine) -> None:
    App("w", engine=engine.fake.url)
    (req,) = engine.fake.requests("OpenSession", pb.OpenSessionRequest)
    assert list(req.host_features) == ["fold_value_refs", "fold_programs", "processors", "metadata"]


def program(
    groups: list[tuple[str, list[tuple[int, list[int], Any]]]],
    pool: list[Any],
    values: list[Any],
    *,
    operation: Any = AGGREGATE,
    serde_name: str = "long",
    merger_token: int = 3,
) -> pb.Bundle:
    """A fold program: groups [(key, [(base, merge refs, record index)])] over
    records ``values``, with stored aggregates ``pool``."""
    b = fold_bundle(operation, [(k, NONE, [0] * len(ops)) for k, ops in groups], token=2, initializer_token=1, value_serde=serde_name)
    b.steps[0].merger_token = merger_token if operation == AGGREGATE else 0
    vdata, vlens = column(serde_name, values)
    b.values, b.value_lengths[:] = vdata, vlens
    adata, alens = column(serde_name, pool)
    b.aggregates, b.aggregate_lengths[:] = adata, alens
    ops = [op for _, g in groups for op in g]
    b.value_refs.extend(j for _, _, j in ops)
    b.fold_bases.extend(base for base, _, _ in ops)
    b.merge_counts.extend(len(m) for _, m, _ in ops)
    b.merge_refs.extend(r for _, m, _ in ops for r in m)
    b.offsets[:] = list(range(len(values)))
    b.timestamps[:] = [0] * len(values)
    return b


def test_a_bridging_record_merges_sessions_into_the_initializers_aggregate() -> None:
    """KStreamSessionWindowAggregate: agg = initializer(); each session the
    record joins is merged in, merger(key, agg, session); then the value is
    added. Here: a's stored sessions 10 and 5 are bridged by record 1; then
    record 2 joins the merged session (output ref 2 + 0 = value 0)."""
    merger = Calls(lambda k, x, y: x + y)
    agg = Calls(lambda k, v, a: a + v)
    b = program([("a", [(-1, [0, 1], 0), (-1, [2], 1)]), ("b", [(-1, [], 2)])], [10, 5], [1, 2, 7])
    r = run({1: lambda: 0, 2: agg, 3: merger}, b)
    assert list(r.output_counts) == [1, 1, 1] and not r.failures
    assert outputs(r) == [16, 18, 7]
    assert merger.calls == [("a", 0, 10), ("a", 10, 5), ("a", 0, 16)]
    assert agg.calls == [("a", 1, 15), ("a", 2, 16), ("b", 7, 0)]


def test_sliding_folds_start_from_stored_windows_and_earlier_outputs() -> None:
    """A sliding window's fold starts from a stored window's aggregate (a
    copy for a new left window) or from an earlier fold's output; each
    reference is decoded afresh, so in-place changes do not leak."""

    def add(k: str, v: list[int], a: list[int]) -> list[int]:
        a.append(v[0])  # in place
        return a

    pool = [[1]]
    b = program([("k", [(0, [], 0), (0, [], 1), (1, [], 1)])], pool, [[5], [6]], serde_name="json", merger_token=0)
    r = run({1: lambda: [], 2: add}, b)
    assert outputs(r, "json") == [[1, 5], [1, 6], [1, 5, 6]]


def test_reduce_programs_merge_with_the_reducer() -> None:
    """Session reduce: Kafka Streams' merger is the reducer, a missing side
    taking the other; a missing base (-1) is none, and the value becomes the
    aggregate without a call."""
    red = Calls(lambda x, y: x + y)
    b = program([("a", [(-1, [], 0), (-1, [0, 1], 1)])], [4], [3, 2], operation=REDUCE)
    r = run({2: red}, b)
    assert outputs(r) == [3, 9]
    assert red.calls == [(4, 3), (7, 2)]


def test_a_failed_fold_fails_the_folds_that_depend_on_it() -> None:
    def add(k: str, v: int, a: int) -> int:
        if v == 0:
            raise ValueError("zero")
        return a + v

    b = program([("a", [(-1, [], 0), (0, [], 1), (-1, [], 1)]), ("b", [(-1, [], 1)])], [], [0, 2])
    r = run({1: lambda: 0, 2: add, 3: lambda k, x, y: x + y}, b)
    assert list(r.output_counts) == [0, 0, 1, 1]
    assert outputs(r) == [2, 2]
    assert [(f.index, f.message) for f in r.failures] == [(0, "ValueError: zero"), (1, "ValueError: depends on fold value 0, which failed")]


def test_malformed_programs_fail_every_value() -> None:
    fns = {1: lambda: 0, 2: lambda k, v, a: a + v, 3: lambda k, x, y: x + y}
    forward = program([("a", [(1, [], 0), (-1, [], 0)])], [], [1])
    r = run(fns, forward)
    assert list(r.output_counts) == [0, 0] and "value 0 refers to 1" in r.failures[0].message
    init_merge = program([("a", [(-1, [-1], 0)])], [], [1])
    assert "merges in the initializer" in run(fns, init_merge).failures[0].message
    counts = program([("a", [(-1, [], 0)])], [], [1])
    counts.merge_counts.append(0)
    assert "malformed fold program: 1 bases and 2 merge counts" in run(fns, counts).failures[0].message
    no_merger = program([("a", [(-1, [], 0)])], [], [1])
    assert "merger token 3, which is not registered" in run({1: fns[1], 2: fns[2]}, no_merger).failures[0].message


# Window store queries and dropped records.


class FakeWindowStore:
    """A window store behind the fake engine's Query: windowed(string,10) keys, long values."""

    def __init__(self, engine: Engine, rows: list[tuple[str, int, int]]) -> None:
        self.rows = rows  # (key, start, value)
        self.requests: list[pb.QueryRequest] = []
        self.truncate = False
        engine.fake.handlers["Query"] = self.query

    def query(self, body: bytes) -> Any:
        req = pb.QueryRequest.FromString(body)
        self.requests.append(req)
        if req.WhichOneof("query") != "window_fetch":
            return connect_error("invalid_argument", "Query: not a window query")
        w = req.window_fetch
        rows = [r for r in self.rows if w.from_ms <= r[1] <= w.to_ms and (not w.HasField("key") or r[0].encode() == w.key)]
        rows = rows[: req.limit]
        kd, kl = column("windowed(string,10)", [Windowed(k, s, s + 10) for k, s, _ in rows])
        vd, vl = column("long", [v for _, _, v in rows])
        return pb.QueryResponse(
            key_lengths=kl, keys=kd, value_lengths=vl, values=vd, key_serde="windowed(string,10)", value_serde="long",
            truncated=self.truncate,
        )


def test_window_store_fetch_and_fetch_all(engine: WindowEngine) -> None:
    fake = FakeWindowStore(engine, [("a", 0, 1), ("b", 0, 2), ("a", 10, 3), ("a", 20, 4)])
    app = App("w", engine=engine.fake.url)
    s = app.window_store("wcounts")
    assert isinstance(s, WindowStore) and s.key_serde == "windowed(string,10)"
    assert s.fetch("a", 0, 10) == [(Windowed("a", 0, 10), 1), (Windowed("a", 10, 20), 3)]
    req = fake.requests[-1]
    assert req.store == "wcounts" and req.session_id == "sess-1"
    assert req.window_fetch.key == b"a" and (req.window_fetch.from_ms, req.window_fetch.to_ms) == (0, 10)
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    assert s.fetch_all(epoch, epoch + datetime.timedelta(milliseconds=5)) == [
        (Windowed("a", 0, 10), 1),
        (Windowed("b", 0, 10), 2),
    ]
    assert not fake.requests[-1].window_fetch.HasField("key")
    with pytest.raises(TypeError, match="timezone-aware"):
        s.fetch_all(datetime.datetime(1970, 1, 1), 5)
    fake.truncate = True
    with pytest.raises(PolystreamsError, match="more than 100000 windows"):
        s.fetch_all(0, 100)


def test_table_window_store_uses_the_handles_key_serde(engine: WindowEngine) -> None:
    fake = FakeWindowStore(engine, [("a", 0, 1)])
    app = App("w", engine=engine.fake.url)
    t = app.stream("in", key="string").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(10)).count()
    s = t.window_store()
    assert s.name == "wcounts" and s.key_serde == "windowed(string,60000)"
    assert not fake.requests  # known from the handle
    with pytest.raises(TypeError, match="windowed aggregation's table: query it with window_store"):
        t.query()


def test_dropped_records(engine: WindowEngine) -> None:
    engine.fake.handlers["GetState"] = lambda b: pb.GetStateResponse(state=pb.STATE_RUNNING, dropped_records=3)
    app = App("w", engine=engine.fake.url)
    assert app.dropped_records() == 3


def test_join_windows() -> None:
    from datetime import timedelta

    from polystreams import JoinWindows

    w = JoinWindows.of_time_difference_and_grace(timedelta(seconds=5), 100)
    assert (w.before_ms, w.after_ms, w.grace_ms) == (5000, 5000, 100)
    w = JoinWindows.of_time_difference_with_no_grace(10).before(0).after(timedelta(milliseconds=30))
    assert (w.before_ms, w.after_ms, w.grace_ms) == (0, 30, 0)
    assert w._pb().after_ms == 30
    import pytest

    with pytest.raises(TypeError, match="JoinWindows.before: time_difference"):
        w.before("1s")  # type: ignore[arg-type]


def test_emit_strategy_and_to_table_on_the_wire(engine: WindowEngine) -> None:
    app = App("w", engine=engine.fake.url)
    s = app.stream("in", key="string", value="long")
    g = s.group_by_key()
    tw = g.windowed_by(TimeWindows.of_size_with_no_grace(MINUTE)).emit_strategy(EmitStrategy.on_window_close())
    ss = g.windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(MINUTE)).emit_strategy(EmitStrategy.on_window_update())
    assert isinstance(tw, TimeWindowedKStream) and isinstance(ss, SessionWindowedKStream)
    t = s.to_table(materialized=Materialized("latest"), name="as-table")
    assert isinstance(t, KTable)
    b = engine.builds()
    assert [x.WhichOneof("operation") for x in b] == [
        "stream", "group_by_key", "windowed_by", "emit_strategy", "windowed_by", "emit_strategy", "to_table"]
    assert b[3].emit_strategy.input == tw.handle.id - 1 and b[3].emit_strategy.strategy == pb.EMIT_STRATEGY_ON_WINDOW_CLOSE
    assert b[5].emit_strategy.strategy == pb.EMIT_STRATEGY_ON_WINDOW_UPDATE
    assert b[6].to_table.input == s.handle.id and b[6].to_table.name == "as-table"
    assert b[6].to_table.materialized.store_name == "latest"
    with pytest.raises(TypeError, match="emit_strategy: want an EmitStrategy"):
        tw.emit_strategy("on_window_close")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="EmitStrategy: type must be"):
        EmitStrategy("sometimes")._pb()  # type: ignore[arg-type]
