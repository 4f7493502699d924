"""The host side of processor bundles (docs/design/processor.md): the
executor's processor mode.

A processor bundle has a processor step (OPERATION_PROCESS or
OPERATION_PROCESS_VALUES); its other steps may be processors or stateless
steps (map_values, filter, ...), run record by record, depth first. The
records enter the first step; what leaves the last step (or a processor's
forward to a child that is no step of the bundle) is a FORWARD op. Its entries,
in order, are ``Bundle.inits``, the records, then ``Bundle.after``
(punctuations, then closes), and the answer holds one op group per entry,
in call order: ``put`` / ``delete`` of a store, ``forward`` to a child,
``schedule`` / ``cancel`` of a punctuator.

Processor instances live across bundles, one per (task, node), as Kafka
Streams makes one per task: an init entry makes the instance and calls
``init(context)``; a record for a node with no instance makes one first (the
ops of its init join the record's group); a close entry calls ``close()``
and drops it.

Stores: ``Bundle.stores`` holds one StoreView per store the steps declare
(its serdes and the prefetched entries). Reads go through an overlay: the
prefetched entries under the bundle's own writes, so a record reads what the
records before it wrote; a read the bundle did not bring is a ``Read`` call
to the engine (made while the bundle is held), whose answer joins the
overlay. Iterators (range, all, prefix scan, window fetches) read the
engine's answer chunk by chunk and merge the bundle's writes into it.

A forward to a child that is itself a step of the bundle runs that child at
once, depth first (Kafka Streams' order, for processors sharing a store);
a forward to any other child is a FORWARD op for the engine. A record whose
processor raises fails (its failure's index counts entries) and keeps the
ops it made before the raise, as Kafka Streams undoes nothing.
"""

from __future__ import annotations

import bisect
import datetime
import itertools
from collections.abc import Callable, Iterator, Mapping
from types import TracebackType
from typing import Any

from polystreams._aio import Failed, Loop, function_name, is_awaitable
from polystreams._operations import DESERIALIZATION, PROCESSING, STATELESS
from polystreams.processor import (
    PUT_RETURN_CODE_NOT_PUT,
    PUT_RETURN_CODE_VALID_TO_UNDEFINED,
    FixedKeyRecord,
    Headers,
    PunctuationType,
    Record,
    RecordMetadata,
    StoreBuilder,
    ValueAndTimestamp,
    headers_of,
    metadata_of,
    unwrap,
)
from polystreams.serde import decode, decode_column, decoder, encode, encoder
from polystreams.store import VersionedRecord
from polystreams.v1alpha1 import engine_pb2 as pb
from polystreams.windows import Windowed

__all__ = ["ProcessorHost", "is_processor_bundle", "read_headers"]

_PROCESS = pb.OPERATION_PROCESS
_PROCESS_VALUES = pb.OPERATION_PROCESS_VALUES
_PROCESSORS = frozenset({_PROCESS, _PROCESS_VALUES})


def _level(step: pb.Step, fn: Any) -> int:
    """Whether (and how) a step's function takes metadata: the step's, or its with_metadata wrapper's."""
    return max(int(step.metadata), int(metadata_of(fn)))

_PUT = pb.OP_KIND_PUT
_DELETE = pb.OP_KIND_DELETE
_FORWARD = pb.OP_KIND_FORWARD
_SCHEDULE = pb.OP_KIND_SCHEDULE
_CANCEL = pb.OP_KIND_CANCEL

_INIT = pb.BundleEntry.KIND_INIT
_PUNCTUATE_STREAM = pb.BundleEntry.KIND_PUNCTUATE_STREAM_TIME
_PUNCTUATE_WALL = pb.BundleEntry.KIND_PUNCTUATE_WALL_CLOCK
_CLOSE = pb.BundleEntry.KIND_CLOSE

ReadFn = Callable[[pb.ReadRequest], pb.ReadResponse]


def is_processor_bundle(bundle: pb.Bundle) -> bool:
    return any(s.operation in _PROCESSORS for s in bundle.steps)


