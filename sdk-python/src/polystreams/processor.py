"""The Processor API (Kafka Streams' ``org.apache.kafka.streams.processor.api``).

A processor is custom logic over records with state stores, any number of
forwarded records and punctuators (timers)::

    from polystreams.processor import Processor, ProcessorContext, PunctuationType, Record, Stores

    class CountPerKey(Processor):
        def init(self, context: ProcessorContext) -> None:
            self.context = context
            self.counts = context.get_state_store("counts")
            context.schedule(60_000, PunctuationType.STREAM_TIME, self.emit)

        def process(self, record: Record) -> None:
            self.counts.put(record.key, (self.counts.get(record.key) or 0) + 1)

        def emit(self, timestamp: int) -> None:
            with self.counts.all() as entries:
                for key, count in list(entries):
                    self.context.forward(Record(key, count, timestamp))
                    self.counts.delete(key)

    app.add_state_store(Stores.key_value_store("counts", key="string", value="long"))
    app.stream("words", key="string").process(CountPerKey, stores=["counts"]).to("counts-per-minute")

The engine keeps the stores; a bundle of records brings the current entries
of the keys it touches, and what a processor reads beyond them is read from
the engine while the bundle runs (docs/design/processor.md). Writes are seen
by the reads after them at once (read-your-writes). ``process`` (and
``init``, ``close`` and punctuators) may be ``async def``: they are awaited
one record at a time, in order, so that each record sees the writes of the
one before.
"""

from __future__ import annotations

import datetime
import enum
import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Literal, NamedTuple, Protocol, TypeVar

from polystreams._session import Session
from polystreams.serde import SerdeName
from polystreams.store import VersionedRecord
from polystreams.v1alpha1 import engine_pb2 as pb

if TYPE_CHECKING:
    from polystreams.windows import Windowed

__all__ = [
    "PUT_RETURN_CODE_NOT_PUT",
    "PUT_RETURN_CODE_VALID_TO_UNDEFINED",
    "Cancellable",
    "FixedKeyProcessor",
    "FixedKeyRecord",
    "Headers",
    "KeyValueIterator",
    "KeyValueStore",
    "Processor",
    "ProcessorContext",
    "PunctuationType",
    "Record",
    "RecordMetadata",
    "StoreBuilder",
    "Stores",
    "TimestampedKeyValueStore",
    "Topology",
    "ValueAndTimestamp",
    "ValueTransformerWithKey",
    "ValueTransformerWithKeySupplier",
    "VersionedKeyValueStore",
    "WindowStore",
    "with_metadata",
]

Headers = tuple[tuple[str, "bytes | None"], ...]
"""A record's headers: (key, value) pairs in order (a key may repeat; a
value may be None)."""

HeadersLike = Mapping[str, "bytes | str | None"] | Iterable[tuple[str, "bytes | str | None"]]
"""Headers as a caller may give them: a mapping, or (key, value) pairs; str
values are encoded as UTF-8."""


def headers_of(h: HeadersLike | None) -> Headers:
    """Headers in their one form: a tuple of (str, bytes | None) pairs."""
    if h is None:
        return ()
    if isinstance(h, tuple) and all(type(p) is tuple and len(p) == 2 and (p[1] is None or type(p[1]) is bytes) for p in h):
        return h
    pairs = h.items() if isinstance(h, Mapping) else h
    out: list[tuple[str, bytes | None]] = []
    for k, v in pairs:
        if not isinstance(k, str):
            raise TypeError(f"headers: a key must be a str, got {type(k).__name__}")
        if v is None:
            out.append((k, None))
        elif isinstance(v, str):
            out.append((k, v.encode()))
        elif isinstance(v, (bytes, bytearray, memoryview)):
            out.append((k, bytes(v)))
        else:
            raise TypeError(f"headers: the value of {k!r} must be bytes, str or None, got {type(v).__name__}")
    return tuple(out)


