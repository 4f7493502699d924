"""The executor's processor mode (polystreams._processor) against bundles
built here from the protocol, with a scripted engine answering Read calls."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Iterable
from typing import Any

import pytest

from polystreams import FixedKeyProcessor, FixedKeyRecord, Processor, ProcessorContext, PunctuationType, Record, Stores
from polystreams._bundle import Executor
from polystreams.v1alpha1 import engine_pb2 as pb

PUT, DELETE, FORWARD, SCHEDULE, CANCEL = pb.OP_KIND_PUT, pb.OP_KIND_DELETE, pb.OP_KIND_FORWARD, pb.OP_KIND_SCHEDULE, pb.OP_KIND_CANCEL


def long(n: int) -> bytes:
    return struct.pack(">q", n)


class FakeEngine:
    """Answers Read calls from a store of sorted entries, in chunks of two
    (so iterators follow continuations)."""

    def __init__(self, stores: dict[str, dict[bytes, bytes]], chunk: int = 2) -> None:
        self.stores = stores
        self.chunk = chunk
        self.calls: list[pb.ReadRequest] = []

    def read(self, req: pb.ReadRequest) -> pb.ReadResponse:
        self.calls.append(pb.ReadRequest.FromString(req.SerializeToString()))
        entries = sorted(self.stores[req.store].items())
        q = req.WhichOneof("query")
        if q == "get":
            entries = [(k, v) for k, v in entries if k == req.get]
        elif q == "range":
            lo = getattr(req.range, "from") if req.range.HasField("from") else None
            hi = req.range.to if req.range.HasField("to") else None
            entries = [(k, v) for k, v in entries if (lo is None or k >= lo) and (hi is None or k <= hi)]
        elif q == "prefix":
            entries = [(k, v) for k, v in entries if k.startswith(req.prefix)]
        if req.reverse:
            entries.reverse()
        start = int(req.continuation or b"0")
        chunk = entries[start : start + self.chunk]
        resp = pb.ReadResponse()
        for k, v in chunk:
            resp.key_lengths.append(len(k))
            resp.value_lengths.append(len(v))
        resp.keys = b"".join(k for k, _ in chunk)
        resp.values = b"".join(v for _, v in chunk)
        if start + self.chunk < len(entries):
            resp.continuation = str(start + self.chunk).encode()
        return resp


def bundle(
    records: Iterable[tuple[str, int]],
    *,
    steps: list[pb.Step] | None = None,
    view: dict[bytes, bytes | None] | None = None,
    inits: Iterable[int] = (),
    after: Iterable[pb.BundleEntry] = (),
    headers: list[list[tuple[str, bytes | None]]] | None = None,
) -> pb.Bundle:
    recs = list(records)
    b = pb.Bundle(id=7, key_serde="string", value_serde="long", output_key_serde="string", output_value_serde="long",
                  topic="in", partition=0, task="0_0")
    b.steps.extend(steps or [pb.Step(token=1, operation=pb.OPERATION_PROCESS, node="P", stores=["counts"], children=["out"])])
    for i, (k, v) in enumerate(recs):
        kb = k.encode()
        b.key_lengths.append(len(kb))
        b.value_lengths.append(8)
        b.offsets.append(100 + i)
        b.timestamps.append(1000 + i)
    b.keys = b"".join(k.encode() for k, _ in recs)
    b.values = b"".join(long(v) for _, v in recs)
    sv = pb.StoreView(store="counts", key_serde="string", value_serde="long", type=pb.STORE_TYPE_KEY_VALUE)
    for k, val in (view or {}).items():
        sv.key_lengths.append(len(k))
        sv.value_lengths.append(-1 if val is None else len(val))
    sv.keys = b"".join((view or {}).keys())
    sv.values = b"".join(v for v in (view or {}).values() if v is not None)
    b.stores.append(sv)
    for s in inits:
        b.inits.append(pb.BundleEntry(kind=pb.BundleEntry.KIND_INIT, step=s))
    b.after.extend(after)
    if headers is not None:
        for hs in headers:
            b.header_counts.append(len(hs))
            for hk, hv in hs:
                b.header_key_lengths.append(len(hk.encode()))
                b.header_value_lengths.append(-1 if hv is None else len(hv))
        b.header_keys = b"".join(hk.encode() for hs in headers for hk, _ in hs)
        b.header_values = b"".join(hv for hs in headers for _, hv in hs if hv is not None)
    return b


def ops(r: pb.BundleResult) -> list[list[tuple[Any, ...]]]:
    """The op groups of a result, each op as (kind, step, target, key, value, timestamp, schedule)."""
    out: list[list[tuple[Any, ...]]] = []
    kp = vp = j = 0
    for count in r.op_counts:
        group = []
        for _ in range(count):
            kl, vl = r.op_key_lengths[j], r.op_value_lengths[j]
            k = None if kl < 0 else r.op_keys[kp : kp + kl]
            v = None if vl < 0 else r.op_values[vp : vp + vl]
            kp += max(kl, 0)
            vp += max(vl, 0)
            group.append((r.op_kinds[j], r.op_steps[j], r.op_targets[j], k, v, r.op_timestamps[j], r.op_schedules[j]))
            j += 1
        out.append(group)
    assert j == len(r.op_kinds)
    return out


class Counter(Processor):
    def init(self, context: ProcessorContext) -> None:
        self.ctx = context
        self.counts = context.get_state_store("counts")

    def process(self, record: Record[Any, Any]) -> None:
        n = (self.counts.get(record.key) or 0) + record.value
        self.counts.put(record.key, n)
        self.ctx.forward(record.with_value(n))


def test_counter_reads_its_own_writes_and_reads_the_engine_once_per_missing_key() -> None:
    engine = FakeEngine({"counts": {b"b": long(40)}})
    ex = Executor({1: Counter}, read=engine.read)
    r = ex.process(bundle([("a", 1), ("a", 1), ("b", 2), ("b", 3)], view={b"a": long(10)}, inits=[0]))
    assert not r.failures
    groups = ops(r)
    assert groups[0] == []  # init: nothing
    assert groups[1] == [(PUT, 0, 0, b"a", long(11), 0, 0), (FORWARD, 0, 0, b"a", long(11), 1000, 0)]
    assert groups[2][0] == (PUT, 0, 0, b"a", long(12), 0, 0)
    assert groups[3][0] == (PUT, 0, 0, b"b", long(42), 0, 0)
    assert groups[4][0] == (PUT, 0, 0, b"b", long(45), 0, 0)
    assert [c.get for c in engine.calls] == [b"b"]  # a was prefetched; b read once
    assert engine.calls[0].bundle_id == 7 and engine.calls[0].store == "counts"
    assert list(r.prefetch_hits) == [1]
    assert list(r.op_header_counts) == [-1, -1, -1, -1]  # forwards keep the input's headers


class Sweeper(Processor):
    """Counts per key; a stream-time punctuator forwards every count and clears the store."""

    def init(self, context: ProcessorContext) -> None:
        self.ctx = context
        self.store = context.get_state_store("counts")
        self.cancel = context.schedule(1000, PunctuationType.STREAM_TIME, self.sweep)

    def process(self, record: Record[Any, Any]) -> None:
        self.store.put(record.key, (self.store.get(record.key) or 0) + 1)

    def sweep(self, timestamp: int) -> None:
        with self.store.all() as entries:
            for key, count in list(entries):
                self.ctx.forward(Record(key, count, timestamp))
                self.store.delete(key)


def test_punctuator_sweeps_the_store_merged_with_the_bundles_writes() -> None:
    engine = FakeEngine({"counts": {b"a": long(5), b"c": long(7), b"d": long(1), b"e": long(2)}})
    ex = Executor({1: Sweeper}, read=engine.read)
    first = ex.process(bundle([], inits=[0]))
    ((kind, step, target, _, _, interval, sid),) = ops(first)[0]
    assert (kind, step, target, interval) == (SCHEDULE, 0, 1, 1000) and sid > 0
    punct = pb.BundleEntry(kind=pb.BundleEntry.KIND_PUNCTUATE_STREAM_TIME, step=0, schedule=sid, time_ms=2000)
    r = ex.process(bundle([("b", 0), ("d", 0)], view={b"b": None, b"d": long(1)}, after=[punct]))
    assert not r.failures
    sweep = ops(r)[2]
    forwards = [(k, v, t) for kind, _, _, k, v, t, _ in sweep if kind == FORWARD]
    # The engine's a, c, d (its 1 replaced by the bundle's 2), e, and the bundle's own b, in key order.
    assert forwards == [(b"a", long(5), 2000), (b"b", long(1), 2000), (b"c", long(7), 2000), (b"d", long(2), 2000), (b"e", long(2), 2000)]
    assert [k for kind, _, _, k, *_ in sweep if kind == DELETE] == [b"a", b"b", b"c", b"d", b"e"]
    alls = [c for c in engine.calls if c.WhichOneof("query") == "all"]
    assert [c.continuation for c in alls] == [b"", b"2"]  # chunked
    assert list(r.op_header_counts)[-5:] == [-1] * 5  # no headers: the (empty) input headers of a punctuation


def test_a_record_that_raises_keeps_its_earlier_ops_and_its_failure_counts_entries() -> None:
    class ForwardThenRaise(Processor):
        def init(self, context: ProcessorContext) -> None:
            self.ctx = context

        def process(self, record: Record[Any, Any]) -> None:
            self.ctx.forward(record)
            if record.value == 2:
                raise ValueError("two")

    ex = Executor({1: ForwardThenRaise})
    r = ex.process(bundle([("a", 1), ("a", 2), ("a", 3)], inits=[0]))
    assert [(f.index, f.step, f.kind) for f in r.failures] == [(2, 0, pb.RecordFailure.KIND_PROCESSING)]
    assert r.failures[0].message == "ValueError: two"
    assert [len(g) for g in ops(r)] == [0, 1, 1, 1]


def test_errors_name_node_store_and_call() -> None:
    class Bad(Processor):
        def init(self, context: ProcessorContext) -> None:
            self.ctx = context

        def process(self, record: Record[Any, Any]) -> None:
            if record.key == "child":
                self.ctx.forward(record, child="x")
            elif record.key == "store":
                self.ctx.get_state_store("t")
            elif record.key == "schedule":
                self.ctx.schedule(0, PunctuationType.WALL_CLOCK_TIME, lambda t: None)

    ex = Executor({1: Bad})
    r = ex.process(bundle([("child", 1), ("store", 1), ("schedule", 1)]))
    assert [f.message for f in r.failures] == [
        'ValueError: forward: node P has no child \'x\' (children: [out])',
        "ValueError: get_state_store: node P has no access to store 't' (its stores: [counts])",
        "ValueError: schedule: node P: interval 0 ms; the minimum is 1 ms",
    ]


def test_fixed_key_forwards_keep_the_key_and_headers_cross() -> None:
    class Tag(FixedKeyProcessor):
        def init(self, context: ProcessorContext) -> None:
            self.ctx = context

        def process(self, record: FixedKeyRecord[Any, Any]) -> None:
            meta = self.ctx.record_metadata()
            assert meta is not None and meta.topic == "in"
            self.ctx.forward(record.with_value(meta.offset).with_headers([*record.headers, ("seen", b"1")]))

    steps = [pb.Step(token=1, operation=pb.OPERATION_PROCESS_VALUES, node="T", children=["out"])]
    r = Executor({1: Tag}).process(bundle([("a", 1)], steps=steps, headers=[[("h", b"v"), ("n", None)]]))
    assert not r.failures
    assert ops(r) == [[(FORWARD, 0, 0, b"a", long(100), 1000, 0)]]
    assert list(r.op_header_counts) == [3]
    assert r.op_header_keys == b"hnseen" and list(r.op_header_value_lengths) == [1, -1, 1] and r.op_header_values == b"v1"


def test_forward_to_a_child_in_the_bundle_runs_it_depth_first() -> None:
    seen: list[str] = []

    class First(Processor):
        def init(self, context: ProcessorContext) -> None:
            self.ctx = context

        def process(self, record: Record[Any, Any]) -> None:
            seen.append(f"first {record.key}")
            self.ctx.forward(record.with_key(record.key + "!"))
            seen.append(f"first done {record.key}")

    class Second(Processor):
        def init(self, context: ProcessorContext) -> None:
            self.ctx = context

        def process(self, record: Record[Any, Any]) -> None:
            seen.append(f"second {record.key}")
            self.ctx.forward(record, child="sink")

    steps = [
        pb.Step(token=1, operation=pb.OPERATION_PROCESS, node="A", children=["B", "other"]),
        pb.Step(token=2, operation=pb.OPERATION_PROCESS, node="B", children=["sink"]),
    ]
    r = Executor({1: First, 2: Second}).process(bundle([("a", 1), ("b", 2)], steps=steps))
    assert not r.failures
    assert seen == ["first a", "second a!", "first done a", "first b", "second b!", "first done b"]
    # Each record: B's forward to its child, then A's forward to the child outside the bundle.
    assert ops(r)[0] == [(FORWARD, 1, 1, b"a!", long(1), 1000, 0), (FORWARD, 0, 2, b"a!", long(1), 1000, 0)]


def test_async_process_is_awaited_one_record_at_a_time() -> None:
    class Slow(Processor):
        def init(self, context: ProcessorContext) -> None:
            self.counts = context.get_state_store("counts")
            self.ctx = context

        async def process(self, record: Record[Any, Any]) -> None:
            n = self.counts.get(record.key) or 0
            await asyncio.sleep(0)
            self.counts.put(record.key, n + 1)
            self.ctx.forward(record.with_value(n + 1))

    ex = Executor({1: Slow})
    try:
        r = ex.process(bundle([("a", 0), ("a", 0), ("a", 0)], view={b"a": None}))
    finally:
        ex.close()
    assert not r.failures
    assert [g[1][4] for g in ops(r)] == [long(1), long(2), long(3)]


def test_close_entry_closes_and_drops_the_instance_and_cancel_is_an_op() -> None:
    closed: list[str] = []

    class Closing(Processor):
        def init(self, context: ProcessorContext) -> None:
            self.ctx = context
            self.c = context.schedule(10, "wall_clock_time", lambda t: None)

        def process(self, record: Record[Any, Any]) -> None:
            self.c.cancel()

        def close(self) -> None:
            closed.append(self.ctx.task_id)

    ex = Executor({1: Closing})
    r = ex.process(bundle([("a", 1)], inits=[0], after=[pb.BundleEntry(kind=pb.BundleEntry.KIND_CLOSE, step=0)]))
    assert not r.failures
    g = ops(r)
    sid = g[0][0][6]
    assert g[0][0][:3] == (SCHEDULE, 0, 2)
    assert g[1] == [(CANCEL, 0, 0, None, None, 0, sid)]
    assert closed == ["0_0"]
    punct = pb.BundleEntry(kind=pb.BundleEntry.KIND_PUNCTUATE_WALL_CLOCK, step=0, schedule=sid, time_ms=5)
    r2 = ex.process(bundle([], after=[punct]))
    assert "has no schedule" in r2.failures[0].message


def test_window_store_reads_prefetched_rows_and_its_writes() -> None:
    class Dedup(Processor):
        def init(self, context: ProcessorContext) -> None:
            self.ctx = context
            self.seen = context.get_state_store("seen")

        def process(self, record: Record[Any, Any]) -> None:
            if self.seen.fetch(record.key, 0) is None:
                self.seen.put(record.key, record.value, 0)
                self.ctx.forward(record)

    b = bundle([("a", 1), ("a", 2), ("b", 3)], steps=[pb.Step(token=1, operation=pb.OPERATION_PROCESS, node="D", stores=["seen"], children=["out"])])
    del b.stores[:]
    b.stores.append(pb.StoreView(store="seen", key_serde="string", value_serde="long", type=pb.STORE_TYPE_WINDOW,
                                 key_lengths=[1, 1], keys=b"ab", value_lengths=[-1, 8], values=long(9), windows=[0, 0]))
    ex = Executor({1: Dedup}, store_specs={"seen": Stores.window_store("seen", retention=100, window_size=10)})
    r = ex.process(b)
    assert not r.failures
    # a: prefetched with no rows (value -1), b: one row; nothing is read from the engine.
    assert [[op[0] for op in g] for g in ops(r)] == [[PUT, FORWARD], [], []]
    assert ops(r)[0][0] == (PUT, 0, 0, b"a", long(1), 0, 0)  # a window store's put carries the window start
    assert list(r.prefetch_hits) == [2]


def test_malformed_and_unknown_token_fail_every_entry() -> None:
    r = Executor({}).process(bundle([("a", 1)], inits=[0]))
    assert [(f.index, f.step) for f in r.failures] == [(0, 0), (1, 0)]
    assert "token 1, which is not registered" in r.failures[0].message


@pytest.mark.parametrize("bad", [0, -5])
def test_schedule_refuses_intervals_under_a_millisecond(bad: int) -> None:
    class S(Processor):
        def init(self, context: ProcessorContext) -> None:
            context.schedule(bad, PunctuationType.STREAM_TIME, print)

        def process(self, record: Record[Any, Any]) -> None:
            pass

    r = Executor({1: S}).process(bundle([], inits=[0]))
    assert r.failures[0].message == f"ValueError: schedule: node P: interval {bad} ms; the minimum is 1 ms"


def test_with_metadata_functions_get_and_set_timestamp_and_headers() -> None:
    from polystreams import RecordMetadata, with_metadata

    def stamp(value: Any, meta: RecordMetadata) -> Any:
        meta.timestamp = meta.timestamp + 1
        meta.headers = [*meta.headers, ("offset", str(meta.offset))]
        return f"{meta.topic}/{meta.partition}@{meta.offset}:{value}"

    def keep(key: Any, value: Any, meta: RecordMetadata) -> bool:
        return meta.offset != 101

    b = bundle([("a", 1), ("b", 2), ("c", 3)], steps=[
        pb.Step(token=1, operation=pb.OPERATION_FILTER, node="F", metadata=pb.METADATA_READ),
        pb.Step(token=2, operation=pb.OPERATION_MAP_VALUES, node="M", metadata=pb.METADATA_WRITE),
        pb.Step(token=3, operation=pb.OPERATION_MAP_VALUES, node="N"),
    ], headers=[[("h", b"1")], [], []])
    b.output_value_serde = "string"
    r = Executor({1: with_metadata(keep), 2: with_metadata(stamp, write=True), 3: str.upper}).process(b)
    assert not r.failures
    assert list(r.output_counts) == [1, 0, 1]
    assert r.values == b"IN/0@100:1IN/0@102:3"
    assert list(r.output_timestamps) == [1001, 1003]
    assert list(r.output_header_counts) == [2, 1]
    assert r.output_header_keys == b"hoffsetoffset" and r.output_header_values == b"1100102"


def test_stateless_steps_around_a_processor_run_record_by_record() -> None:
    steps = [
        pb.Step(token=2, operation=pb.OPERATION_MAP_VALUES, node="M", children=["P"]),
        pb.Step(token=1, operation=pb.OPERATION_PROCESS, node="P", stores=["counts"], children=["F"]),
        pb.Step(token=3, operation=pb.OPERATION_FILTER, node="F", children=["sink"]),
    ]
    b = bundle([("a", 1), ("a", 2), ("b", 3)], steps=steps, view={b"a": None, b"b": None})
    r = Executor({1: Counter, 2: lambda v: v * 10, 3: lambda k, v: v != 30}).process(b)
    assert not r.failures
    # Counter adds the mapped values (10, then 20: a reads 10 back), forwards each sum; the filter drops 30.
    assert ops(r) == [
        [(PUT, 1, 0, b"a", long(10), 0, 0), (FORWARD, 2, 0, b"a", long(10), 1000, 0)],
        [(PUT, 1, 0, b"a", long(30), 0, 0)],
        [(PUT, 1, 0, b"b", long(30), 0, 0)],
    ]


def test_store_calls_iterators_and_timestamped_values_through_the_overlay() -> None:
    from polystreams import ValueAndTimestamp

    seen: dict[str, Any] = {}

    class Calls(Processor):
        def init(self, context: ProcessorContext) -> None:
            self.s = context.get_state_store("counts")

        def process(self, record: Record[Any, Any]) -> None:
            s = self.s
            seen["absent"] = s.put_if_absent("b1", 7)  # b1: the engine's, so nothing is put
            seen["new"] = s.put_if_absent("b9", 9)
            seen["deleted"] = s.delete("b2")
            s.put("a0", 1)
            seen["range"] = list(s.range("a", "b5"))
            seen["reverse"] = list(s.reverse_range("a", "b5"))
            seen["prefix"] = [k for k, _ in s.prefix_scan("b")]
            seen["n"] = s.approximate_num_entries()

    engine = FakeEngine({"counts": {b"b1": long(1), b"b2": long(2), b"b3": long(3), b"c": long(4)}})
    r = Executor({1: Calls}, read=engine.read).process(bundle([("x", 1)]))
    assert not r.failures, r.failures
    assert seen["absent"] == 1 and seen["new"] is None and seen["deleted"] == 2
    assert seen["range"] == [("a0", 1), ("b1", 1), ("b3", 3)]
    assert seen["reverse"] == [("b3", 3), ("b1", 1), ("a0", 1)]
    assert seen["prefix"] == ["b1", "b3", "b9"]
    assert seen["n"] == 5  # a0, b1, b3, b9, c
    assert [(op[0], op[3]) for op in ops(r)[0]] == [(PUT, b"b9"), (DELETE, b"b2"), (PUT, b"a0")]

    class Stamped(Processor):
        def init(self, context: ProcessorContext) -> None:
            self.s = context.get_state_store("counts")

        def process(self, record: Record[Any, Any]) -> None:
            old = self.s.get(record.key)
            self.s.put(record.key, ValueAndTimestamp((old.value if old else 0) + record.value, record.timestamp))
            seen["stamped"] = self.s.get(record.key)

    b = bundle([("a", 5)], view={b"a": long(1)})
    b.stores[0].type = pb.STORE_TYPE_TIMESTAMPED_KEY_VALUE
    b.stores[0].timestamps.append(77)
    r = Executor({1: Stamped}).process(b)
    assert not r.failures, r.failures
    assert seen["stamped"] == ValueAndTimestamp(6, 1000)
    assert ops(r) == [[(PUT, 0, 0, b"a", long(6), 1000, 0)]]


def test_a_window_stores_null_put_is_a_delete_of_that_window() -> None:
    class Forget(Processor):
        def init(self, context: ProcessorContext) -> None:
            self.w = context.get_state_store("w")

        def process(self, record: Record[Any, Any]) -> None:
            self.w.put(record.key, None, 60)
            assert self.w.fetch(record.key, 60) is None

    b = bundle([("a", 1)], steps=[pb.Step(token=1, operation=pb.OPERATION_PROCESS, node="F", stores=["w"])])
    del b.stores[:]
    b.stores.append(pb.StoreView(store="w", key_serde="string", value_serde="long", type=pb.STORE_TYPE_WINDOW,
                                 key_lengths=[1], keys=b"a", value_lengths=[8], values=long(3), windows=[60]))
    r = Executor({1: Forget}).process(b)
    assert not r.failures, r.failures
    assert ops(r) == [[(DELETE, 0, 0, b"a", None, 60, 0)]]


def test_an_iterator_sees_the_writes_made_before_it_not_after() -> None:
    got: list[Any] = []

    class Snap(Processor):
        def init(self, context: ProcessorContext) -> None:
            self.s = context.get_state_store("counts")

        def process(self, record: Record[Any, Any]) -> None:
            self.s.put("a", 1)
            it = self.s.all()
            self.s.put("b", 2)  # after the iterator was made
            self.s.delete("a")
            got.extend(it)

    engine = FakeEngine({"counts": {}})
    r = Executor({1: Snap}, read=engine.read).process(bundle([("x", 1)]))
    assert not r.failures, r.failures
    assert got == [("a", 1)]


def test_a_versioned_store_answers_from_the_views_versions_and_its_own_puts() -> None:
    seen: list[Any] = []

    class History(Processor):
        """Puts the record's value as a version at timestamp value; forwards put's answer."""

        def init(self, context: ProcessorContext) -> None:
            self.ctx = context
            self.h = context.get_state_store("counts")

        def process(self, record: Record[Any, Any]) -> None:
            code = self.h.put(record.key, record.value, record.value)
            seen.append((self.h.get(record.key), self.h.get(record.key, as_of=25)))
            self.ctx.forward(record.with_value(code))

    b = bundle([("a", 20), ("a", 30), ("a", 5), ("b", 40), ("a", -100)])
    del b.stores[:]
    # a: versions valid from 10 and 30; b: none. Stream time 30, history retention 100.
    b.stores.append(pb.StoreView(store="counts", key_serde="string", value_serde="long", type=pb.STORE_TYPE_VERSIONED_KEY_VALUE,
                                 key_lengths=[1, 1], keys=b"ab", version_counts=[2, 0], value_lengths=[8, 8],
                                 values=long(1) + long(3), windows=[10, 30], stream_time_ms=30, history_retention_ms=100))
    r = Executor({1: History}).process(b)
    assert not r.failures
    codes = [struct.unpack(">q", op[4])[0] for g in ops(r) for op in g if op[0] == FORWARD]
    # In the past before 30; replacing the latest; in the past before 10; b's first; older than 40 - 100.
    assert codes == [30, -1, 10, -1, -(2**63)]
    # Every put and delete is a PUT op at the version's time (the expired one too: the engine counts it).
    assert [op[:6] for g in ops(r) for op in g if op[0] == PUT][:2] == [(PUT, 0, 0, b"a", long(20), 20), (PUT, 0, 0, b"a", long(30), 30)]
    shown = [tuple(None if v is None else (v.value, v.timestamp, v.valid_to) for v in pair) for pair in seen]
    assert shown == [((3, 30, None), (20, 20, None)), ((30, 30, None), (20, 20, None)), ((30, 30, None), (20, 20, None)),
                     ((40, 40, None), None), ((30, 30, None), (20, 20, None))]
    assert list(r.prefetch_hits) == [2]