def _text(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


class _StepFailed(Exception):
    """A processor (or its punctuator) raised: the step and the message,
    carried out of nested forwards to the entry."""

    def __init__(self, step: int, message: str) -> None:
        super().__init__(message)
        self.step = step
        self.message = message


class _Raised(Exception):
    """An awaitable raised: its message as a failure's."""


class _Ops:
    """The ops of a bundle's answer, in call order: one tuple each (kind,
    step, target, key, value, timestamp, schedule), made into the answer's
    columns once, at the end."""

    __slots__ = ("ops", "counts", "hdrs", "mark")

    def __init__(self) -> None:
        self.ops: list[tuple[int, int, int, bytes | None, bytes | None, int, int]] = []
        self.counts: list[int] = []
        self.hdrs: list[Headers | None] = []  # per forward; None: the input's
        self.mark = 0

    def add(self, kind: int, step: int, target: int, key: bytes | None, value: bytes | None, time: int, sched: int) -> None:
        self.ops.append((kind, step, target, key, value, time, sched))

    def end_entry(self) -> None:
        n = len(self.ops)
        self.counts.append(n - self.mark)
        self.mark = n

    def fill(self, r: pb.BundleResult) -> None:
        ops = self.ops
        r.op_counts.extend(self.counts)
        if not ops:
            return
        kinds, steps, targets, keys, values, times, scheds = zip(*ops)
        r.op_kinds.extend(kinds)
        r.op_steps.extend(steps)
        r.op_targets.extend(targets)
        r.op_key_lengths.extend([-1 if k is None else len(k) for k in keys])
        r.op_keys = b"".join([k for k in keys if k is not None])
        r.op_value_lengths.extend([-1 if v is None else len(v) for v in values])
        r.op_values = b"".join([v for v in values if v is not None])
        r.op_timestamps.extend(times)
        r.op_schedules.extend(scheds)
        if self.hdrs:
            hcounts: list[int] = []
            hklens: list[int] = []
            hkeys: list[bytes] = []
            hvlens: list[int] = []
            hvals: list[bytes] = []
            for h in self.hdrs:
                if h is None:
                    hcounts.append(-1)
                    continue
                hcounts.append(len(h))
                for k, v in h:
                    kb = k.encode()
                    hklens.append(len(kb))
                    hkeys.append(kb)
                    if v is None:
                        hvlens.append(-1)
                    else:
                        hvlens.append(len(v))
                        hvals.append(v)
            r.op_header_counts.extend(hcounts)
            r.op_header_key_lengths.extend(hklens)
            r.op_header_keys = b"".join(hkeys)
            r.op_header_value_lengths.extend(hvlens)
            r.op_header_values = b"".join(hvals)


def _split(data: bytes, lengths: Any) -> list[bytes | None]:
    out: list[bytes | None] = []
    pos = 0
    for n in lengths:
        if n < 0:
            out.append(None)
        else:
            out.append(data[pos : pos + n])
            pos += n
    if pos != len(data):
        raise ValueError(f"malformed column: lengths account for {pos} bytes, the column holds {len(data)}")
    return out


_ABSENT = (None, 0)  # a key known to have no entry


def _no_encoder(serde: str) -> Callable[[Any], bytes]:
    def enc(obj: Any) -> bytes:
        raise ValueError(f"unknown serde {serde!r}")

    return enc


class _StoreState:
    """One store's overlay for one bundle: what the bundle knows of it
    (prefetched, read, written) and what it wrote."""

    __slots__ = (
        "name", "index", "key_serde", "value_serde", "type", "timestamped", "window", "window_size",
        "retain_duplicates", "known", "prefetched", "hits", "written", "covered", "dups", "kenc", "venc", "vdec",
        "versioned", "versions", "stream_time", "history_retention",
    )

    def __init__(self, view: pb.StoreView, index: int, spec: StoreBuilder | None) -> None:
        self.name = view.store
        self.index = index  # in Bundle.stores (prefetch_hits)
        self.key_serde = view.key_serde or "bytes"
        self.value_serde = view.value_serde or "bytes"
        # Fast encoders (their errors may not name the serde: encode() then does).
        self.kenc = encoder(self.key_serde) or _no_encoder(self.key_serde)
        self.venc = encoder(self.value_serde) or _no_encoder(self.value_serde)
        vs = self.value_serde
        self.vdec: Callable[[bytes], Any] = decoder(vs) or (lambda data: decode(vs, data))
        self.type = view.type
        self.timestamped = view.type in (pb.STORE_TYPE_TIMESTAMPED_KEY_VALUE, pb.STORE_TYPE_TIMESTAMPED_WINDOW)
        self.window = view.type in (pb.STORE_TYPE_WINDOW, pb.STORE_TYPE_TIMESTAMPED_WINDOW)
        self.window_size = spec.window_size_ms if spec is not None else 0
        self.retain_duplicates = bool(spec is not None and spec.retain_duplicates)
        # Key-value stores: serialized key -> (value bytes or None, timestamp).
        # Window stores: (serialized key, window start) -> the same.
        self.known: dict[Any, tuple[bytes | None, int]] = {}
        self.written: dict[Any, tuple[bytes | None, int]] = {}
        self.prefetched: set[bytes] = set()
        self.hits: set[bytes] = set()
        self.covered: set[bytes] = set()  # window stores: keys whose rows are all known
        self.dups: list[tuple[bytes, int, bytes]] = []  # window stores with duplicates: rows put, in order
        keys = _split(view.keys, view.key_lengths)
        # Versioned stores: serialized key -> its versions [validFrom, value
        # bytes or None for a tombstone] in ascending validFrom, and the
        # store's stream time, advanced by the bundle's own puts.
        self.versioned = view.type == pb.STORE_TYPE_VERSIONED_KEY_VALUE
        self.versions: dict[bytes, list[tuple[int, bytes | None]]] = {}
        self.stream_time = view.stream_time_ms
        self.history_retention = view.history_retention_ms
        if self.versioned:
            self._versions_view(view)
            return
        values = _split(view.values, view.value_lengths)
        if len(keys) != len(values):
            raise ValueError(f"malformed store view {view.store!r}: {len(keys)} keys, {len(values)} values")
        times = list(view.timestamps) or [0] * len(keys)
        if self.window:
            windows = list(view.windows)
            if len(windows) != len(keys):
                raise ValueError(f"malformed store view {view.store!r}: {len(windows)} window starts for {len(keys)} rows")
            uncovered = {k for k in _split(view.uncovered, view.uncovered_lengths) if k is not None}
            for k, v, t, w in zip(keys, values, times, windows):
                if k is None:
                    continue
                self.prefetched.add(k)
                if k not in uncovered:
                    self.covered.add(k)
                if v is not None:
                    self.known[(k, w)] = (v, t)
        else:
            for k, v, t in zip(keys, values, times):
                if k is not None:
                    self.prefetched.add(k)
                    self.known[k] = (v, t)


    def _versions_view(self, view: pb.StoreView) -> None:
        """A versioned store's view: each key once, its version count, then
        its versions' values and validFroms (StoreView.windows)."""
        keys = _split(view.keys, view.key_lengths)
        values = _split(view.values, view.value_lengths)
        counts, froms = list(view.version_counts), list(view.windows)
        if len(counts) != len(keys) or sum(counts) != len(values) or len(froms) != len(values):
            raise ValueError(
                f"malformed store view {view.store!r}: {len(keys)} keys, {len(counts)} version counts adding up to "
                f"{sum(counts)}, {len(values)} values, {len(froms)} validFroms"
            )
        i = 0
        for k, n in zip(keys, counts):
            if k is None:
                raise ValueError(f"malformed store view {view.store!r}: a null key")
            self.prefetched.add(k)
            self.versions[k] = list(zip(froms[i : i + n], values[i : i + n]))
            i += n


class _Instance:
    """A task's processor of one node, with the context it was given."""

    __slots__ = ("processor", "context", "schedules", "ids", "broken")

    def __init__(self, processor: Any, context: _Context) -> None:
        self.processor = processor
        self.context = context
        self.schedules: dict[int, _Schedule] = {}  # the live ones, by id
        self.ids = itertools.count(1)  # schedule ids count from 1 per instance
        self.broken: str | None = None  # init raised: records fail with this


class _Schedule:
    """A punctuator: ``cancel()`` stops it (Cancellable)."""

    __slots__ = ("id", "host", "instance", "fn", "type", "interval", "cancelled")

    def __init__(self, id: int, host: ProcessorHost, instance: _Instance, fn: Callable[[int], Any], type: PunctuationType, interval: int) -> None:
        self.id = id
        self.host = host
        self.instance = instance
        self.fn = fn
        self.type = type
        self.interval = interval
        self.cancelled = False

    def cancel(self) -> None:
        if self.cancelled:
            return
        self.cancelled = True
        self.instance.schedules.pop(self.id, None)
        run = self.host._run
        if run is not None:
            ctx = self.instance.context
            run.ops.add(_CANCEL, run.step_of.get(ctx.node, 0), 0, None, None, 0, self.id)

    def __repr__(self) -> str:
        return f"Cancellable(schedule {self.id} of node {self.instance.context.node}, {self.type.value} every {self.interval} ms)"


_TYPES: dict[Any, PunctuationType] = {
    PunctuationType.STREAM_TIME: PunctuationType.STREAM_TIME,
    PunctuationType.WALL_CLOCK_TIME: PunctuationType.WALL_CLOCK_TIME,
    "stream_time": PunctuationType.STREAM_TIME,
    "wall_clock_time": PunctuationType.WALL_CLOCK_TIME,
}


class _Context:
    """A processor's ProcessorContext: bound to its node and task, it acts
    on the bundle being run (the host's current run)."""

    __slots__ = ("host", "node", "task", "fixed_key", "_stores")

    def __init__(self, host: ProcessorHost, node: str, task: str, fixed_key: bool) -> None:
        self.host = host
        self.node = node
        self.task = task
        self.fixed_key = fixed_key
        self._stores: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"ProcessorContext(node {self.node!r}, task {self.task})"

    @property
    def application_id(self) -> str:
        return self.host.application_id

    @property
    def task_id(self) -> str:
        return self.task

    def _current(self, call: str) -> _Run:
        run = self.host._run
        if run is None:
            raise RuntimeError(f"{call}: node {self.node} is not running a record, punctuator, init or close now")
        return run

    def forward(self, record: Any, child: str | None = None) -> None:
        run = self.host._run
        if run is None:
            run = self._current("forward")
        run.forward(self, record, child)

    def get_state_store(self, name: str) -> Any:
        store = self._stores.get(name)
        if store is not None:
            return store
        run = self._current("get_state_store")
        names = run.stores_of[run.step_of[self.node]]
        if name not in names:
            raise ValueError(f"get_state_store: node {self.node} has no access to store {name!r} (its stores: [{', '.join(names)}])")
        state = run.stores.get(name)
        if state is None:
            raise ValueError(f"get_state_store: node {self.node}: the bundle brought no view of store {name!r} (malformed bundle)")
        if state.versioned:
            store = _VersionedStore(self, name)
        elif state.window:
            store = _WindowStore(self, name)
        else:
            store = _KeyValueStore(self, name, state.timestamped)
        self._stores[name] = store
        return store

    def schedule(self, interval: int | datetime.timedelta, type: Any, punctuator: Callable[[int], Any]) -> _Schedule:
        if isinstance(interval, datetime.timedelta):
            ms = int(interval / datetime.timedelta(milliseconds=1))
        elif isinstance(interval, bool) or not isinstance(interval, int):
            raise TypeError(f"schedule: node {self.node}: interval must be milliseconds (int) or a timedelta, got {type(interval).__name__}")
        else:
            ms = interval
        if ms < 1:
            raise ValueError(f"schedule: node {self.node}: interval {ms} ms; the minimum is 1 ms")
        t = _TYPES.get(type)
        if t is None:
            raise ValueError(f"schedule: node {self.node}: unknown punctuation type {type!r} (want PunctuationType.STREAM_TIME or WALL_CLOCK_TIME)")
        if not callable(punctuator):
            raise TypeError(f"schedule: node {self.node}: punctuator {punctuator!r} is not callable")
        run = self._current("schedule")
        inst = self.host._instances[(self.task, self.node)]
        sid = next(inst.ids)
        s = _Schedule(sid, self.host, inst, punctuator, t, ms)
        inst.schedules[sid] = s
        run.ops.add(_SCHEDULE, run.step_of[self.node], 1 if t is PunctuationType.STREAM_TIME else 2, None, None, ms, sid)
        return s

    def record_metadata(self) -> RecordMetadata | None:
        run = self.host._run
        return None if run is None else run.record_metadata()


class _Iter:
    """A store iterator (KeyValueIterator): iterable, closable, a context manager."""

    __slots__ = ("_gen",)

    def __init__(self, gen: Iterator[tuple[Any, Any]]) -> None:
        self._gen = gen

    def __iter__(self) -> _Iter:
        return self

    def __next__(self) -> tuple[Any, Any]:
        return next(self._gen)

    def __enter__(self) -> _Iter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        close = getattr(self._gen, "close", None)
        if close is not None:
            close()


class _Store:
    __slots__ = ("ctx", "name", "_run", "_st", "_step", "_target")

    def __init__(self, ctx: _Context, name: str) -> None:
        self.ctx = ctx
        self.name = name
        self._run: _Run | None = None  # the run _st belongs to
        self._st: _StoreState | None = None
        self._step = 0  # in _run: the node's step, and the store's index in its stores
        self._target = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__.lstrip('_')}({self.name!r} of node {self.ctx.node})"

    def _state(self, call: str) -> tuple[_Run, _StoreState]:
        run = self.ctx.host._run
        if run is not None and run is self._run:
            st = self._st
            assert st is not None
            return run, st
        run = self.ctx._current(f"{self.name}.{call}")
        state = run.stores.get(self.name)
        if state is None:
            raise ValueError(f"{self.name}.{call}: node {self.ctx.node}: the bundle brought no view of store {self.name!r} (malformed bundle)")
        self._run, self._st = run, state
        self._step = run.step_of.get(self.ctx.node, 0)
        self._target = run.target(self._step, self.name)
        return run, state

    def _key(self, state: _StoreState, key: Any, call: str) -> bytes:
        if key is None:
            raise TypeError(f"store {self.name!r}: {call}: a key must not be None")
        try:
            return state.kenc(key)
        except Exception:
            pass
        try:
            b = encode(state.key_serde, key)
        except (TypeError, ValueError, OverflowError) as e:
            raise TypeError(f"store {self.name!r}: {call}: cannot encode key {key!r} with key serde {state.key_serde!r}: {e}") from None
        assert b is not None
        return b

    def _value(self, state: _StoreState, value: Any, call: str) -> bytes | None:
        if value is None:
            return None
        try:
            return state.venc(value)
        except Exception:
            pass
        try:
            return encode(state.value_serde, value)
        except (TypeError, ValueError, OverflowError) as e:
            raise TypeError(
                f"store {self.name!r}: {call}: cannot encode value {value!r} with value serde {state.value_serde!r}: {e}"
            ) from None

    def _prefix(self, state: _StoreState, prefix: Any) -> bytes:
        if isinstance(prefix, (bytes, bytearray)):
            return bytes(prefix)
        if isinstance(prefix, str):
            return prefix.encode()
        return self._key(state, prefix, "prefix_scan")