K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class Record(Generic[K, V]):
    """A record a processor receives and forwards (Kafka Streams'
    ``api.Record``): key, value, timestamp (epoch ms) and headers. Immutable:
    ``with_value`` and the other ``with_*`` methods answer a new record."""

    key: K
    value: V
    timestamp: int = 0
    headers: Headers = field(default=())

    def __post_init__(self) -> None:
        if self.timestamp < 0:
            raise ValueError(f"Record: timestamp must not be negative, got {self.timestamp}")

    def with_key(self, key: Any) -> Record[Any, V]:
        return Record(key, self.value, self.timestamp, self.headers)

    def with_value(self, value: Any) -> Record[K, Any]:
        return Record(self.key, value, self.timestamp, self.headers)

    def with_timestamp(self, timestamp: int) -> Record[K, V]:
        return replace(self, timestamp=int(timestamp))

    def with_headers(self, headers: HeadersLike | None) -> Record[K, V]:
        return replace(self, headers=headers_of(headers))


@dataclass(frozen=True, slots=True)
class FixedKeyRecord(Generic[K, V]):
    """A record of a fixed-key processor (``process_values``; Kafka Streams'
    ``api.FixedKeyRecord``): as :class:`Record`, but its key cannot change."""

    key: K
    value: V
    timestamp: int = 0
    headers: Headers = field(default=())

    def with_value(self, value: Any) -> FixedKeyRecord[K, Any]:
        return FixedKeyRecord(self.key, value, self.timestamp, self.headers)

    def with_timestamp(self, timestamp: int) -> FixedKeyRecord[K, V]:
        return replace(self, timestamp=int(timestamp))

    def with_headers(self, headers: HeadersLike | None) -> FixedKeyRecord[K, V]:
        return replace(self, headers=headers_of(headers))


@dataclass(slots=True)
class RecordMetadata:
    """Where a record came from: topic, partition and offset (a processor's
    ``context.record_metadata()``), and, for a function wrapped by
    :func:`with_metadata`, its timestamp and headers, which the function may
    set for its outputs."""

    topic: str
    partition: int
    offset: int
    timestamp: int = 0
    headers: Headers = field(default=())


class PunctuationType(enum.Enum):
    """When a punctuator runs (Kafka Streams' ``PunctuationType``):
    ``STREAM_TIME`` as the task's stream time (the largest record timestamp
    seen) passes each interval, ``WALL_CLOCK_TIME`` as the system's clock
    does (the test driver's ``advance_wall_clock``)."""

    STREAM_TIME = "stream_time"
    WALL_CLOCK_TIME = "wall_clock_time"


Punctuator = Callable[[int], Any]
"""``punctuator(timestamp)``: called with the stream or wall-clock time it
runs at; may be ``async def``."""


class Cancellable(Protocol):
    """What :meth:`ProcessorContext.schedule` answers: ``cancel()`` stops
    the punctuator."""

    def cancel(self) -> None: ...


class ProcessorContext(Protocol):
    """What a processor is given in ``init`` (Kafka Streams'
    ``api.ProcessorContext``); keep it to forward records and reach stores
    later."""

    @property
    def application_id(self) -> str: ...

    @property
    def task_id(self) -> str:
        """The task, ``<subtopology>_<partition>`` (e.g. ``0_3``)."""
        ...

    def forward(self, record: Any, child: str | None = None) -> None:
        """Sends ``record`` to every child of the node, or to the child
        named ``child``; raises naming the node and its children when it
        has no such child."""
        ...

    def get_state_store(self, name: str) -> Any:
        """The store ``name``, which the processor must name in ``stores``
        (a :class:`KeyValueStore`, :class:`TimestampedKeyValueStore` or
        :class:`WindowStore`)."""
        ...

    def schedule(
        self,
        interval: int | datetime.timedelta,
        type: PunctuationType | Literal["stream_time", "wall_clock_time"],
        punctuator: Punctuator,
    ) -> Cancellable:
        """Calls ``punctuator(timestamp)`` every ``interval`` (ms, or a
        timedelta; at least 1 ms) of stream or wall-clock time."""
        ...

    def record_metadata(self) -> RecordMetadata | None:
        """Topic, partition and offset of the record being processed; None
        in a punctuator (and in ``init`` and ``close``)."""
        ...


