"""Interactive queries and state listeners against a fake engine."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from helpers import FakeEngine, column, connect_error
from test_app import Engine

from polystreams import (
    App,
    FailedPreconditionError,
    HostInfo,
    KeyQueryMetadata,
    KeyQueryResult,
    KeyValueStore,
    NotFoundError,
    ProcessingError,
    RestoreProgress,
    StreamsMetadata,
    UnavailableError,
)
from polystreams import store as store_mod
from polystreams.v1alpha1 import engine_pb2 as pb


class Store:
    """A fake store behind the fake engine's Query: string keys, long values."""

    def __init__(self, engine: Engine, data: dict[str, int], name: str = "counts") -> None:
        self.data = data
        self.name = name
        self.running = True
        self.requests: list[pb.QueryRequest] = []
        engine.fake.handlers["Query"] = self.query

    def query(self, body: bytes) -> Any:
        req = pb.QueryRequest.FromString(body)
        self.requests.append(req)
        if req.store != self.name:
            return connect_error("not_found", f'Query: store "{req.store}" does not exist (stores: {self.name})', 404)
        if not self.running:
            return connect_error("failed_precondition", f'Query: store "{req.store}" is not queryable before Start')
        items = sorted((k.encode(), v) for k, v in self.data.items())
        q = req.WhichOneof("query")
        if q == "get":
            items = [(k, v) for k, v in items if k == req.get]
        elif q == "range":
            lo = getattr(req.range, "from") if req.range.HasField("from") else None
            hi = req.range.to if req.range.HasField("to") else None
            items = [(k, v) for k, v in items if (lo is None or k >= lo) and (hi is None or k <= hi)]
        elif q == "prefix":
            items = [(k, v) for k, v in items if k.startswith(req.prefix)]
        limit = req.limit or 100_000
        truncated = len(items) > limit
        items = items[:limit]
        kd, kl = column("bytes", [k for k, _ in items])
        vd, vl = column("long", [v for _, v in items])
        return pb.QueryResponse(
            key_lengths=kl, keys=kd, value_lengths=vl, values=vd, key_serde="string", value_serde="long", truncated=truncated
        )


@pytest.fixture
def engine(fake_engine: FakeEngine) -> Engine:
    return Engine(fake_engine)


def test_table_handle_carries_its_store_and_queries_it(engine: Engine) -> None:
    def build(body: bytes) -> Any:
        req = pb.BuildRequest.FromString(body)
        engine.next_handle += 1
        kind = {"stream": pb.KIND_STREAM, "group_by_key": pb.KIND_GROUPED_STREAM}.get(req.WhichOneof("operation"), pb.KIND_TABLE)
        store = "counts" if kind == pb.KIND_TABLE else ""
        return pb.BuildResponse(handle=pb.Handle(id=engine.next_handle, kind=kind, key_serde="string", value_serde="long", store=store))

    engine.fake.handlers["Build"] = build
    fake = Store(engine, {"a": 1, "ab": 2, "b": 3})
    app = App("x", engine=engine.fake.url)
    table = app.stream("in", key="string").group_by_key().count(materialized="counts")
    assert table.store == "counts" and table.handle.store == "counts"
    s = table.query()
    assert isinstance(s, KeyValueStore) and s.name == "counts" and s.key_serde == "string"
    assert s.get("ab") == 2
    assert s.get("zz") is None
    assert [r.WhichOneof("query") for r in fake.requests] == ["get", "get"]  # the key serde came from the handle
    assert fake.requests[0].get == b"ab" and fake.requests[0].session_id == "sess-1"


def test_store_queries(engine: Engine) -> None:
    fake = Store(engine, {"b": 2, "a": 1, "ab": 12, "c": 3, "é": 5})
    app = App("x", engine=engine.fake.url)
    s = app.store("counts")
    assert s.get("a") == 1  # learns the key serde first
    assert [r.WhichOneof("query") for r in fake.requests] == ["all", "get"] and fake.requests[0].limit == 1
    assert list(s.all()) == [("a", 1), ("ab", 12), ("b", 2), ("c", 3), ("é", 5)]
    assert list(s.range("ab", "c")) == [("ab", 12), ("b", 2), ("c", 3)]  # both bounds inclusive
    assert list(s.range(to="ab")) == [("a", 1), ("ab", 12)]
    assert list(s.range(from_="c")) == [("c", 3), ("é", 5)]
    assert not fake.requests[-1].range.HasField("to")
    assert list(s.prefix("a")) == [("a", 1), ("ab", 12)]
    assert fake.requests[-1].prefix == b"a"
    assert list(s.prefix(b"\xc3")) == [("é", 5)]
    assert s.approximate_num_entries() == 5