def _valid_from(version: tuple[int, bytes | None]) -> int:
    return version[0]


class _VersionedStore(_Store):
    """A processor's versioned key-value store over the overlay: per key its
    versions as the view (or a Read) brought them, under the bundle's own
    puts, and the store's stream time as those puts advance it. Answers are
    computed here by the rules of the engine's state/versioned.go
    (RocksDBVersionedStore's); each put or delete is a PUT op (a tombstone's
    value is null) carrying the version's timestamp, which the engine
    applies with the same code as a Go processor's."""

    __slots__ = ()

    def _versions(self, run: _Run, state: _StoreState, kb: bytes) -> list[tuple[int, bytes | None]]:
        vs = state.versions.get(kb)
        if vs is not None:
            if kb in state.prefetched:
                state.hits.add(kb)
            return vs
        resp = run.read(state, versions=kb)
        values = _split(resp.values, resp.value_lengths)
        vs = list(zip(resp.windows, values))
        state.versions[kb] = vs
        return vs

    @staticmethod
    def _find(state: _StoreState, vs: list[tuple[int, bytes | None]], as_of: int | None) -> tuple[int, bytes] | None:
        """FindVersion: the latest version (as_of None) or the one valid at
        as_of; older than the history retention only the latest; a
        tombstone finds nothing."""
        if not vs:
            return None
        if as_of is None:
            f, v = vs[-1]
            return None if v is None else (f, v)
        i = len(vs) - 1
        while i >= 0 and vs[i][0] > as_of:
            i -= 1
        if i < 0:
            return None
        f, v = vs[i]
        if v is None or (as_of < state.stream_time - state.history_retention and i != len(vs) - 1):
            return None
        return f, v

    def _record(self, state: _StoreState, found: tuple[int, bytes] | None) -> VersionedRecord | None:
        if found is None:
            return None
        # Kafka Streams' processor stores answer no validTo
        # (MeteredVersionedKeyValueStore rebuilds the record without it).
        return VersionedRecord(state.vdec(found[1]), found[0], None)

    def _time(self, timestamp: Any, call: str) -> int:
        if isinstance(timestamp, bool) or not isinstance(timestamp, int):
            raise TypeError(f"store {self.name!r}: {call}: timestamp must be epoch milliseconds (int), got {type(timestamp).__name__}")
        return timestamp

    def _put(self, run: _Run, state: _StoreState, kb: bytes, data: bytes | None, ts: int) -> int:
        vs = self._versions(run, state, kb)
        # Sent even when expired: the engine recomputes the answer and
        # counts the dropped put, as RocksDBVersionedStore does.
        run.ops.add(_PUT, self._step, self._target, kb, data, ts, 0)
        if ts < state.stream_time - state.history_retention:
            return PUT_RETURN_CODE_NOT_PUT
        if ts > state.stream_time:
            state.stream_time = ts
        if not vs or ts > vs[-1][0]:  # the common case: a new latest version
            vs.append((ts, data))
            return PUT_RETURN_CODE_VALID_TO_UNDEFINED
        i = bisect.bisect_left(vs, ts, key=_valid_from)
        if vs[i][0] == ts:
            vs[i] = (ts, data)
            return PUT_RETURN_CODE_VALID_TO_UNDEFINED if i == len(vs) - 1 else vs[i + 1][0]
        vs.insert(i, (ts, data))
        return vs[i + 1][0]

    def put(self, key: Any, value: Any, timestamp: int) -> int:
        run = self.ctx.host._run
        state = self._st
        if run is None or run is not self._run or state is None or key is None or value is None or type(timestamp) is not int:
            run, state = self._state("put")
            ts = self._time(timestamp, "put")
            kb = self._key(state, key, "put")
            return self._put(run, state, kb, self._value(state, value, "put"), ts)
        # The fast path: the run's store, a key and a value its serdes take.
        data: bytes | None
        try:
            kb = state.kenc(key)
            data = state.venc(value)
        except Exception:
            kb = self._key(state, key, "put")
            data = self._value(state, value, "put")
        return self._put(run, state, kb, data, timestamp)

    def get(self, key: Any, as_of: int | None = None) -> VersionedRecord | None:
        run = self.ctx.host._run
        state = self._st
        if run is None or run is not self._run or state is None or key is None or as_of is not None:
            run, state = self._state("get")
            kb = self._key(state, key, "get")
            t = None if as_of is None else self._time(as_of, "get")
            return self._record(state, self._find(state, self._versions(run, state, kb), t))
        # The fast path: the latest version of a key the bundle knows.
        try:
            kb = state.kenc(key)
        except Exception:
            kb = self._key(state, key, "get")
        vs = state.versions.get(kb)
        if vs is None:
            vs = self._versions(run, state, kb)
        elif kb in state.prefetched:
            state.hits.add(kb)
        if not vs:
            return None
        f, v = vs[-1]
        return None if v is None else VersionedRecord(state.vdec(v), f, None)

    def delete(self, key: Any, timestamp: int) -> VersionedRecord | None:
        run, state = self._state("delete")
        ts = self._time(timestamp, "delete")
        kb = self._key(state, key, "delete")
        vs = self._versions(run, state, kb)
        expired = ts < state.stream_time - state.history_retention
        old = None if expired else self._record(state, self._find(state, vs, ts))
        self._put(run, state, kb, None, ts)
        return old