class Processor:
    """A processor (Kafka Streams' ``api.Processor``): one instance per task,
    made by calling the class (or supplier) given to ``process``.

    Override ``process(record)``; ``init(context)`` is called first (keep
    the context), ``close()`` when the task closes. Each may be ``async
    def``."""

    def init(self, context: ProcessorContext) -> Any:
        pass

    def process(self, record: Record[Any, Any]) -> Any:
        raise NotImplementedError(f"{type(self).__qualname__}.process")

    def close(self) -> Any:
        pass


class FixedKeyProcessor:
    """A fixed-key processor (``process_values``; Kafka Streams'
    ``api.FixedKeyProcessor``): it receives :class:`FixedKeyRecord` and
    forwards records with the input's key (``record.with_value(...)``), so
    no repartition follows."""

    def init(self, context: ProcessorContext) -> Any:
        pass

    def process(self, record: FixedKeyRecord[Any, Any]) -> Any:
        raise NotImplementedError(f"{type(self).__qualname__}.process")

    def close(self) -> Any:
        pass


class ValueTransformerWithKey:
    """A table's value transformer (``KTable.transform_values``; Kafka
    Streams' ``ValueTransformerWithKey``): one instance per task, made by
    calling the class (or supplier) given to ``transform_values``.

    Override ``transform(key, value)``, which answers the new value (None:
    null). It is called for a tombstone too (``value`` None). ``init(context)``
    is called first: keep the context to reach the stores named in
    ``stores`` and to schedule punctuators; its ``forward`` raises, as the
    result is what ``transform`` answers. ``close()`` is called when the task
    closes. ``transform`` may be ``async def``."""

    def init(self, context: ProcessorContext) -> Any:
        pass

    def transform(self, key: Any, value: Any) -> Any:
        raise NotImplementedError(f"{type(self).__qualname__}.transform")

    def close(self) -> Any:
        pass


ValueTransformerWithKeySupplier = Callable[[], ValueTransformerWithKey]
"""What makes a task's transformer: its class, or any callable answering a
new instance (Kafka Streams' ``ValueTransformerWithKeySupplier``)."""


class _NoForwardContext:
    """Kafka Streams' ``ForwardingDisabledProcessorContext``: a transformer's
    context, whose ``forward`` raises naming the node."""

    __slots__ = ("_context",)

    def __init__(self, context: ProcessorContext) -> None:
        self._context = context

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)

    def __repr__(self) -> str:
        return repr(self._context)

    def forward(self, record: Any, child: str | None = None) -> None:
        node = getattr(self._context, "node", "?")
        raise RuntimeError(
            f"forward: node {node} is a transform_values node: its transformer answers the new value and cannot forward "
            "(ProcessorContext#forward() is not supported from this context)"
        )


class _TransformerProcessor(FixedKeyProcessor):
    """Runs a :class:`ValueTransformerWithKey` as the fixed-key processor
    the engine calls: each record's value is replaced by what ``transform``
    answers, forwarded once."""

    __slots__ = ("_context", "_transformer")

    def __init__(self, transformer: ValueTransformerWithKey) -> None:
        self._transformer = transformer
        self._context: ProcessorContext | None = None

    def init(self, context: ProcessorContext) -> Any:
        self._context = context
        return self._transformer.init(_NoForwardContext(context))

    def process(self, record: FixedKeyRecord[Any, Any]) -> Any:
        context = self._context
        if context is None:
            raise RuntimeError("transform_values: process before init")
        ctx: ProcessorContext = context
        value = self._transformer.transform(record.key, record.value)
        if inspect.isawaitable(value):
            awaited = value

            async def forward_later() -> None:
                ctx.forward(record.with_value(await awaited))

            return forward_later()
        context.forward(record.with_value(value))
        return None

    def close(self) -> Any:
        return self._transformer.close()