def test_long_answers_are_read_page_by_page(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_mod, "PAGE", 3)
    data = {f"k{i:02d}": i for i in range(10)}
    fake = Store(engine, data)
    s = App("x", engine=engine.fake.url).store("counts")
    assert list(s.all()) == sorted(data.items())
    assert len(fake.requests) == 4  # 4 pages of 3 (all needs no key serde)
    assert getattr(fake.requests[1].range, "from") == b"k02\x00"
    assert list(s.prefix("k0")) == sorted(data.items())
    assert list(s.range("k03", "k07")) == [(f"k{i:02d}", i) for i in range(3, 8)]


def test_missing_store_and_not_running(engine: Engine) -> None:
    fake = Store(engine, {"a": 1})
    app = App("x", engine=engine.fake.url)
    with pytest.raises(NotFoundError) as info:
        app.store("nope").all()
    assert '"nope"' in info.value.message and "counts" in info.value.message
    fake.running = False
    with pytest.raises(FailedPreconditionError):
        app.store("counts").get("a")


def test_queries_from_another_thread_do_not_wait_for_exchange(engine: Engine) -> None:
    Store(engine, {"a": 1})
    slow = threading.Event()

    def exchange(body: bytes) -> Any:
        slow.set()
        time.sleep(0.3)  # a long poll holding its connection
        return pb.ExchangeResponse(state=pb.STATE_RUNNING)

    engine.fake.handlers["Exchange"] = exchange
    app = App("x", engine=engine.fake.url)
    s = app.store("counts")
    t = threading.Thread(target=app.run)
    t.start()
    try:
        assert slow.wait(5)
        t0 = time.monotonic()
        for _ in range(5):
            assert s.get("a") == 1
        assert time.monotonic() - t0 < 0.25
    finally:
        app.stop()
        t.join(10)
    assert not t.is_alive()


def test_state_listener_sees_each_change(engine: Engine) -> None:
    seen: list[tuple[str, str]] = []
    for st in (pb.STATE_REBALANCING, pb.STATE_REBALANCING, pb.STATE_RUNNING, pb.STATE_RUNNING):
        engine.exchanges.put(pb.ExchangeResponse(state=st))
    app = App("x", engine=engine.fake.url)

    @app.on_state_change
    def listener(new: str, old: str) -> None:
        seen.append((new, old))
        if new == "running":
            app.stop()

    def broken(new: str, old: str) -> None:
        raise RuntimeError("listener bug")

    app.on_state_change(broken)  # logged, ignored
    app.run()
    assert seen == [("rebalancing", "created"), ("running", "rebalancing"), ("stopped", "running")]
    with pytest.raises(TypeError):
        app.on_state_change(42)  # type: ignore[arg-type]


def test_state_listener_sees_error(engine: Engine) -> None:
    seen: list[tuple[str, str]] = []
    engine.exchanges.put(pb.ExchangeResponse(state=pb.STATE_RUNNING))
    engine.exchanges.put(pb.ExchangeResponse(state=pb.STATE_ERROR, error="boom"))
    app = App("x", engine=engine.fake.url)
    app.on_state_change(lambda new, old: seen.append((new, old)))
    with pytest.raises(ProcessingError):
        app.run()
    assert seen == [("running", "created"), ("error", "running")]


def test_state_listener_sees_restoring_and_progress_is_reported(engine: Engine) -> None:
    seen: list[tuple[str, str]] = []
    progress = pb.RestoreProgress(restored_records=300, total_records=1200, restoring_partitions=2, total_partitions=4)
    for st in (pb.STATE_REBALANCING, pb.STATE_RESTORING, pb.STATE_RESTORING, pb.STATE_RUNNING):
        engine.exchanges.put(pb.ExchangeResponse(state=st, restore=progress))
    engine.fake.handlers["GetState"] = lambda body: pb.GetStateResponse(state=pb.STATE_RESTORING, restore=progress)
    app = App("x", engine=engine.fake.url)

    @app.on_state_change
    def listener(new: str, old: str) -> None:
        seen.append((new, old))
        if new == "running":
            app.stop()

    app.run()
    assert seen == [("rebalancing", "created"), ("restoring", "rebalancing"), ("running", "restoring"), ("stopped", "running")]
    assert app.state() == "restoring"
    p = app.restore_progress()
    assert p == RestoreProgress(restored_records=300, total_records=1200, restoring_partitions=2, total_partitions=4)
    assert (p.fraction, p.done) == (0.25, False)
    assert RestoreProgress().fraction == 1.0 and RestoreProgress().done  # nothing to restore
    with pytest.raises(AttributeError):
        p.restored_records = 5  # type: ignore[misc]