class _KeyValueStore(_Store):
    """A processor's key-value store (timestamped or not) over the overlay."""

    __slots__ = ("timestamped",)

    def __init__(self, ctx: _Context, name: str, timestamped: bool) -> None:
        super().__init__(ctx, name)
        self.timestamped = timestamped

    def _out(self, state: _StoreState, entry: tuple[bytes | None, int]) -> Any:
        data, ts = entry
        if data is None:
            return None
        v = state.vdec(data)
        return ValueAndTimestamp(v, ts) if self.timestamped else v

    def _lookup(self, run: _Run, state: _StoreState, kb: bytes) -> tuple[bytes | None, int]:
        if kb in state.prefetched:
            state.hits.add(kb)
        entry = state.known.get(kb)
        if entry is not None:
            return entry
        resp = run.read(state, get=kb)
        values = _split(resp.values, resp.value_lengths)
        entry = _ABSENT
        if values and values[0] is not None:
            entry = (values[0], resp.timestamps[0] if resp.timestamps else 0)
        state.known[kb] = entry
        return entry

    def get(self, key: Any) -> Any:
        run = self.ctx.host._run
        state = self._st
        if run is None or run is not self._run or state is None or key is None or self.timestamped:
            run, state = self._state("get")
            return self._out(state, self._lookup(run, state, self._key(state, key, "get")))
        # The fast path: a plain store, a key the bundle knows.
        try:
            kb = state.kenc(key)
        except Exception:
            kb = self._key(state, key, "get")
        entry = state.known.get(kb)
        if entry is None:
            entry = self._lookup(run, state, kb)
        elif kb in state.prefetched:
            state.hits.add(kb)
        data = entry[0]
        return None if data is None else state.vdec(data)

    def _write(self, run: _Run, state: _StoreState, kb: bytes, value: Any, call: str) -> None:
        step, target = self._step, self._target
        if value is None:
            state.known[kb] = state.written[kb] = _ABSENT
            run.ops.add(_DELETE, step, target, kb, None, 0, 0)
            return
        if self.timestamped:
            if isinstance(value, tuple) and len(value) == 2:
                v, ts = value
            else:
                raise TypeError(f"store {self.name!r}: {call}: a timestamped store takes ValueAndTimestamp(value, timestamp), got {type(value).__name__}")
            ts = int(ts)
        else:
            v, ts = value, 0  # a plain store keeps no timestamp
        data = self._value(state, v, call)
        if data is None:
            state.known[kb] = state.written[kb] = _ABSENT
            run.ops.add(_DELETE, step, target, kb, None, 0, 0)
            return
        state.known[kb] = state.written[kb] = (data, ts)
        run.ops.add(_PUT, step, target, kb, data, ts, 0)

    def put(self, key: Any, value: Any) -> None:
        run = self.ctx.host._run
        state = self._st
        if run is None or run is not self._run or state is None or key is None or value is None or self.timestamped:
            run, state = self._state("put")
            self._write(run, state, self._key(state, key, "put"), value, "put")
            return
        # The fast path: a plain store, a value.
        try:
            kb = state.kenc(key)
        except Exception:
            kb = self._key(state, key, "put")
        try:
            data = state.venc(value)
        except Exception:
            self._write(run, state, kb, value, "put")  # names the serde, or fails the call
            return
        entry = (data, 0)  # a plain store keeps no timestamp
        state.known[kb] = state.written[kb] = entry
        run.ops.ops.append((_PUT, self._step, self._target, kb, data, 0, 0))

    def put_if_absent(self, key: Any, value: Any) -> Any:
        run, state = self._state("put_if_absent")
        kb = self._key(state, key, "put_if_absent")
        old = self._out(state, self._lookup(run, state, kb))
        if old is None:
            self._write(run, state, kb, value, "put_if_absent")
        return old

    def put_all(self, entries: Any) -> None:
        for k, v in entries:
            self.put(k, v)

    def delete(self, key: Any) -> Any:
        run, state = self._state("delete")
        kb = self._key(state, key, "delete")
        old = self._out(state, self._lookup(run, state, kb))
        self._write(run, state, kb, None, "delete")
        return old

    def range(self, from_: Any = None, to: Any = None) -> _Iter:
        return self._range(from_, to, False, "range")

    def reverse_range(self, from_: Any = None, to: Any = None) -> _Iter:
        return self._range(from_, to, True, "reverse_range")

    def all(self) -> _Iter:
        run, state = self._state("all")
        return _Iter(self._scan(run, state, {"all": True}, None, None, None, False))

    def reverse_all(self) -> _Iter:
        run, state = self._state("reverse_all")
        return _Iter(self._scan(run, state, {"all": True}, None, None, None, True))

    def prefix_scan(self, prefix: Any) -> _Iter:
        run, state = self._state("prefix_scan")
        p = self._prefix(state, prefix)
        return _Iter(self._scan(run, state, {"prefix": p}, None, None, p, False))

    def approximate_num_entries(self) -> int:
        with self.all() as it:
            return sum(1 for _ in it)

    def _range(self, from_: Any, to: Any, reverse: bool, call: str) -> _Iter:
        run, state = self._state(call)
        lo = None if from_ is None else self._key(state, from_, call)
        hi = None if to is None else self._key(state, to, call)
        r = pb.KeyRange()
        if lo is not None:
            setattr(r, "from", lo)  # a Python keyword
        if hi is not None:
            r.to = hi
        return _Iter(self._scan(run, state, {"range": r}, lo, hi, None, reverse))

    def _scan(
        self, run: _Run, state: _StoreState, query: dict[str, Any], lo: bytes | None, hi: bytes | None, prefix: bytes | None, reverse: bool
    ) -> Iterator[tuple[Any, Any]]:
        """The engine's entries in range, chunk by chunk, with the bundle's
        writes (as they were when the iterator was made) merged in: a put
        replaces or adds its key, a delete hides it."""

        def inside(k: bytes) -> bool:
            if prefix is not None:
                return k.startswith(prefix)
            return (lo is None or k >= lo) and (hi is None or k <= hi)

        writes = sorted(((k, e) for k, e in state.written.items() if inside(k)), reverse=reverse)
        return self._merge(run, state, query, writes, reverse)

    def _merge(
        self, run: _Run, state: _StoreState, query: dict[str, Any], writes: list[tuple[bytes, tuple[bytes | None, int]]], reverse: bool
    ) -> Iterator[tuple[Any, Any]]:
        key_serde = state.key_serde
        wi, nw = 0, len(writes)
        for k, v, t in run.read_all(state, query, reverse):
            while wi < nw and (writes[wi][0] > k if reverse else writes[wi][0] < k):
                wk, we = writes[wi]
                wi += 1
                if we[0] is not None:
                    yield decode(key_serde, wk), self._out(state, we)
            if wi < nw and writes[wi][0] == k:
                wk, we = writes[wi]
                wi += 1
                if we[0] is not None:
                    yield decode(key_serde, wk), self._out(state, we)
                continue
            if k not in state.written:
                state.known.setdefault(k, (v, t))
            if v is not None:
                yield decode(key_serde, k), self._out(state, (v, t))
        for wk, we in writes[wi:]:
            if we[0] is not None:
                yield decode(key_serde, wk), self._out(state, we)