def _transformer_supplier(supplier: ValueTransformerWithKeySupplier) -> Callable[[], FixedKeyProcessor]:
    def make() -> FixedKeyProcessor:
        transformer = supplier()
        if not isinstance(transformer, ValueTransformerWithKey) and not callable(getattr(transformer, "transform", None)):
            raise TypeError(f"transform_values: the supplier answered {transformer!r}, which has no transform(key, value)")
        return _TransformerProcessor(transformer)

    make.__qualname__ = getattr(supplier, "__qualname__", None) or type(supplier).__qualname__
    return make


ProcessorSupplier = Callable[[], Processor | FixedKeyProcessor]
"""What makes a task's processor: the processor's class, or any callable
answering a new instance (Kafka Streams' ``ProcessorSupplier``)."""


class ValueAndTimestamp(NamedTuple):
    """A timestamped store's value (Kafka Streams' ``ValueAndTimestamp``)."""

    value: Any
    timestamp: int


class KeyValueIterator(Protocol[K, V]):
    """An iterator over a store's entries, in the order of their serialized
    keys; close it (or use ``with``) when done early."""

    def __iter__(self) -> Iterator[tuple[K, V]]: ...

    def __next__(self) -> tuple[K, V]: ...

    def __enter__(self) -> KeyValueIterator[K, V]: ...

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None: ...

    def close(self) -> None: ...


class KeyValueStore(Protocol):
    """A processor's key-value store (Kafka Streams' ``KeyValueStore``):
    keys and values are objects of the store's serdes."""

    name: str

    def get(self, key: Any) -> Any: ...

    def put(self, key: Any, value: Any) -> None: ...

    def put_if_absent(self, key: Any, value: Any) -> Any: ...

    def put_all(self, entries: Iterable[tuple[Any, Any]]) -> None: ...

    def delete(self, key: Any) -> Any: ...

    def range(self, from_: Any = None, to: Any = None) -> KeyValueIterator[Any, Any]: ...

    def reverse_range(self, from_: Any = None, to: Any = None) -> KeyValueIterator[Any, Any]: ...

    def all(self) -> KeyValueIterator[Any, Any]: ...

    def reverse_all(self) -> KeyValueIterator[Any, Any]: ...

    def prefix_scan(self, prefix: Any) -> KeyValueIterator[Any, Any]: ...

    def approximate_num_entries(self) -> int: ...


class TimestampedKeyValueStore(KeyValueStore, Protocol):
    """A key-value store whose values carry a timestamp: ``get`` answers a
    :class:`ValueAndTimestamp` (or None), ``put`` takes one (or a
    ``(value, timestamp)`` pair)."""


class WindowStore(Protocol):
    """A processor's window store (Kafka Streams' ``WindowStore``): values
    per key and window start."""

    name: str

    def put(self, key: Any, value: Any, window_start: int) -> None: ...

    def fetch(self, key: Any, time: int) -> Any: ...

    def fetch_range(self, key: Any, time_from: int, time_to: int) -> KeyValueIterator[int, Any]: ...

    def backward_fetch_range(self, key: Any, time_from: int, time_to: int) -> KeyValueIterator[int, Any]: ...

    def fetch_all(self, time_from: int, time_to: int) -> KeyValueIterator[Windowed[Any], Any]: ...

    def all(self) -> KeyValueIterator[Windowed[Any], Any]: ...


PUT_RETURN_CODE_VALID_TO_UNDEFINED = -1
"""A versioned store's ``put`` answer when the version put is the key's
latest (Kafka Streams' ``VersionedKeyValueStore.PUT_RETURN_CODE_VALID_TO_UNDEFINED``)."""

PUT_RETURN_CODE_NOT_PUT = -(2**63)
"""A versioned store's ``put`` answer when nothing was put: the timestamp is
older than the history retention behind the store's stream time (Kafka
Streams' ``PUT_RETURN_CODE_NOT_PUT``, ``Long.MIN_VALUE``)."""