def test_client_pool_reuses_one_connection_sequentially(fake_engine: FakeEngine) -> None:
    fake_engine.handlers["GetState"] = lambda body: pb.GetStateResponse(state=pb.STATE_RUNNING)
    from polystreams._client import Client

    c = Client(fake_engine.url)
    barrier = threading.Barrier(3)
    fake_engine.handlers["Describe"] = lambda body: (barrier.wait(5), pb.DescribeResponse(text="t"))[1]
    threads = [threading.Thread(target=c.describe, args=(pb.DescribeRequest(),)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert fake_engine.connections == 3  # three concurrent calls, three connections
    for _ in range(5):
        c.get_state(pb.GetStateRequest())
    assert fake_engine.connections == 3  # then reused
    c.close()


def test_interactive_queries_across_instances(engine: Engine) -> None:
    """query() carries the answer's timestamp, partition and standby flag;
    enable_stale_stores reaches the engine; the metadata calls read the
    engine's KeyQueryMetadata and StreamsMetadata."""
    fake = Store(engine, {"a": 1})
    seen: list[Any] = []

    def query(body: bytes) -> Any:
        req = pb.QueryRequest.FromString(body)
        seen.append(req)
        if req.WhichOneof("query") == "all":
            return pb.QueryResponse(key_serde="string", value_serde="long")
        if req.get == b"gone":
            return connect_error("unavailable", 'Query: store "counts" key "gone" (partition 2) is not queryable here now: retry', 503)
        kd, kl = column("bytes", [req.get])
        vd, vl = column("long", [7])
        return pb.QueryResponse(
            key_lengths=kl, keys=kd, value_lengths=vl, values=vd, key_serde="string", value_serde="long",
            timestamps=[1234], partition=3, from_standby=req.enable_stale_stores, served_by=["h2:7001"],
        )  # fmt: skip

    engine.fake.handlers["Query"] = query
    engine.fake.handlers["QueryMetadataForKey"] = lambda body: pb.QueryMetadataForKeyResponse(
        active_host=pb.HostInfo(host="h2", port=7001), standby_hosts=[pb.HostInfo(host="h3", port=7002)], partition=3
    )
    engine.fake.handlers["StreamsMetadata"] = lambda body: pb.StreamsMetadataResponse(
        metadata=[
            pb.StreamsMetadata(
                host_info=pb.HostInfo(host="h2", port=7001),
                state_store_names=["counts"],
                topic_partitions=[pb.TopicPartition(topic="events", partition=3)],
                standby_state_store_names=["counts"],
                standby_topic_partitions=[pb.TopicPartition(topic="events", partition=1)],
            )
        ],
        local_host="h1:7000",
    )
    app = App("x", engine=engine.fake.url)
    r = app.store("counts").query("k")
    assert r == KeyQueryResult(value=7, timestamp=1234, partition=3, from_standby=False, served_by=["h2:7001"])
    assert not seen[-1].enable_stale_stores
    stale = app.store("counts", enable_stale_stores=True)
    assert stale.query("k").from_standby and seen[-1].enable_stale_stores
    assert stale.get("k") == 7 and seen[-1].enable_stale_stores
    with pytest.raises(UnavailableError, match='key "gone" \\(partition 2\\)'):
        app.store("counts").get("gone")
    md = app.query_metadata_for_key("counts", "k")
    assert md == KeyQueryMetadata(active_host=HostInfo("h2", 7001), standby_hosts=[HostInfo("h3", 7002)], partition=3)
    assert str(md.active_host) == "h2:7001"
    (m,) = app.metadata_for_all_streams_clients()
    assert m == StreamsMetadata(
        host_info=HostInfo("h2", 7001),
        state_store_names=["counts"],
        topic_partitions=[("events", 3)],
        standby_state_store_names=["counts"],
        standby_topic_partitions=[("events", 1)],
    )
    assert app.streams_metadata_for_store("counts") == [m]
    del fake