class _WindowStore(_Store):
    """A processor's window store over the overlay: rows per (key, window start)."""

    __slots__ = ()

    def put(self, key: Any, value: Any, window_start: int) -> None:
        run, state = self._state("put")
        kb = self._key(state, key, "put")
        ws = int(window_start)
        data = self._value(state, value, "put")
        step = run.step_of[self.ctx.node]
        target = run.target(step, self.name)
        if state.retain_duplicates:
            if data is None:
                return  # Kafka Streams: a null put into a store with duplicates is ignored
            state.dups.append((kb, ws, data))
        else:
            state.known[(kb, ws)] = state.written[(kb, ws)] = (data, run.time) if data is not None else _ABSENT
        # A null value deletes the window's row, as Kafka Streams' put(key,
        # null, start): a DELETE op carrying the window start.
        run.ops.add(_PUT if data is not None else _DELETE, step, target, kb, data, ws, 0)

    def fetch(self, key: Any, time: int) -> Any:
        run, state = self._state("fetch")
        kb = self._key(state, key, "fetch")
        t = int(time)
        for ws, v in self._rows(run, state, kb, t, t, False):
            return v
        return None

    def fetch_range(self, key: Any, time_from: int, time_to: int) -> _Iter:
        run, state = self._state("fetch_range")
        kb = self._key(state, key, "fetch_range")
        return _Iter(self._rows(run, state, kb, int(time_from), int(time_to), False))

    def backward_fetch_range(self, key: Any, time_from: int, time_to: int) -> _Iter:
        run, state = self._state("backward_fetch_range")
        kb = self._key(state, key, "backward_fetch_range")
        return _Iter(self._rows(run, state, kb, int(time_from), int(time_to), True))

    def fetch_all(self, time_from: int, time_to: int) -> _Iter:
        run, state = self._state("fetch_all")
        w = pb.WindowFetch(from_ms=int(time_from), to_ms=int(time_to))
        return _Iter(self._all(run, state, {"window_fetch": w}, int(time_from), int(time_to)))

    def all(self) -> _Iter:
        run, state = self._state("all")
        return _Iter(self._all(run, state, {"all": True}, None, None))

    def _writes(self, state: _StoreState, kb: bytes | None, lo: int | None, hi: int | None) -> list[tuple[tuple[bytes, int], bytes | None]]:
        """The bundle's writes of key kb (None: every key) in the time range,
        in (key, window start) order."""
        out: list[tuple[tuple[bytes, int], bytes | None]] = []
        for (k, ws), (v, _) in state.written.items():
            if (kb is None or k == kb) and (lo is None or ws >= lo) and (hi is None or ws <= hi):
                out.append(((k, ws), v))
        out.sort(key=lambda e: e[0])
        return out

    def _merged(
        self, rows: Iterator[tuple[bytes, int, bytes | None]], writes: list[tuple[tuple[bytes, int], bytes | None]],
        dups: list[tuple[bytes, int, bytes]], reverse: bool,
    ) -> Iterator[tuple[bytes, int, bytes]]:
        """rows (in order) with writes merged in, and rows put with duplicates added."""
        if reverse:
            writes = writes[::-1]
        wi, nw = 0, len(writes)

        def before(a: tuple[bytes, int], b: tuple[bytes, int]) -> bool:
            return a > b if reverse else a < b

        out: list[tuple[bytes, int, bytes]] = []
        for k, ws, v in rows:
            while wi < nw and before(writes[wi][0], (k, ws)):
                (wk, wws), wv = writes[wi]
                wi += 1
                if wv is not None:
                    out.append((wk, wws, wv))
            if wi < nw and writes[wi][0] == (k, ws):
                (wk, wws), wv = writes[wi]
                wi += 1
                if wv is not None:
                    out.append((wk, wws, wv))
                continue
            if v is not None:
                out.append((k, ws, v))
            if len(out) > 64:
                yield from out
                out = []
        for (wk, wws), wv in writes[wi:]:
            if wv is not None:
                out.append((wk, wws, wv))
        if dups:
            out.extend(dups)
            out.sort(key=lambda r: (r[0], r[1]), reverse=reverse)
        yield from out

    def _rows(self, run: _Run, state: _StoreState, kb: bytes, lo: int, hi: int, reverse: bool) -> Iterator[tuple[int, Any]]:
        writes = self._writes(state, kb, lo, hi)
        dups = [d for d in state.dups if d[0] == kb and lo <= d[1] <= hi]
        if kb in state.covered:
            if kb in state.prefetched:
                state.hits.add(kb)
            base = [
                (k, ws, entry[0])
                for (k, ws), entry in state.known.items()
                if k == kb and lo <= ws <= hi and (k, ws) not in state.written
            ]
            base.sort(key=_window_start, reverse=reverse)
            src: Iterator[tuple[bytes, int, bytes | None]] = iter(base)
        else:
            w = pb.WindowFetch(from_ms=lo, to_ms=hi)
            w.key = kb
            src = ((k, ws, v) for k, v, _, ws in run.read_all(state, {"window_fetch": w}, reverse, windows=True))
        return self._decoded(state, self._merged(src, writes, dups, reverse))

    @staticmethod
    def _decoded(state: _StoreState, rows: Iterator[tuple[bytes, int, bytes]]) -> Iterator[tuple[int, Any]]:
        for _, ws, v in rows:
            yield ws, decode(state.value_serde, v)

    def _all(self, run: _Run, state: _StoreState, query: dict[str, Any], lo: int | None, hi: int | None) -> Iterator[tuple[Any, Any]]:
        writes = self._writes(state, None, lo, hi)
        dups = [d for d in state.dups if (lo is None or d[1] >= lo) and (hi is None or d[1] <= hi)]
        src = ((k, ws, v) for k, v, _, ws in run.read_all(state, query, False, windows=True))
        return self._windowed(state, self._merged(src, writes, dups, False))

    @staticmethod
    def _windowed(state: _StoreState, rows: Iterator[tuple[bytes, int, bytes]]) -> Iterator[tuple[Any, Any]]:
        size = state.window_size
        for k, ws, v in rows:
            yield Windowed(decode(state.key_serde, k), ws, ws + size), decode(state.value_serde, v)