class VersionedKeyValueStore(Protocol):
    """A processor's versioned key-value store (Kafka Streams'
    ``VersionedKeyValueStore``, KIP-889): every version of a key's value,
    each valid from its timestamp until the next version's, kept for the
    store's history retention behind its stream time (the largest timestamp
    put into it).

    ``put(key, value, timestamp)`` answers the version's validTo (the next
    version's timestamp) when it lands in the past,
    :data:`PUT_RETURN_CODE_VALID_TO_UNDEFINED` when it is the key's latest,
    :data:`PUT_RETURN_CODE_NOT_PUT` when it is older than the history
    retention (nothing is put; dropped-records counts it); a None value is
    a tombstone. ``get(key)`` answers the latest version, ``get(key,
    as_of=t)`` the one valid at ``t``, as a ``VersionedRecord`` whose
    ``valid_to`` is None (as Kafka Streams' processor stores answer), or
    None. ``delete(key, timestamp)`` puts a tombstone and answers the
    version valid at ``timestamp`` before it (None when expired)."""

    name: str

    def put(self, key: Any, value: Any, timestamp: int) -> int: ...

    def get(self, key: Any, as_of: int | None = None) -> VersionedRecord | None: ...

    def delete(self, key: Any, timestamp: int) -> VersionedRecord | None: ...


@dataclass(frozen=True)
class StoreBuilder:
    """A state store a topology declares for its processors (Kafka Streams'
    ``StoreBuilder``): made by :class:`Stores`, added with
    ``app.add_state_store`` (or ``Topology.add_state_store``), and named by
    the processors that use it. Logged to a changelog topic unless
    ``with_logging_disabled()``."""

    name: str
    type: Literal["key_value", "timestamped_key_value", "window", "versioned_key_value"]
    key: SerdeName | None = None
    value: SerdeName | None = None
    retention_ms: int = 0
    window_size_ms: int = 0
    retain_duplicates: bool = False
    logging: bool = True
    caching: bool = False
    changelog_config: Mapping[str, str] | None = None
    history_retention_ms: int = 0
    segment_interval_ms: int = 0

    def with_logging_disabled(self) -> StoreBuilder:
        return replace(self, logging=False, changelog_config=None)

    def with_logging_enabled(self, config: Mapping[str, str] | None = None) -> StoreBuilder:
        return replace(self, logging=True, changelog_config=dict(config or {}))

    def with_caching_enabled(self) -> StoreBuilder:
        return replace(self, caching=True)

    def with_caching_disabled(self) -> StoreBuilder:
        return replace(self, caching=False)

    def to_proto(self, processors: Iterable[str] = ()) -> pb.AddStateStoreOp:
        return pb.AddStateStoreOp(
            name=self.name,
            type=_STORE_TYPES[self.type],
            key_serde=self.key or "",
            value_serde=self.value or "",
            retention_ms=self.retention_ms,
            window_size_ms=self.window_size_ms,
            retain_duplicates=self.retain_duplicates,
            logging_disabled=not self.logging,
            caching=self.caching,
            processors=list(processors),
            changelog_config=dict(self.changelog_config or {}),
            versioned=(
                pb.VersionedStore(history_retention_ms=self.history_retention_ms, segment_interval_ms=self.segment_interval_ms)
                if self.type == "versioned_key_value"
                else None
            ),
        )


_STORE_TYPES = {
    "key_value": pb.STORE_TYPE_KEY_VALUE,
    "timestamped_key_value": pb.STORE_TYPE_TIMESTAMPED_KEY_VALUE,
    "window": pb.STORE_TYPE_WINDOW,
    "versioned_key_value": pb.STORE_TYPE_VERSIONED_KEY_VALUE,
}


def _ms(d: int | datetime.timedelta, what: str) -> int:
    if isinstance(d, datetime.timedelta):
        return int(d / datetime.timedelta(milliseconds=1))
    if isinstance(d, bool) or not isinstance(d, int):
        raise TypeError(f"{what}: want milliseconds (int) or a timedelta, got {type(d).__name__}")
    return d