def _window_start(row: tuple[bytes, int, bytes | None]) -> int:
    return row[1]


class _Run:
    """One processor bundle being run: its steps, store overlays, ops and
    the entry in hand (its time and record metadata)."""

    __slots__ = (
        "host", "bundle", "steps", "step_of", "stores_of", "children_of", "stores", "ops", "record", "offsets", "time", "input_headers", "out_key_serde",
        "out_value_serde", "kenc", "venc", "fixed_of", "proc_of", "local_of", "insts",
    )

    def __init__(self, host: ProcessorHost, bundle: pb.Bundle) -> None:
        self.host = host
        self.bundle = bundle
        self.steps = list(bundle.steps)
        self.step_of: dict[str, int] = {}
        for i, s in enumerate(self.steps):
            self.step_of.setdefault(s.node, i)
        self.stores_of = [list(s.stores) for s in self.steps]
        self.children_of = [list(s.children) for s in self.steps]
        self.stores: dict[str, _StoreState] = {}
        for i, v in enumerate(bundle.stores):
            self.stores[v.store] = _StoreState(v, i, host.store_specs.get(v.store))
        self.ops = _Ops()
        self.record = -1  # the record in hand (-1: an init, punctuation or close)
        self.offsets: list[int] = []
        self.time = 0
        self.input_headers: Headers = ()
        self.out_key_serde = bundle.output_key_serde or bundle.key_serde or "bytes"
        self.out_value_serde = bundle.output_value_serde or bundle.value_serde or "bytes"
        self.kenc = encoder(self.out_key_serde) or _no_encoder(self.out_key_serde)
        self.venc = encoder(self.out_value_serde) or _no_encoder(self.out_value_serde)
        self.fixed_of = [s.operation == _PROCESS_VALUES for s in self.steps]
        self.proc_of = [s.operation in _PROCESSORS for s in self.steps]
        self.local_of = [any(c in self.step_of for c in cs) for cs in self.children_of]  # a child is a step of the bundle
        self.insts: list[_Instance | None] = [None] * len(self.steps)  # this run's instance of each step

    def record_metadata(self) -> RecordMetadata | None:
        """Where the record in hand came from (None outside a record); made when asked."""
        i = self.record
        if i < 0:
            return None
        b = self.bundle
        return RecordMetadata(b.topic, b.partition, self.offsets[i], self.time, self.input_headers)

    def target(self, step: int, store: str) -> int:
        """The op target of a store of a step: its index in the step's stores."""
        names = self.stores_of[step]
        return names.index(store) if store in names else 0

    # Reads.

    def _read(self, state: _StoreState, reverse: bool, continuation: bytes, query: Mapping[str, Any]) -> pb.ReadResponse:
        read = self.host.read
        if read is None:
            raise LookupError(f"store {state.name!r}: the bundle did not bring what was read, and this host has no engine to Read from")
        req = pb.ReadRequest(bundle_id=self.bundle.id, store=state.name, reverse=reverse, continuation=continuation)
        for f, v in query.items():
            if isinstance(v, (pb.KeyRange, pb.WindowFetch)):
                getattr(req, f).CopyFrom(v)
            else:
                setattr(req, f, v)
        return read(req)

    def read(self, state: _StoreState, **query: Any) -> pb.ReadResponse:
        return self._read(state, False, b"", query)

    def read_all(
        self, state: _StoreState, query: Mapping[str, Any], reverse: bool, windows: bool = False
    ) -> Iterator[Any]:
        """The entries of a query, chunk by chunk (continuation): (key,
        value, timestamp), with the window start when windows."""
        cont = b""
        while True:
            resp = self._read(state, reverse, cont, query)
            keys = _split(resp.keys, resp.key_lengths)
            values = _split(resp.values, resp.value_lengths)
            times = list(resp.timestamps) or [0] * len(keys)
            if windows:
                starts = list(resp.windows) or [0] * len(keys)
                for k, v, t, w in zip(keys, values, times, starts):
                    if k is not None:
                        yield k, v, t, w
            else:
                for k, v, t in zip(keys, values, times):
                    if k is not None:
                        yield k, v, t
            cont = resp.continuation
            if not cont:
                return

    # Forwards.

    def forward(self, ctx: _Context, record: Any, child: str | None) -> None:
        step_i = self.step_of.get(ctx.node)
        if step_i is None:
            raise ValueError(f"forward: node {ctx.node} is not a step of this bundle")
        children = self.children_of[step_i]
        if child is not None and child not in children:
            raise ValueError(f"forward: node {ctx.node} has no child {child!r} (children: [{', '.join(children)}])")
        if ctx.fixed_key:
            if not isinstance(record, FixedKeyRecord):
                raise TypeError(
                    f"forward: node {ctx.node} is a fixed-key processor (process_values): forward the record it was given, "
                    f"changed by with_value, with_timestamp or with_headers (a FixedKeyRecord), not {type(record).__name__}"
                )
            if self.record < 0:
                raise ValueError(f"forward: node {ctx.node} is a fixed-key processor (process_values): there is no input record whose key to keep")
        elif not isinstance(record, Record):
            raise TypeError(f"forward: node {ctx.node}: want a Record, got {type(record).__name__}")
        if child is None and not self.local_of[step_i]:
            self._forward_op(ctx, step_i, 0, record)  # the common case: no child is a step of the bundle
            return
        targets = children if child is None else [child]
        if any(c in self.step_of for c in targets):
            for c in targets:
                if c in self.step_of:
                    self.host._deliver(self, self.step_of[c], record)
                else:
                    self._forward_op(ctx, step_i, children.index(c) + 1, record)
        elif child is None:
            self._forward_op(ctx, step_i, 0, record)
        else:
            self._forward_op(ctx, step_i, children.index(child) + 1, record)

    def _forward_op(self, ctx: _Context, step: int, target: int, record: Any) -> None:
        # A fixed-key processor's forward carries its (the input's) key too,
        # as the processors host vectors pin.
        key, value = record.key, record.value
        try:
            kb = None if key is None else self.kenc(key)
        except Exception:
            try:
                kb = encode(self.out_key_serde, key)
            except (TypeError, ValueError, OverflowError) as e:
                raise TypeError(f"forward: node {ctx.node}: cannot encode key {key!r} with serde {self.out_key_serde!r}: {e}") from None
        try:
            vb = None if value is None else self.venc(value)
        except Exception:
            try:
                vb = encode(self.out_value_serde, value)
            except (TypeError, ValueError, OverflowError) as e:
                raise TypeError(f"forward: node {ctx.node}: cannot encode value {value!r} with serde {self.out_value_serde!r}: {e}") from None
        ops = self.ops
        ops.ops.append((_FORWARD, step, target, kb, vb, record.timestamp, 0))
        h = record.headers
        ops.hdrs.append(None if h is self.input_headers or h == self.input_headers else h)


class ProcessorHost:
    """The processor mode of an Executor: the processor instances of the
    tasks it serves (per task and node) and their punctuators, across
    bundles. ``read`` makes a Read call to the engine (None: reads the
    bundle did not bring fail)."""

    def __init__(
        self,
        functions: Mapping[int, Callable[..., Any]],
        loop: Loop,
        *,
        read: ReadFn | None = None,
        application_id: str = "",
        store_specs: Mapping[str, StoreBuilder] | None = None,
    ) -> None:
        self.functions = functions
        self.loop = loop
        self.read = read
        self.application_id = application_id
        self.store_specs: Mapping[str, StoreBuilder] = store_specs if store_specs is not None else {}
        self._instances: dict[tuple[str, str], _Instance] = {}
        self._run: _Run | None = None

    def close(self) -> None:
        """Drops every instance (without calling close(): the engine sends
        close entries for the tasks it closes)."""
        self._instances.clear()

    # Calls of user code.

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        r = fn(*args)
        if r is None:
            return r
        if is_awaitable(r):
            got = self.loop.gather([r], lambda: f"processor function {function_name(fn)}")[0]
            if type(got) is Failed:
                raise _Raised(got.message)
            return got
        return r

    def _failure(self, e: BaseException) -> str:
        return str(e) if type(e) is _Raised else _text(e)

    def _instance(self, run: _Run, step_i: int, make: bool) -> _Instance:
        step = run.steps[step_i]
        key = (run.bundle.task, step.node)
        inst = self._instances.get(key)
        if inst is not None:
            return inst
        if not make:
            raise LookupError(f"node {step.node} has no processor in task {run.bundle.task} on this host")
        return self._init(run, step_i)

    def _init(self, run: _Run, step_i: int) -> _Instance:
        """Makes the step's processor for the bundle's task and calls init."""
        step = run.steps[step_i]
        key = (run.bundle.task, step.node)
        old = self._instances.pop(key, None)
        if old is not None:
            self._drop(old)
        supplier = self.functions.get(step.token)
        if supplier is None:
            raise _StepFailed(step_i, f"LookupError: step {step_i} ({step.node}) names token {step.token}, which is not registered in this host")
        ctx = _Context(self, step.node, run.bundle.task, step.operation == _PROCESS_VALUES)
        try:
            processor = supplier()
        except Exception as e:
            raise _StepFailed(step_i, _text(e)) from None
        inst = _Instance(processor, ctx)
        self._instances[key] = inst
        run.insts[step_i] = inst
        init = getattr(processor, "init", None)
        if init is not None:
            try:
                self._call(init, ctx)
            except _StepFailed:
                raise
            except Exception as e:
                inst.broken = f"init of node {step.node} in task {run.bundle.task} failed: {self._failure(e)}"
                raise _StepFailed(step_i, self._failure(e)) from None
        return inst

    def _drop(self, inst: _Instance) -> None:
        for s in inst.schedules.values():
            s.cancelled = True
        inst.schedules.clear()

    def _deliver(self, run: _Run, step_i: int, record: Any) -> None:
        """Runs step step_i's processor on record (a forward to a child that
        is a step of the bundle, or a record of the bundle at step 0)."""
        if not run.proc_of[step_i]:
            self._stateless(run, step_i, record)
            return
        inst = run.insts[step_i]
        if inst is None:
            inst = run.insts[step_i] = self._instance(run, step_i, make=True)
        if inst.broken is not None:
            raise _StepFailed(step_i, inst.broken)
        if run.fixed_of[step_i]:
            if type(record) is not FixedKeyRecord:
                record = FixedKeyRecord(record.key, record.value, record.timestamp, record.headers)
        elif type(record) is not Record:
            record = Record(record.key, record.value, record.timestamp, record.headers)
        try:
            self._call(inst.processor.process, record)
        except _StepFailed:
            raise
        except Exception as e:
            raise _StepFailed(step_i, self._failure(e)) from None

    def _stateless(self, run: _Run, step_i: int, record: Any) -> None:
        """Runs a stateless step (map_values, filter, ...) of a processor
        bundle on one record: its outputs go to the next step, or leave the
        bundle as FORWARD ops of this step (to all its children)."""
        step = run.steps[step_i]
        fn = self.functions.get(step.token)
        if fn is None:
            raise _StepFailed(step_i, f"LookupError: step {step_i} ({step.node}) names token {step.token}, which is not registered in this host")
        op = step.operation
        k, v = record.key, record.value
        extra: tuple[Any, ...] = ()
        if _level(step, fn):
            extra = (run.record_metadata(),)
        f = unwrap(fn)
        try:
            if op == pb.OPERATION_MAP_VALUES:
                outs = [(k, self._call(f, v, *extra))]
            elif op == pb.OPERATION_MAP_VALUES_WITH_KEY:
                outs = [(k, self._call(f, k, v, *extra))]
            elif op in (pb.OPERATION_FILTER, pb.OPERATION_FILTER_NOT):
                keep = bool(self._call(f, k, v, *extra)) != (op == pb.OPERATION_FILTER_NOT)
                outs = [(k, v)] if keep else []
            elif op == pb.OPERATION_FLAT_MAP_VALUES:
                outs = [(k, x) for x in self._call(f, v, *extra)]
            elif op == pb.OPERATION_FLAT_MAP_VALUES_WITH_KEY:
                outs = [(k, x) for x in self._call(f, k, v, *extra)]
            elif op == pb.OPERATION_MAP:
                nk, nv = self._call(f, k, v, *extra)
                outs = [(nk, nv)]
            elif op == pb.OPERATION_FLAT_MAP:
                outs = [(nk, nv) for nk, nv in self._call(f, k, v, *extra)]
            elif op == pb.OPERATION_SELECT_KEY:
                outs = [(self._call(f, k, v, *extra), v)]
            elif op == pb.OPERATION_PEEK:
                self._call(f, k, v, *extra)
                outs = [(k, v)]
            elif op == pb.OPERATION_FOREACH:
                self._call(f, k, v, *extra)
                outs = []
            else:
                raise ValueError(f"step {step_i} ({step.node}) has operation {op}, which a processor bundle cannot run")
        except _StepFailed:
            raise
        except Exception as e:
            raise _StepFailed(step_i, self._failure(e)) from None
        last = step_i + 1 >= len(run.steps)
        ts, hs = record.timestamp, record.headers
        if extra and extra[0] is not None:  # a with_metadata function may set its outputs' timestamp and headers
            m = extra[0]
            ts, hs = int(m.timestamp), (record.headers if m.headers is record.headers else headers_of(m.headers))
        for nk, nv in outs:
            r = Record(nk, nv, ts, hs)
            if last:
                run._forward_op(self._stateless_ctx(run, step_i), step_i, 0, r)
            else:
                self._deliver(run, step_i + 1, r)

    def _stateless_ctx(self, run: _Run, step_i: int) -> _Context:
        return _Context(self, run.steps[step_i].node, run.bundle.task, False)

    # A bundle.

    def process(self, b: pb.Bundle) -> pb.BundleResult:
        result = pb.BundleResult(bundle_id=b.id)
        n = len(b.value_lengths)
        entries = len(b.inits) + n + len(b.after)
        broken = None
        for i, s in enumerate(b.steps):
            if s.operation not in _PROCESSORS and s.operation not in STATELESS:
                broken = (i, f"ValueError: step {i} ({s.node}) has operation {s.operation}, which a processor bundle cannot run")
                break
        try:
            run = _Run(self, b)
        except ValueError as err:
            broken = (0, f"ValueError: {err}")
        if broken is not None:
            result.op_counts.extend([0] * entries)
            step, msg = broken
            result.failures.extend(pb.RecordFailure(index=i, step=step, message=msg, kind=PROCESSING) for i in range(entries))
            return result
        failures: list[pb.RecordFailure] = []
        self._run = run
        try:
            entry = 0
            for init in b.inits:
                self._entry(run, entry, init, failures)
                entry += 1
            self._records(run, b, entry, failures)
            entry += n
            for after in b.after:
                self._entry(run, entry, after, failures)
                entry += 1
        finally:
            self._run = None
        run.ops.fill(result)
        result.failures.extend(failures)
        result.prefetch_hits.extend(len(s.hits) for s in sorted(run.stores.values(), key=lambda s: s.index))
        return result

    def _entry(self, run: _Run, index: int, e: pb.BundleEntry, failures: list[pb.RecordFailure]) -> None:
        run.record = -1
        run.input_headers = ()  # an init's, a punctuation's or a close's input headers are empty
        run.time = e.time_ms
        step_i = e.step
        try:
            if not 0 <= step_i < len(run.steps):
                raise _StepFailed(0, f"ValueError: malformed bundle: entry {index} names step {step_i} of {len(run.steps)}")
            if e.kind == _INIT:
                self._init(run, step_i)
            elif e.kind == _CLOSE:
                inst = self._instances.pop((run.bundle.task, run.steps[step_i].node), None)
                run.insts[step_i] = None
                if inst is not None:
                    self._drop(inst)
                    close = getattr(inst.processor, "close", None)
                    if close is not None:
                        try:
                            self._call(close)
                        except Exception as ex:
                            raise _StepFailed(step_i, self._failure(ex)) from None
            elif e.kind in (_PUNCTUATE_STREAM, _PUNCTUATE_WALL):
                node = run.steps[step_i].node
                inst = self._instances.get((run.bundle.task, node))
                s = None if inst is None else inst.schedules.get(e.schedule)
                if s is None:
                    raise _StepFailed(
                        step_i, f"LookupError: punctuate: node {node} in task {run.bundle.task} has no schedule {e.schedule} on this host"
                    )
                try:
                    self._call(s.fn, e.time_ms)
                except _StepFailed:
                    raise
                except Exception as ex:
                    raise _StepFailed(step_i, self._failure(ex)) from None
            else:
                raise _StepFailed(step_i, f"ValueError: malformed bundle: entry {index} has kind {e.kind}")
        except _StepFailed as f:
            failures.append(pb.RecordFailure(index=index, step=f.step, message=f.message, kind=PROCESSING))
        run.ops.end_entry()

    def _records(self, run: _Run, b: pb.Bundle, first: int, failures: list[pb.RecordFailure]) -> None:
        value_lengths = list(b.value_lengths)
        n = len(value_lengths)
        if n == 0:
            return
        vals, vfail = decode_column(b.value_serde or "bytes", b.values, value_lengths)
        key_lengths = list(b.key_lengths)
        if len(key_lengths) != n:
            keys: list[Any] = [None] * n
            kfail = dict.fromkeys(range(n), f"ValueError: malformed bundle: {len(key_lengths)} keys for {n} values")
        else:
            keys, kfail = decode_column(b.key_serde or "bytes", b.keys, key_lengths)
        run.offsets = list(b.offsets) or [0] * n
        times = list(b.timestamps) or [0] * n
        headers = read_headers(b, n)
        fixed = run.steps[0].operation == _PROCESS_VALUES
        make: Callable[..., Any] = FixedKeyRecord if fixed else Record
        deliver = self._deliver
        ops = run.ops
        oplist, counts = ops.ops, ops.counts
        undecoded = {**vfail, **kfail}
        for i in range(n):
            if undecoded and i in undecoded:
                failures.append(pb.RecordFailure(index=first + i, step=0, message=undecoded[i], kind=DESERIALIZATION))
                ops.end_entry()
                continue
            h = headers[i]
            ts = times[i]
            run.record = i
            run.time = ts
            run.input_headers = h
            try:
                deliver(run, 0, make(keys[i], vals[i], ts if ts >= 0 else 0, h))
            except _StepFailed as f:
                failures.append(pb.RecordFailure(index=first + i, step=f.step, message=f.message, kind=PROCESSING))
            end = len(oplist)
            counts.append(end - ops.mark)
            ops.mark = end


def read_headers(b: pb.Bundle, n: int) -> list[Headers]:
    """Each record's headers, from a bundle's header columns."""
    counts = list(b.header_counts)
    if not counts:
        return [()] * n
    keys = _split(b.header_keys, b.header_key_lengths)
    values = _split(b.header_values, b.header_value_lengths)
    out: list[Headers] = []
    pos = 0
    for c in counts:
        if c <= 0:
            out.append(())
            continue
        out.append(tuple(((keys[j] or b"").decode("utf-8", "replace"), values[j]) for j in range(pos, pos + c)))
        pos += c
    out.extend([()] * (n - len(out)))
    return out