class Stores:
    """Store builders (Kafka Streams' ``Stores``)."""

    @staticmethod
    def key_value_store(name: str, *, key: SerdeName | None = None, value: SerdeName | None = None) -> StoreBuilder:
        """A key-value store (``Stores.keyValueStoreBuilder`` over a persistent store)."""
        return StoreBuilder(name, "key_value", key, value)

    @staticmethod
    def timestamped_key_value_store(name: str, *, key: SerdeName | None = None, value: SerdeName | None = None) -> StoreBuilder:
        """A key-value store whose values carry a timestamp (``Stores.timestampedKeyValueStoreBuilder``)."""
        return StoreBuilder(name, "timestamped_key_value", key, value)

    @staticmethod
    def window_store(
        name: str,
        *,
        retention: int | datetime.timedelta,
        window_size: int | datetime.timedelta,
        retain_duplicates: bool = False,
        key: SerdeName | None = None,
        value: SerdeName | None = None,
    ) -> StoreBuilder:
        """A window store (``Stores.windowStoreBuilder``): values per key and
        window start, kept ``retention`` (ms or timedelta) after the start."""
        r, w = _ms(retention, "window_store: retention"), _ms(window_size, "window_store: window_size")
        if w <= 0:
            raise ValueError(f"window_store {name!r}: window_size must be positive, got {w} ms")
        if r < w:
            raise ValueError(f"window_store {name!r}: retention ({r} ms) must be at least window_size ({w} ms)")
        return StoreBuilder(name, "window", key, value, r, w, retain_duplicates)

    @staticmethod
    def versioned_key_value_store(
        name: str,
        history_retention: int | datetime.timedelta,
        *,
        segment_interval: int | datetime.timedelta | None = None,
        key: SerdeName | None = None,
        value: SerdeName | None = None,
    ) -> StoreBuilder:
        """A versioned key-value store (``Stores.versionedKeyValueStoreBuilder``
        over ``Stores.persistentVersionedKeyValueStore(name,
        historyRetention[, segmentInterval])``): every version of a key's
        value for ``history_retention`` (ms or timedelta); its processors
        get a :class:`VersionedKeyValueStore`."""
        h = _ms(history_retention, "versioned_key_value_store: history_retention")
        if h < 0:
            raise ValueError(f"versioned_key_value_store {name!r}: history_retention cannot be negative, got {h} ms")
        seg = 0
        if segment_interval is not None:
            seg = _ms(segment_interval, "versioned_key_value_store: segment_interval")
            if seg <= 0:
                raise ValueError(f"versioned_key_value_store {name!r}: segment_interval must be positive, got {seg} ms")
        return StoreBuilder(name, "versioned_key_value", key, value, history_retention_ms=h, segment_interval_ms=seg)


F = TypeVar("F", bound=Callable[..., Any])


def with_metadata(fn: F, *, write: bool = False) -> F:
    """Marks an ordinary DSL function as wanting the record's metadata: it
    is then called with one more argument, a :class:`RecordMetadata`
    (timestamp, headers, topic, partition, offset). With ``write=True`` the
    function may set ``metadata.timestamp`` and ``metadata.headers`` for
    its outputs. Functions that do not ask pay nothing for it::

        stream.map_values(with_metadata(lambda v, m: f"{m.topic}@{m.offset}: {v}"))
    """
    return _MetadataFn(fn, write)  # type: ignore[return-value]


class _MetadataFn:
    """A function wrapped by with_metadata: the registration asks for the
    metadata argument (RegisterFunctionRequest.metadata)."""

    __slots__ = ("fn", "write", "__qualname__")

    def __init__(self, fn: Callable[..., Any], write: bool) -> None:
        if not callable(fn):
            raise TypeError(f"with_metadata: {fn!r} is not callable")
        self.fn = fn
        self.write = write
        self.__qualname__ = getattr(fn, "__qualname__", None) or type(fn).__qualname__

    def __call__(self, *args: Any) -> Any:
        return self.fn(*args)


def metadata_of(fn: Any) -> pb.Metadata:
    """The RegisterFunctionRequest.metadata of a function."""
    if isinstance(fn, _MetadataFn):
        return pb.METADATA_WRITE if fn.write else pb.METADATA_READ
    return pb.METADATA_UNSPECIFIED


def unwrap(fn: Any) -> Callable[..., Any]:
    """The user's function of a with_metadata wrapper (itself otherwise)."""
    return fn.fn if isinstance(fn, _MetadataFn) else fn  # type: ignore[no-any-return]


class Topology:
    """A topology built node by node (Kafka Streams' ``Topology`` of the
    Processor API): sources, processors and sinks connected by name::

        topology = app.topology()
        (topology.add_source("Source", "words", key="string", value="string")
            .add_processor("Count", CountPerKey, "Source")
            .add_state_store(Stores.key_value_store("counts", key="string", value="long"), "Count")
            .add_sink("Sink", "counts", "Count", value="long"))

    From ``app.topology()`` each call is made at once (an error, e.g. an
    unknown parent or a name used twice, raises there). ``Topology()`` on
    its own records the calls, and ``app.add_topology(topology)`` makes
    them. Every method answers the topology, to chain calls.
    """

    def __init__(self, app: Session | None = None) -> None:
        self._app = app
        self._calls: list[Callable[[Session], None]] = []

    def _do(self, call: Callable[[Session], None]) -> Topology:
        if self._app is not None:
            call(self._app)
        else:
            self._calls.append(call)
        return self

    def _apply(self, app: Session) -> None:
        calls, self._calls = self._calls, []
        for c in calls:
            c(app)
        self._app = app

    def add_source(self, name: str, *topics: str, key: SerdeName | None = None, value: SerdeName | None = None) -> Topology:
        """A source node reading ``topics`` (``Topology.addSource``)."""
        if not topics:
            raise ValueError(f"add_source {name!r}: name at least one topic")
        op = pb.AddSourceOp(name=name, topics=list(topics), key_serde=key or "", value_serde=value or "")

        def call(app: Session) -> None:
            app._build_terminal("add_source", op)
            app._add_source(list(topics), op.key_serde, op.value_serde)

        return self._do(call)

    def add_processor(
        self,
        name: str,
        supplier: ProcessorSupplier,
        *parents: str,
        stores: Iterable[str] = (),
        key: SerdeName | None = None,
        value: SerdeName | None = None,
    ) -> Topology:
        """A processor node fed by ``parents`` (``Topology.addProcessor``):
        ``supplier()`` makes one processor per task. ``stores`` connects
        stores added before (``connectProcessorAndStateStores``); ``key``
        and ``value`` are the serdes of what it forwards (default: its
        parents')."""
        if not parents:
            raise ValueError(f"add_processor {name!r}: name at least one parent")
        names = list(stores)

        def call(app: Session) -> None:
            token = app._register("add_processor", supplier)
            op = pb.AddProcessorOp(
                name=name, token=token, parents=list(parents), stores=names, key_serde=key or "", value_serde=value or ""
            )
            app._build_terminal("add_processor", op)

        return self._do(call)

    def add_sink(self, name: str, topic: str, *parents: str, key: SerdeName | None = None, value: SerdeName | None = None) -> Topology:
        """A sink node writing what ``parents`` forward to ``topic`` (``Topology.addSink``)."""
        if not parents:
            raise ValueError(f"add_sink {name!r}: name at least one parent")
        op = pb.AddSinkOp(name=name, topic=topic, parents=list(parents), key_serde=key or "", value_serde=value or "")
        return self._do(lambda app: app._build_terminal("add_sink", op))

    def add_state_store(self, store: StoreBuilder, *processors: str) -> Topology:
        """Adds ``store``, connected to the processors named (``Topology.addStateStore``)."""
        if not isinstance(store, StoreBuilder):
            raise TypeError(f"add_state_store: want a StoreBuilder (see Stores), got {type(store).__name__}")

        def call(app: Session) -> None:
            app._build_terminal("add_state_store", store.to_proto(processors))
            app._store_specs[store.name] = store
            if store.key:
                app._store_key_serdes[store.name] = store.key

        return self._do(call)
