"""The builder: KStream, KGroupedStream and KTable, in Kafka Streams' vocabulary.

Each operator is one Build call to the engine, answered with a handle; an
operator the engine refuses raises at once with the engine's message, and
the session stays usable. Functions never cross the wire: each is registered
under a token, and the engine later sends records to be run through it.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any, Literal, TextIO, overload

from polystreams._session import Handle, Kind, Session
from polystreams.errors import PolystreamsError
from polystreams.processor import ProcessorSupplier, RecordMetadata, ValueTransformerWithKeySupplier, _transformer_supplier
from polystreams.serde import SerdeName, TopicSerde, windowed_codec
from polystreams.store import KeyValueStore, WindowStore, open_store, open_window_store
from polystreams.v1alpha1 import engine_pb2 as pb
from polystreams.windows import Duration, EmitStrategy, JoinWindows, SessionWindows, SlidingWindows, Suppressed, TimeWindows, _check_windows, to_ms


__all__ = [
    "BuiltinReducer",
    "CogroupedKStream",
    "Handle",
    "Kind",
    "Materialized",
    "KStream",
    "KGroupedStream",
    "KTable",
    "KGroupedTable",
    "GlobalKTable",
    "SessionWindowedCogroupedKStream",
    "SessionWindowedKStream",
    "TimeWindowedCogroupedKStream",
    "TimeWindowedKStream",
]

BuiltinReducer = Literal["sum", "min", "max", "latest"]
"""A reduce that runs in the engine and never crosses to the host: ``sum``,
``min`` and ``max`` need ``long`` or ``double`` values; ``latest`` keeps the
last value (any serde)."""

BuiltinJoiner = Literal["pair", "this", "other"]
"""A joiner that runs in the engine and never crosses to the host, for
every kind of join: ``pair`` makes the JSON array ``[value, other value]``
(each side decoded by its serde, which must not be ``bytes``; None for a
missing side) with result serde ``json``; ``this`` keeps this side's value
and ``other`` the other side's (None when missing), in that side's serde.
With a built-in, a ``value`` serde other than its result's is refused."""

ValueJoiner = Callable[[Any, Any], Any] | BuiltinJoiner
"""A join's joiner: ``joiner(value, other value) -> new value`` run in this
process, or a :data:`BuiltinJoiner` run in the engine."""

StreamPartitioner = Callable[[str, Any, Any, int], Any]
"""``Produced.streamPartitioner``: ``partitioner(topic, key, value,
num_partitions)`` -> a partition, partitions, or None (Kafka's default
partitioner); may be async."""

TopicNameExtractor = Callable[[Any, Any, RecordMetadata], Any]
"""``TopicNameExtractor``: ``extractor(key, value, record_context)`` -> the
record's topic; may be async."""

_BUILTIN_JOINERS: dict[str, pb.Joiner] = {
    "pair": pb.JOINER_PAIR,
    "this": pb.JOINER_THIS,
    "other": pb.JOINER_OTHER,
}

_BUILTIN_REDUCERS: dict[str, pb.Reducer] = {
    "sum": pb.REDUCER_SUM,
    "min": pb.REDUCER_MIN,
    "max": pb.REDUCER_MAX,
    "latest": pb.REDUCER_LATEST,
}

@dataclass(frozen=True)
class Materialized:
    """Names and types a state store (Kafka Streams' ``Materialized``).

    ``Materialized("counts")`` names the store (and so its changelog topic,
    ``<application.id>-counts-changelog``); ``Materialized(key="string",
    value="long")`` gives serdes only, and the store name is generated.
    ``changelog_config`` gives topic configs for the store's changelog,
    applied when the engine creates it (``withLoggingEnabled``); the
    changelog stays compacted, so a ``cleanup.policy`` without ``compact``
    is refused.

    ``retention`` (a windowed aggregation's store: ``withRetention``) is how
    long a window is kept after its start, for queries and late records; at
    least the window size plus grace, which is the default.

    ``versioned`` (a table source's store only, which must be named) makes
    it a versioned store with that history retention
    (``Materialized.as(Stores.persistentVersionedKeyValueStore(name,
    historyRetention))``, KIP-889): it keeps every version of a key for the
    history retention, and a stream-table join reads the version valid at
    each stream record's timestamp (KIP-914). ``segment_interval`` is that
    store's third argument (checked; the engine's layout has no segments).
    """

    store_name: str = ""
    _: KW_ONLY
    key: SerdeName | None = None
    value: SerdeName | None = None
    changelog_config: Mapping[str, str] | None = None
    retention: Duration | None = None
    versioned: Duration | None = None
    segment_interval: Duration | None = None

    def to_proto(self) -> pb.Materialized:
        m = pb.Materialized(
            store_name=self.store_name,
            key_serde=self.key or "",
            value_serde=self.value or "",
            changelog_config=dict(self.changelog_config or {}),
            retention_ms=0 if self.retention is None else to_ms(self.retention, "Materialized: retention"),
        )
        if self.segment_interval is not None and self.versioned is None:
            raise ValueError(f"Materialized({self.store_name!r}): segment_interval is a versioned store's: give versioned too")
        if self.versioned is not None:
            m.versioned.CopyFrom(
                pb.VersionedStore(
                    history_retention_ms=to_ms(self.versioned, "Materialized: versioned"),
                    segment_interval_ms=0 if self.segment_interval is None else to_ms(self.segment_interval, "Materialized: segment_interval"),
                )
            )
        return m


def _s(name: str | None) -> str:
    return name or ""


def _print_text(x: Any) -> str:
    """A key or value as print shows it, as Java's String.valueOf shows the
    deserialized object: ``null``, ``true``/``false``, text as it is,
    numbers in decimal, bytes in hex, JSON objects and lists as JSON."""
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, str):
        return x
    if isinstance(x, (bytes, bytearray)):
        return bytes(x).hex()
    if isinstance(x, (dict, list)):
        return json.dumps(x, separators=(",", ":"))
    return str(x)


def _key_value_text(key: Any, value: Any) -> str:
    return f"{_print_text(key)}, {_print_text(value)}"


class _Node:
    __slots__ = ("_app", "handle")

    _kind: Kind

    def __init__(self, app: Session, handle: Handle) -> None:
        if handle.kind != self._kind:
            raise TypeError(f"{type(self).__name__} cannot wrap handle {handle.id}, a {handle.kind}")
        self._app = app
        self.handle = handle

    def __repr__(self) -> str:
        h = self.handle
        return f"{type(self).__name__}(id={h.id}, key={h.key_serde!r}, value={h.value_serde!r}, node={h.node!r})"


class KStream(_Node):
    """A stream of records (Kafka Streams' ``KStream``)."""

    __slots__ = ()
    _kind: Kind = "stream"

    def _stream(self, op: str, message: Any) -> KStream:
        return KStream(self._app, self._app._build(op, message))

    def map_values(self, fn: Callable[[Any], Any], *, value: SerdeName | None = None, name: str | None = None) -> KStream:
        """``fn(value) -> new value``; keys are unchanged. ``value`` is the new values' serde."""
        t = self._app._register("map_values", fn)
        return self._stream("map_values", pb.MapValuesOp(input=self.handle.id, token=t, value_serde=_s(value), name=_s(name)))

    def filter(self, predicate: Callable[[Any, Any], object], *, name: str | None = None) -> KStream:
        """Keeps the records for which ``predicate(key, value)`` is true."""
        t = self._app._register("filter", predicate)
        return self._stream("filter", pb.FilterOp(input=self.handle.id, token=t, name=_s(name)))

    def filter_not(self, predicate: Callable[[Any, Any], object], *, name: str | None = None) -> KStream:
        """Drops the records for which ``predicate(key, value)`` is true."""
        t = self._app._register("filter_not", predicate)
        return self._stream("filter_not", pb.FilterNotOp(input=self.handle.id, token=t, name=_s(name)))

    def flat_map_values(
        self, fn: Callable[[Any], Iterable[Any]], *, value: SerdeName | None = None, name: str | None = None
    ) -> KStream:
        """``fn(value) -> iterable of values``: zero, one or many records per
        record, each with the input's key."""
        t = self._app._register("flat_map_values", fn)
        return self._stream(
            "flat_map_values", pb.FlatMapValuesOp(input=self.handle.id, token=t, value_serde=_s(value), name=_s(name))
        )

    def map_values_with_key(
        self, fn: Callable[[Any, Any], Any], *, value: SerdeName | None = None, name: str | None = None
    ) -> KStream:
        """``fn(key, value) -> new value`` (Kafka Streams' ``ValueMapperWithKey``):
        reads the key, keeps it; no repartition follows."""
        t = self._app._register("map_values", fn)
        return self._stream(
            "map_values", pb.MapValuesOp(input=self.handle.id, token=t, value_serde=_s(value), name=_s(name), with_key=True)
        )

    def flat_map_values_with_key(
        self, fn: Callable[[Any, Any], Iterable[Any]], *, value: SerdeName | None = None, name: str | None = None
    ) -> KStream:
        """``fn(key, value) -> iterable of values``, each a record with the
        input's key and timestamp (``ValueMapperWithKey``)."""
        t = self._app._register("flat_map_values", fn)
        return self._stream(
            "flat_map_values",
            pb.FlatMapValuesOp(input=self.handle.id, token=t, value_serde=_s(value), name=_s(name), with_key=True),
        )

    def flat_map(
        self,
        fn: Callable[[Any, Any], Iterable[tuple[Any, Any]]],
        *,
        key: SerdeName | None = None,
        value: SerdeName | None = None,
        name: str | None = None,
    ) -> KStream:
        """``fn(key, value) -> iterable of (new key, new value)``: zero, one
        or many records per record, each with the input's timestamp and
        headers (``KStream.flatMap``). Like ``map``, it marks the stream for
        repartitioning before a grouping or join."""
        t = self._app._register("flat_map", fn)
        return self._stream(
            "flat_map", pb.FlatMapOp(input=self.handle.id, token=t, key_serde=_s(key), value_serde=_s(value), name=_s(name))
        )

    def map(
        self,
        fn: Callable[[Any, Any], tuple[Any, Any]],
        *,
        key: SerdeName | None = None,
        value: SerdeName | None = None,
        name: str | None = None,
    ) -> KStream:
        """``fn(key, value) -> (new key, new value)``. Changing keys marks the
        stream for repartitioning before a grouping."""
        t = self._app._register("map", fn)
        return self._stream(
            "map", pb.MapOp(input=self.handle.id, token=t, key_serde=_s(key), value_serde=_s(value), name=_s(name))
        )

    def select_key(self, fn: Callable[[Any, Any], Any], *, key: SerdeName | None = None, name: str | None = None) -> KStream:
        """``fn(key, value) -> new key``; values are unchanged."""
        t = self._app._register("select_key", fn)
        return self._stream("select_key", pb.SelectKeyOp(input=self.handle.id, token=t, key_serde=_s(key), name=_s(name)))

    def peek(self, fn: Callable[[Any, Any], object], *, name: str | None = None) -> KStream:
        """Calls ``fn(key, value)`` for each record and passes it on unchanged."""
        t = self._app._register("peek", fn)
        return self._stream("peek", pb.PeekOp(input=self.handle.id, token=t, name=_s(name)))

    def foreach(self, fn: Callable[[Any, Any], object], *, name: str | None = None) -> None:
        """Calls ``fn(key, value)`` for each record; terminal."""
        t = self._app._register("foreach", fn)
        self._app._build_terminal("foreach", pb.ForeachOp(input=self.handle.id, token=t, name=_s(name)))

    def print(
        self,
        *,
        label: str | None = None,
        mapper: Callable[[Any, Any], str] | None = None,
        file: TextIO | None = None,
        name: str | None = None,
    ) -> None:
        """Writes ``[<label>]: <key>, <value>`` and a newline per record
        (``KStream.print(Printed)``); terminal, node ``KSTREAM-PRINTER-<n>``.
        ``label`` is ``Printed.withLabel`` (default: the name of the node the
        stream comes from, as in Kafka Streams), ``mapper(key, value) -> str``
        is ``Printed.withKeyValueMapper`` (default: ``"<key>, <value>"``, with
        ``None`` as ``null``), ``file`` where lines go (default: ``sys.stdout``
        as it is when a record prints; each line is flushed)."""
        text = mapper if mapper is not None else _key_value_text
        prefix = f"[{label if label is not None else self.handle.node}]: "

        def printer(key: Any, value: Any) -> None:
            out = file if file is not None else sys.stdout
            out.write(prefix + text(key, value) + "\n")
            out.flush()

        t = self._app._register("print", printer)
        self._app._build_terminal("print", pb.PrintOp(input=self.handle.id, token=t, name=_s(name)))

    def to_table(self, *, materialized: str | Materialized | None = None, name: str | None = None) -> KTable:
        """The stream as a table of upserts (``KStream.toTable``): a
        ``None`` value deletes its key, a record with a ``None`` key is
        dropped. The node is ``KSTREAM-TOTABLE-<n>`` unless ``name`` names
        it; a stream whose key changed upstream is repartitioned first.
        ``materialized`` naming a store makes the table's store exist and be
        queryable; otherwise it exists only if a later operator needs it."""
        op = pb.ToTableOp(input=self.handle.id, name=_s(name))
        _materialize(op, "to_table", materialized)
        return KTable(self._app, self._app._build("to_table", op))

    def group_by_key(
        self, *, key: SerdeName | None = None, value: SerdeName | None = None, name: str | None = None
    ) -> KGroupedStream:
        """Groups by the current key (``Grouped.with(key, value)``, ``Grouped.as(name)``)."""
        h = self._app._build(
            "group_by_key", pb.GroupByKeyOp(input=self.handle.id, key_serde=_s(key), value_serde=_s(value), name=_s(name))
        )
        return KGroupedStream(self._app, h)

    def group_by(
        self,
        fn: Callable[[Any, Any], Any],
        *,
        key: SerdeName | None = None,
        value: SerdeName | None = None,
        name: str | None = None,
    ) -> KGroupedStream:
        """Groups by ``fn(key, value) -> new key``; the records are
        repartitioned by the new key (through ``<application.id>-<name>-repartition``)."""
        t = self._app._register("group_by", fn)
        h = self._app._build(
            "group_by",
            pb.GroupByOp(input=self.handle.id, token=t, key_serde=_s(key), value_serde=_s(value), name=_s(name)),
        )
        return KGroupedStream(self._app, h)

    def merge(self, other: KStream, *, name: str | None = None) -> KStream:
        """One stream of this stream's and ``other``'s records (``KStream.merge``);
        both must carry the same key and value serdes."""
        return self._stream("merge", pb.MergeOp(input=self.handle.id, other=other.handle.id, name=_s(name)))

    def repartition(
        self, *, name: str | None = None, partitions: int = 0, partitioner: StreamPartitioner | None = None
    ) -> KStream:
        """Sends the stream through the topic ``<application.id>-<name>-repartition``
        and on from a new sub-topology (``KStream.repartition``): ``name`` is
        ``Repartitioned.as`` (default ``KSTREAM-REPARTITION-<n>``), ``partitions``
        its partition count (0: as many as the sub-topology writing it),
        ``partitioner`` ``Repartitioned.withStreamPartitioner`` (see :meth:`to`).
        Records with a null key are dropped."""
        token = self._app._register("repartition", partitioner) if partitioner is not None else 0
        return self._stream(
            "repartition",
            pb.RepartitionOp(input=self.handle.id, name=_s(name), partitions=partitions, partitioner_token=token),
        )

    @overload
    def join(
        self, other: KTable, joiner: ValueJoiner, /, *, value: SerdeName | None = None, name: str | None = None
    ) -> KStream: ...
    @overload
    def join(
        self,
        other: KStream,
        joiner: ValueJoiner,
        windows: JoinWindows,
        /,
        *,
        value: SerdeName | None = None,
        name: str | None = None,
        store_name: str | None = None,
    ) -> KStream: ...
    @overload
    def join(
        self,
        other: GlobalKTable,
        key_mapper: Callable[[Any, Any], Any],
        joiner: ValueJoiner,
        /,
        *,
        value: SerdeName | None = None,
        name: str | None = None,
    ) -> KStream: ...
    def join(
        self,
        other: KTable | KStream | GlobalKTable,
        joiner: ValueJoiner,
        third: Any = None,
        /,
        *,
        value: SerdeName | None = None,
        name: str | None = None,
        store_name: str | None = None,
    ) -> KStream:
        """Joins each record with a table, a stream within windows, or a
        global table.

        With a table (``KStream.join(KTable)``): ``joiner(value, table
        value) -> new value`` with the value the table holds for the key
        now; records whose key the table does not hold are dropped.

        With a stream and :class:`JoinWindows` (``KStream.join(KStream,
        ValueJoiner, JoinWindows, StreamJoined)``): ``joiner(value, other
        value)`` for each record of the other stream with the same key
        within the windows, stamped with the later timestamp; both streams
        are kept in window stores (``store_name``:
        ``StreamJoined.withStoreName``).

        A table or stream must be co-partitioned with this stream (one
        partition count); a stream whose key changed upstream is
        repartitioned first.

        With a :class:`GlobalKTable`, ``join(global_table, key_mapper,
        joiner)`` (``KStream.join(GlobalKTable, KeyValueMapper,
        ValueJoiner)``): ``key_mapper(key, value)`` gives the global table's
        key to look up, and the record keeps its own key; no
        co-partitioning is needed.

        ``value`` is the joined values' serde (default: this stream's)."""
        return self._join_any("join", other, joiner, third, False, False, value, name, store_name)

    @overload
    def left_join(
        self, other: KTable, joiner: ValueJoiner, /, *, value: SerdeName | None = None, name: str | None = None
    ) -> KStream: ...
    @overload
    def left_join(
        self,
        other: KStream,
        joiner: ValueJoiner,
        windows: JoinWindows,
        /,
        *,
        value: SerdeName | None = None,
        name: str | None = None,
        store_name: str | None = None,
    ) -> KStream: ...
    @overload
    def left_join(
        self,
        other: GlobalKTable,
        key_mapper: Callable[[Any, Any], Any],
        joiner: ValueJoiner,
        /,
        *,
        value: SerdeName | None = None,
        name: str | None = None,
    ) -> KStream: ...
    def left_join(
        self,
        other: KTable | KStream | GlobalKTable,
        joiner: ValueJoiner,
        third: Any = None,
        /,
        *,
        value: SerdeName | None = None,
        name: str | None = None,
        store_name: str | None = None,
    ) -> KStream:
        """:meth:`join` that keeps every record of this stream: ``joiner``
        gets None for a key the table (or global table, through
        ``key_mapper``) does not hold (``KStream.leftJoin(KTable)``), or,
        joining a stream, for a record no other record joined, once its
        window closed (``KStream.leftJoin(KStream, ...)``; since Kafka 3.1
        never earlier)."""
        return self._join_any("left_join", other, joiner, third, True, False, value, name, store_name)

    def outer_join(
        self,
        other: KStream,
        joiner: ValueJoiner,
        windows: JoinWindows,
        *,
        value: SerdeName | None = None,
        name: str | None = None,
        store_name: str | None = None,
    ) -> KStream:
        """:meth:`left_join` of two streams that keeps the other stream's
        unjoined records too: ``joiner(None, other value)``
        (``KStream.outerJoin(KStream, ...)``)."""
        return self._join("outer_join", other, joiner, windows, False, True, value, name, store_name)

    def _join_any(
        self,
        what: str,
        other: KTable | KStream | GlobalKTable,
        first: Any,
        third: Any,
        left: bool,
        outer: bool,
        value: SerdeName | None,
        name: str | None,
        store_name: str | None,
    ) -> KStream:
        if isinstance(other, GlobalKTable):
            if store_name is not None:
                raise TypeError(f"{what}({other!r}, ...): store_name is StreamJoined's (stream-stream joins), not a global table join's")
            return _join_global(self, what, other, first, () if third is None else (third,), left, value, name)
        if callable(third) and not isinstance(third, JoinWindows):
            raise TypeError(f"{what}({other!r}, joiner, ...): a key mapper is for joins with a GlobalKTable")
        return self._join(what, other, first, third, left, outer, value, name, store_name)

    def _join(
        self,
        what: str,
        other: KTable | KStream,
        joiner: ValueJoiner,
        windows: JoinWindows | None,
        left: bool,
        outer: bool,
        value: SerdeName | None,
        name: str | None,
        store_name: str | None,
    ) -> KStream:
        if windows is not None and not isinstance(windows, JoinWindows):
            raise TypeError(f"{what}: windows must be JoinWindows, not {type(windows).__name__}")
        op = pb.JoinOp(
            input=self.handle.id,
            table=other.handle.id,
            left=left,
            outer=outer,
            value_serde=_s(value),
            name=_s(name),
            store_name=_s(store_name),
        )
        if windows is not None:
            op.windows.CopyFrom(windows._pb())
        t = _set_joiner(self._app, what, op, joiner)
        try:
            return self._stream("join", op)
        except PolystreamsError:
            self._app._functions.pop(t, None)  # registered for this call only
            raise

    def split(self, *, name: str | None = None) -> BranchedKStream:
        """Routes each record to the first branch whose predicate passes it
        (``KStream.split``)::

            branches = (
                orders.split(name="orders-")
                .branch(lambda k, v: v["total"] > 100, name="big")
                .branch(lambda k, v: v["country"] != "NL", name="abroad")
                .default_branch(name="rest")
            )
            branches["orders-big"].to("big-orders")

        The streams are keyed as Kafka Streams keys them: the split's name
        (default ``KSTREAM-BRANCH-<n>``) followed by the branch's name or number.
        """
        return BranchedKStream(self, name)

    def process(
        self,
        supplier: ProcessorSupplier,
        *,
        stores: Iterable[str] = (),
        key: SerdeName | None = None,
        value: SerdeName | None = None,
        name: str | None = None,
    ) -> KStream:
        """Runs a :class:`~polystreams.processor.Processor` on each record
        (``KStream.process``, Kafka 3.3+): ``supplier()`` (the class, or a
        function answering a new processor) makes one per task. ``stores``
        names the stores (added by ``app.add_state_store``) it may use;
        ``key`` and ``value`` are the serdes of the records it forwards
        (default: the input's). The result is the stream of what it
        forwards; a changed key marks it for repartitioning. The node is
        ``KSTREAM-PROCESSOR-<n>`` unless ``name`` names it."""
        return self._process(supplier, stores, key, value, name, False)

    def process_values(
        self,
        supplier: ProcessorSupplier,
        *,
        stores: Iterable[str] = (),
        value: SerdeName | None = None,
        name: str | None = None,
    ) -> KStream:
        """As :meth:`process` with a :class:`~polystreams.processor.FixedKeyProcessor`
        (``KStream.processValues``): forwarded records keep the input's
        key, so no repartition follows. Node ``KSTREAM-PROCESSVALUES-<n>``."""
        return self._process(supplier, stores, None, value, name, True)

    def _process(
        self, supplier: ProcessorSupplier, stores: Iterable[str], key: SerdeName | None, value: SerdeName | None, name: str | None, values_only: bool
    ) -> KStream:
        what = "process_values" if values_only else "process"
        if isinstance(stores, str):
            raise TypeError(f"{what}: stores must be a list of store names, not a str")
        t = self._app._register(what, supplier)
        op = pb.ProcessOp(
            input=self.handle.id, token=t, name=_s(name), stores=list(stores), values_only=values_only,
            key_serde=_s(key), value_serde=_s(value),
        )
        return self._stream("process", op)

    def to(
        self,
        topic: str | TopicNameExtractor,
        *,
        key: SerdeName | TopicSerde | None = None,
        value: SerdeName | TopicSerde | None = None,
        name: str | None = None,
        partitioner: StreamPartitioner | None = None,
    ) -> None:
        """Writes the records to ``topic`` (``Produced.with(key, value)``); terminal.
        A :func:`~polystreams.serde.avro` serde encodes the (json) records
        with its schema.

        ``topic`` may be a ``TopicNameExtractor``, ``extractor(key, value,
        record_context) -> topic`` (``record_context`` is a
        :class:`~polystreams.RecordMetadata`): each record goes to the topic it
        names, which must exist (the brokers may auto-create it; Kafka Streams
        does not create it). ``describe()`` prints the sink as ``(extractor
        class: <the function's qualified name>)``.

        ``partitioner`` is ``Produced.streamPartitioner``: ``partitioner(topic,
        key, value, num_partitions)`` returns a partition, several (the
        record is written to each; none drops it), or None for Kafka's
        default partitioner (murmur2 of the serialized key). A partition
        outside ``[0, num_partitions)`` fails the record."""
        extractor = 0
        if callable(topic):
            extractor, topic = self._app._register("to", topic), ""
        ptoken = self._app._register("to", partitioner) if partitioner is not None else 0
        self._app._build_terminal(
            "to",
            pb.ToOp(
                input=self.handle.id, topic=topic, key_serde=_s(key), value_serde=_s(value), name=_s(name),
                partitioner_token=ptoken, topic_extractor_token=extractor,
            ),
        )


class BranchedKStream:
    """The branches of a :meth:`KStream.split` being made (Kafka Streams'
    ``BranchedKStream``): add them with :meth:`branch`, then end with
    :meth:`default_branch` or :meth:`no_default_branch`, which build the split
    and return its streams by name."""

    __slots__ = ("_stream", "_name", "_branches", "_done")

    def __init__(self, stream: KStream, name: str | None) -> None:
        self._stream = stream
        self._name = name
        self._branches: list[pb.Branch] = []
        self._done = False

    def branch(self, predicate: Callable[[Any, Any], object], *, name: str | None = None) -> BranchedKStream:
        """A branch for the records ``predicate(key, value)`` passes, of those no
        earlier branch took; ``name`` is ``Branched.as`` (default: its number,
        from 1)."""
        self._check()
        t = self._stream._app._register("split", predicate)
        self._branches.append(pb.Branch(predicate_token=t, name=_s(name)))
        return self

    def default_branch(self, *, name: str | None = None) -> dict[str, KStream]:
        """Ends the split with a branch for the records no predicate passed
        (named ``name``, default ``0``); returns every branch's stream."""
        return self._build(True, name)

    def no_default_branch(self) -> dict[str, KStream]:
        """Ends the split; records no predicate passed are dropped. Returns
        every branch's stream."""
        return self._build(False, None)

    def _check(self) -> None:
        if self._done:
            raise PolystreamsError("invalid_argument", "split: this split is built already; start another with KStream.split()")

    def _build(self, default: bool, default_name: str | None) -> dict[str, KStream]:
        self._check()
        app = self._stream._app
        op = pb.SplitOp(
            input=self._stream.handle.id,
            name=_s(self._name),
            branches=self._branches,
            default_branch=default,
            default_name=_s(default_name),
        )
        self._done = True
        try:
            resp = app._call_build("split", op)
        except PolystreamsError:
            for b in self._branches:
                app._functions.pop(b.predicate_token, None)  # registered for this call only
            raise
        out: dict[str, KStream] = {}
        for h in resp.branches:
            handle = Handle.from_proto(h)
            out[handle.node] = KStream(app, handle)
        return out


def _count(node: _Node, materialized: str | Materialized | None, name: str | None) -> KTable:
    op = pb.CountOp(input=node.handle.id, name=_s(name))
    _materialize(op, "count", materialized)
    return KTable(node._app, node._app._build("count", op))


def _set_joiner(app: Session, what: str, op: pb.JoinOp, joiner: ValueJoiner) -> int:
    """Sets op's joiner: a built-in's name (no token: returns 0) or a
    function registered for this call, whose token it returns."""
    if isinstance(joiner, str):
        builtin = _BUILTIN_JOINERS.get(joiner)
        if builtin is None:
            raise ValueError(f"{what}: {joiner!r} is not a built-in joiner (want a function or one of {', '.join(_BUILTIN_JOINERS)})")
        op.builtin_joiner = builtin
        return 0
    t = app._register(what, joiner)
    op.joiner_token = t
    return t


def _reduce(
    node: _Node, reducer: Callable[[Any, Any], Any] | BuiltinReducer, materialized: str | Materialized | None, name: str | None
) -> KTable:
    op = pb.ReduceOp(input=node.handle.id, name=_s(name))
    if isinstance(reducer, str):
        builtin = _BUILTIN_REDUCERS.get(reducer)
        if builtin is None:
            raise ValueError(
                f"reduce: {reducer!r} is not a built-in reducer (want a function or one of {', '.join(_BUILTIN_REDUCERS)})"
            )
        op.builtin = builtin
    _materialize(op, "reduce", materialized)
    if not isinstance(reducer, str):
        op.token = node._app._register("reduce", reducer)
    return KTable(node._app, node._app._build("reduce", op))


def _aggregate(
    node: _Node,
    functions: Sequence[tuple[str, str, Callable[..., Any]]],
    materialized: str | Materialized | None,
    name: str | None,
) -> KTable:
    """An AggregateOp with functions [(role, token field, fn)]."""
    op = pb.AggregateOp(input=node.handle.id, name=_s(name))
    _materialize(op, "aggregate", materialized)
    for what, _, fn in functions:
        if not callable(fn):
            raise TypeError(f"aggregate: the {what} {fn!r} is not callable")
    for _, field, fn in functions:
        setattr(op, field, node._app._register("aggregate", fn))
    return KTable(node._app, node._app._build("aggregate", op))


class KGroupedStream(_Node):
    """A stream grouped by key, ready to aggregate (``KGroupedStream``)."""

    __slots__ = ()
    _kind: Kind = "grouped_stream"

    def count(self, *, materialized: str | Materialized | None = None, name: str | None = None) -> KTable:
        """Counts the records per key into a table of ``long`` counts.

        ``materialized`` names the store (a str) or gives a Materialized;
        None generates the store's name as Kafka Streams does.
        """
        return _count(self, materialized, name)

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any] | BuiltinReducer,
        *,
        materialized: str | Materialized | None = None,
        name: str | None = None,
    ) -> KTable:
        """Folds each key's values into a table: ``reducer(aggregate, value) ->
        new aggregate``. A key's first value becomes its aggregate without a
        call (as in Kafka Streams); records with a null key or value are skipped.

        ``reducer`` may instead name a built-in that runs in the engine and
        never crosses to this process: ``"sum"``, ``"min"`` or ``"max"``
        (``long`` or ``double`` values; the engine refuses other serdes) or
        ``"latest"``. ``materialized`` is as for :meth:`count`; the store keeps
        the values' serde unless it names another.
        """
        return _reduce(self, reducer, materialized, name)

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        *,
        materialized: str | Materialized | None = None,
        name: str | None = None,
    ) -> KTable:
        """Folds each key's values into a table of aggregates:
        ``initializer()`` starts a key's aggregate, then ``aggregator(key,
        value, aggregate) -> new aggregate`` (Kafka Streams' order) folds in
        each value. Records with a null key or value are skipped.

        The aggregate's serde is ``Materialized(value=...)``'s (e.g.
        ``Materialized(value="json")`` for a dict), else the grouped stream's
        value serde. ``materialized`` is otherwise as for :meth:`count`.
        """
        fns = (("initializer", "initializer_token", initializer), ("aggregator", "aggregator_token", aggregator))
        return _aggregate(self, fns, materialized, name)

    def cogroup(self, aggregator: Callable[[Any, Any, Any], Any]) -> CogroupedKStream:
        """Starts a cogroup (``KGroupedStream.cogroup``, KIP-150): several
        grouped streams aggregated into one table, each record folded in by
        ``aggregator(key, value, aggregate)`` of the stream it came from.
        Add more grouped streams with :meth:`CogroupedKStream.cogroup`, then
        :meth:`CogroupedKStream.aggregate`. Adds no node."""
        return _cogroup(self, 0, aggregator)

    @overload
    def windowed_by(self, windows: SessionWindows) -> SessionWindowedKStream: ...
    @overload
    def windowed_by(self, windows: TimeWindows | SlidingWindows) -> TimeWindowedKStream: ...
    def windowed_by(self, windows: TimeWindows | SlidingWindows | SessionWindows) -> TimeWindowedKStream | SessionWindowedKStream:
        """Aggregates per key and window (``KGroupedStream.windowedBy``):
        :class:`TimeWindows` (tumbling or hopping) and :class:`SlidingWindows`
        give a :class:`TimeWindowedKStream`, :class:`SessionWindows` a
        :class:`SessionWindowedKStream`. Their count, reduce and aggregate
        make a table keyed by :class:`~polystreams.windows.Windowed` keys.
        The engine refuses bad windows naming the field and value (e.g.
        ``size_ms 0``)."""
        w = _check_windows(windows)
        op = pb.WindowedByOp(input=self.handle.id)
        w._op(op)
        h = self._app._build("windowed_by", op)
        if isinstance(w, SessionWindows):
            return SessionWindowedKStream(self._app, h)
        return TimeWindowedKStream(self._app, h)


class TimeWindowedKStream(_Node):
    """A grouped stream windowed by time or sliding windows
    (``TimeWindowedKStream``): its aggregations keep one aggregate per key
    and window, in a table whose keys are
    :class:`~polystreams.windows.Windowed` (serde ``windowed(<key>,<size>)``).
    A record later than its window's end plus grace (in stream time, the
    largest timestamp its partition has seen) is dropped and counted in
    :meth:`App.dropped_records`. Host functions are folded per bundle, all
    windows of a key at once."""

    __slots__ = ()
    _kind: Kind = "windowed_stream"

    def emit_strategy(self, strategy: EmitStrategy) -> TimeWindowedKStream:
        """When this windowed stream's count, reduce and aggregate forward
        their results (``emitStrategy``, KIP-825):
        ``EmitStrategy.on_window_close()`` forwards only each window's final
        result, once it closes; ``EmitStrategy.on_window_update()`` (the
        default) every update. Adds no node."""
        if not isinstance(strategy, EmitStrategy):
            raise TypeError(f"emit_strategy: want an EmitStrategy, not {type(strategy).__name__}")
        op = pb.EmitStrategyOp(input=self.handle.id, strategy=strategy._pb())
        return TimeWindowedKStream(self._app, self._app._build("emit_strategy", op))

    def count(self, *, materialized: str | Materialized | None = None, name: str | None = None) -> KTable:
        """Counts the records per key and window (``long`` counts)."""
        return _count(self, materialized, name)

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any] | BuiltinReducer,
        *,
        materialized: str | Materialized | None = None,
        name: str | None = None,
    ) -> KTable:
        """``reducer(aggregate, value)`` per key and window, or a built-in
        (as for :meth:`KGroupedStream.reduce`)."""
        return _reduce(self, reducer, materialized, name)

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        *,
        materialized: str | Materialized | None = None,
        name: str | None = None,
    ) -> KTable:
        """``initializer()`` starts each window's aggregate, ``aggregator(key,
        value, aggregate)`` folds in a value; the key is the grouped key."""
        fns = (("initializer", "initializer_token", initializer), ("aggregator", "aggregator_token", aggregator))
        return _aggregate(self, fns, materialized, name)


class SessionWindowedKStream(_Node):
    """A grouped stream windowed by sessions (``SessionWindowedKStream``):
    one aggregate per key and session, in a table whose keys are
    :class:`~polystreams.windows.Windowed` (serde
    ``session-windowed(<key>)``). A record that bridges sessions merges them:
    the merged session's update comes out, and the sessions it replaces are
    deleted (tombstones)."""

    __slots__ = ()
    _kind: Kind = "session_windowed_stream"

    def emit_strategy(self, strategy: EmitStrategy) -> SessionWindowedKStream:
        """When this windowed stream's count, reduce and aggregate forward
        their results (``emitStrategy``, KIP-825):
        ``EmitStrategy.on_window_close()`` forwards only each window's final
        result, once it closes; ``EmitStrategy.on_window_update()`` (the
        default) every update. Adds no node."""
        if not isinstance(strategy, EmitStrategy):
            raise TypeError(f"emit_strategy: want an EmitStrategy, not {type(strategy).__name__}")
        op = pb.EmitStrategyOp(input=self.handle.id, strategy=strategy._pb())
        return SessionWindowedKStream(self._app, self._app._build("emit_strategy", op))

    def count(self, *, materialized: str | Materialized | None = None, name: str | None = None) -> KTable:
        """Counts the records per key and session."""
        return _count(self, materialized, name)

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any] | BuiltinReducer,
        *,
        materialized: str | Materialized | None = None,
        name: str | None = None,
    ) -> KTable:
        """``reducer(aggregate, value)`` per key and session (merging two
        sessions reduces their aggregates), or a built-in."""
        return _reduce(self, reducer, materialized, name)

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        merger: Callable[[Any, Any, Any], Any],
        *,
        materialized: str | Materialized | None = None,
        name: str | None = None,
    ) -> KTable:
        """``initializer()`` and ``aggregator(key, value, aggregate)`` as for
        time windows; ``merger(key, aggregate1, aggregate2) -> aggregate``
        merges two sessions a record bridges."""
        fns = (
            ("initializer", "initializer_token", initializer),
            ("aggregator", "aggregator_token", aggregator),
            ("merger", "merger_token", merger),
        )
        return _aggregate(self, fns, materialized, name)


def _cogroup(node: _Node, grouped: int, aggregator: Callable[[Any, Any, Any], Any]) -> CogroupedKStream:
    if not callable(aggregator):
        raise TypeError(f"cogroup: the aggregator {aggregator!r} is not callable")
    op = pb.CogroupOp(input=node.handle.id, grouped=grouped, aggregator_token=node._app._register("cogroup", aggregator))
    return CogroupedKStream(node._app, node._app._build("cogroup", op))


class CogroupedKStream(_Node):
    """Grouped streams aggregated into one table, each with its own
    aggregator (``CogroupedKStream``, KIP-150). Every record updates its
    key's one aggregate, in one store, and the table forwards one update per
    record. The grouped streams share their key type and are co-partitioned;
    one whose key changed upstream is repartitioned first (through its
    ``group_by_key(name=...)`` topic, else ``<store>-repartition``).

    As in Kafka Streams a cogroup is one object: :meth:`cogroup` adds to it,
    and every aggregation of it sees every grouped stream added so far."""

    __slots__ = ()
    _kind: Kind = "cogrouped_stream"

    def cogroup(self, grouped: KGroupedStream, aggregator: Callable[[Any, Any, Any], Any]) -> CogroupedKStream:
        """Adds ``grouped`` with its ``aggregator(key, value, aggregate)``
        (``CogroupedKStream.cogroup``). Adds no node."""
        if not isinstance(grouped, KGroupedStream):
            raise TypeError(f"cogroup: want a KGroupedStream, not {type(grouped).__name__}")
        return _cogroup(self, grouped.handle.id, aggregator)

    def aggregate(
        self,
        initializer: Callable[[], Any],
        *,
        materialized: str | Materialized | None = None,
        name: str | None = None,
    ) -> KTable:
        """The cogroup's table: ``initializer()`` starts a key's aggregate,
        and each record is folded in by its own stream's aggregator. The
        aggregate's serde is ``Materialized(value=...)``'s, else the first
        grouped stream's value serde. ``name`` names the nodes
        ``<name>-cogroup-agg-<i>`` and ``<name>-cogroup-merge``."""
        return _aggregate(self, (("initializer", "initializer_token", initializer),), materialized, name)

    @overload
    def windowed_by(self, windows: SessionWindows) -> SessionWindowedCogroupedKStream: ...
    @overload
    def windowed_by(self, windows: TimeWindows | SlidingWindows) -> TimeWindowedCogroupedKStream: ...
    def windowed_by(
        self, windows: TimeWindows | SlidingWindows | SessionWindows
    ) -> TimeWindowedCogroupedKStream | SessionWindowedCogroupedKStream:
        """Aggregates the cogroup per key and window
        (``CogroupedKStream.windowedBy``); every window update is forwarded."""
        w = _check_windows(windows)
        op = pb.WindowedByOp(input=self.handle.id)
        w._op(op)
        h = self._app._build("windowed_by", op)
        if isinstance(w, SessionWindows):
            return SessionWindowedCogroupedKStream(self._app, h)
        return TimeWindowedCogroupedKStream(self._app, h)


class TimeWindowedCogroupedKStream(_Node):
    """A cogroup windowed by time or sliding windows
    (``TimeWindowedCogroupedKStream``)."""

    __slots__ = ()
    _kind: Kind = "windowed_cogrouped_stream"

    def aggregate(
        self,
        initializer: Callable[[], Any],
        *,
        materialized: str | Materialized | None = None,
        name: str | None = None,
    ) -> KTable:
        """``initializer()`` starts each window's aggregate; each record is
        folded in by its own stream's aggregator."""
        return _aggregate(self, (("initializer", "initializer_token", initializer),), materialized, name)


class SessionWindowedCogroupedKStream(_Node):
    """A cogroup windowed by sessions (``SessionWindowedCogroupedKStream``)."""

    __slots__ = ()
    _kind: Kind = "session_windowed_cogrouped_stream"

    def aggregate(
        self,
        initializer: Callable[[], Any],
        merger: Callable[[Any, Any, Any], Any],
        *,
        materialized: str | Materialized | None = None,
        name: str | None = None,
    ) -> KTable:
        """``initializer()`` starts each session's aggregate, each record is
        folded in by its own stream's aggregator, and ``merger(key,
        aggregate1, aggregate2)`` merges two sessions a record bridges."""
        fns = (("initializer", "initializer_token", initializer), ("merger", "merger_token", merger))
        return _aggregate(self, fns, materialized, name)


def _materialize(op: Any, what: str, materialized: str | Materialized | None) -> None:
    """Sets op.materialized from a store name or a Materialized (None: absent)."""
    if isinstance(materialized, str):
        op.materialized.SetInParent()
        op.materialized.store_name = materialized
    elif isinstance(materialized, Materialized):
        op.materialized.SetInParent()
        op.materialized.CopyFrom(materialized.to_proto())
    elif materialized is not None:
        raise TypeError(f"{what}: materialized must be a str or Materialized, not {type(materialized).__name__}")


class KTable(_Node):
    """A changelog table: the latest value per key (``KTable``).

    A table's records are updates: a ``None`` value deletes its key (a
    tombstone), and operators forward tombstones as Kafka Streams does.
    """

    __slots__ = ()
    _kind: Kind = "table"

    def _table(self, op: str, message: Any, materialized: str | Materialized | None) -> KTable:
        _materialize(message, op, materialized)
        return KTable(self._app, self._app._build(op, message))

    def filter(
        self,
        predicate: Callable[[Any, Any], object],
        *,
        materialized: str | Materialized | None = None,
        name: str | None = None,
    ) -> KTable:
        """Keeps the rows for which ``predicate(key, value)`` is true; a row
        that does not pass is deleted, so the result forwards a tombstone for
        it (``KTable.filter``). ``materialized`` keeps the result in a store
        (queryable when named)."""
        t = self._app._register("filter", predicate)
        return self._table("filter", pb.FilterOp(input=self.handle.id, token=t, name=_s(name)), materialized)

    def filter_not(
        self,
        predicate: Callable[[Any, Any], object],
        *,
        materialized: str | Materialized | None = None,
        name: str | None = None,
    ) -> KTable:
        """Deletes the rows for which ``predicate(key, value)`` is true."""
        t = self._app._register("filter_not", predicate)
        return self._table("filter_not", pb.FilterNotOp(input=self.handle.id, token=t, name=_s(name)), materialized)

    def map_values(
        self,
        fn: Callable[[Any], Any],
        *,
        value: SerdeName | None = None,
        materialized: str | Materialized | None = None,
        name: str | None = None,
    ) -> KTable:
        """``fn(value) -> new value`` for each row (never called for a
        tombstone, which passes on as one)."""
        t = self._app._register("map_values", fn)
        return self._table(
            "map_values", pb.MapValuesOp(input=self.handle.id, token=t, value_serde=_s(value), name=_s(name)), materialized
        )

    def transform_values(
        self,
        supplier: ValueTransformerWithKeySupplier,
        *,
        stores: Iterable[str] = (),
        value: SerdeName | None = None,
        materialized: str | Materialized | None = None,
        name: str | None = None,
    ) -> KTable:
        """Transforms each row's value with a
        :class:`~polystreams.processor.ValueTransformerWithKey`
        (``KTable.transformValues``): ``supplier()`` (the class, or a function
        answering a new transformer) makes one per task, and
        ``transform(key, value)`` answers the new value, a tombstone's None
        included. ``stores`` names the stores (added by
        ``app.add_state_store``) it may use through the context ``init``
        gets. When an operator downstream needs old values (``group_by``),
        the old value is transformed too, unless ``materialized`` names a
        store: the result is then kept there (queryable) and the old values
        are read from it. The node is ``KTABLE-TRANSFORMVALUES-<n>`` unless
        ``name`` names it. A join of a result that is not materialized is
        refused (Kafka Streams would run the transformer on each lookup)."""
        if isinstance(stores, str):
            raise TypeError("transform_values: stores must be a list of store names, not a str")
        t = self._app._register("transform_values", _transformer_supplier(supplier))
        op = pb.TransformValuesOp(input=self.handle.id, token=t, name=_s(name), stores=list(stores), value_serde=_s(value))
        return self._table("transform_values", op, materialized)

    def group_by(
        self,
        fn: Callable[[Any, Any], tuple[Any, Any] | None],
        *,
        key: SerdeName | None = None,
        value: SerdeName | None = None,
        name: str | None = None,
    ) -> KGroupedTable:
        """Regroups the table: ``fn(key, value) -> (new key, new value)``.
        Each update removes the row's old pair from its group and adds the new
        one, so aggregations of the result take an adder and a subtractor
        (``KTable.groupBy``). A pair with a None key or value is skipped, and
        so is a row for which ``fn`` returns None (no pair); the other side of
        the update still applies (a row that maps to nothing any more leaves
        its old group). ``key``/``value`` are the new pairs' serdes; ``name``
        names the repartition topic."""
        t = self._app._register("group_by", _pair_or_skip(fn))
        h = self._app._build(
            "group_by",
            pb.GroupByOp(input=self.handle.id, token=t, key_serde=_s(key), value_serde=_s(value), name=_s(name)),
        )
        return KGroupedTable(self._app, h)

    def foreign_key_join(
        self,
        other: KTable,
        foreign_key: Callable[[Any], Any],
        joiner: ValueJoiner,
        *,
        value: SerdeName | None = None,
        materialized: str | Materialized | None = None,
        name: str | None = None,
    ) -> KTable:
        """Joins each row with the row of ``other`` whose key
        ``foreign_key(value)`` names (``KTable.join(other,
        foreignKeyExtractor, joiner)``, KIP-213): ``joiner(value, other
        value) -> new value``. The result is keyed as this table and updated
        when either side changes; a row whose foreign key is None, or names
        no row of ``other``, has no result. The tables need not be
        co-partitioned: subscriptions travel through the internal topics
        ``KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-<n>-topic`` and
        ``-RESPONSE-<n>-topic``. ``value`` is the joined values' serde;
        ``name`` is ``TableJoined.as`` (it names every node, store and topic
        of the join); ``materialized`` keeps the result in a store."""
        return self._foreign_key_join("foreign_key_join", other, foreign_key, joiner, False, value, materialized, name)

    def left_foreign_key_join(
        self,
        other: KTable,
        foreign_key: Callable[[Any], Any],
        joiner: ValueJoiner,
        *,
        value: SerdeName | None = None,
        materialized: str | Materialized | None = None,
        name: str | None = None,
    ) -> KTable:
        """:meth:`foreign_key_join` that keeps every row: ``joiner`` gets
        None when the foreign key is None or names no row of ``other``
        (``KTable.leftJoin(other, foreignKeyExtractor, joiner)``)."""
        return self._foreign_key_join("left_foreign_key_join", other, foreign_key, joiner, True, value, materialized, name)

    def _foreign_key_join(
        self,
        what: str,
        other: KTable,
        foreign_key: Callable[[Any], Any],
        joiner: ValueJoiner,
        left: bool,
        value: SerdeName | None,
        materialized: str | Materialized | None,
        name: str | None,
    ) -> KTable:
        op = pb.JoinOp(
            input=self.handle.id,
            table=other.handle.id,
            left=left,
            value_serde=_s(value),
            name=_s(name),
        )
        fk = self._app._register(what + ".foreign_key", foreign_key)
        op.foreign_key_token = fk
        try:
            t = _set_joiner(self._app, what, op, joiner)
        except BaseException:
            self._app._functions.pop(fk, None)
            raise
        try:
            return self._table("join", op, materialized)
        except PolystreamsError:
            for token in (fk, t):
                self._app._functions.pop(token, None)  # registered for this call only
            raise

    def to_stream(
        self,
        mapper: Callable[[Any, Any], Any] | None = None,
        /,
        *,
        key: SerdeName | None = None,
        name: str | None = None,
    ) -> KStream:
        """The table's changes as a stream. With ``mapper``, ``mapper(key,
        value) -> new key`` keys the stream (``KTable.toStream(KeyValueMapper)``):
        as in Kafka Streams, a ``to_stream`` node (named ``name``) followed by
        a ``select_key`` node, so a grouping downstream repartitions. ``key``
        is the new keys' serde (only with ``mapper``)."""
        if mapper is None and key is not None:
            raise TypeError(f"{self!r}.to_stream: key names the serde of a mapper's keys, but no mapper was given")
        stream = KStream(self._app, self._app._build("to_stream", pb.ToStreamOp(input=self.handle.id, name=_s(name))))
        if mapper is None:
            return stream
        return stream.select_key(mapper, key=key)

    @property
    def store(self) -> str | None:
        """The name of the store the table is kept in (generated when not
        given with ``materialized``), or None when it has none."""
        return self.handle.store or None

    def query(self) -> KeyValueStore:
        """The table's store, for interactive queries while the app runs
        (``app.store(table.store)``)."""
        if not self.handle.store:
            raise TypeError(f"{self!r} is kept in no store, so it cannot be queried")
        if windowed_codec(self.handle.key_serde):
            raise TypeError(f"{self!r} is a windowed aggregation's table: query it with window_store()")
        return open_store(self._app, self.handle.store)

    def window_store(self) -> WindowStore:
        """A windowed aggregation's window (or session) store, for
        interactive queries while the app runs
        (``app.window_store(table.store)``)."""
        if not self.handle.store:
            raise TypeError(f"{self!r} is kept in no store, so it cannot be queried")
        return open_window_store(self._app, self.handle.store)

    def suppress(self, suppressed: Suppressed) -> KTable:
        """Holds back the table's updates (``KTable.suppress``): with
        :meth:`Suppressed.until_window_closes` (a windowed aggregation's
        table), each window's final result comes out once, when its
        partition's stream time passes the window's end plus grace; with
        :meth:`Suppressed.until_time_limit`, each key's latest update comes
        out once stream time reaches its first held update's time plus the
        limit, or earlier when a bounded buffer is full. Stream time moves
        only with records: a partition that receives none keeps its updates
        held, and they come when a later record moves it."""
        if not isinstance(suppressed, Suppressed):
            raise TypeError(f"suppress: want a Suppressed, not {type(suppressed).__name__}")
        op = suppressed._pb(self.handle.id)
        return KTable(self._app, self._app._build("suppress", op))

    def join(
        self,
        other: KTable,
        joiner: ValueJoiner,
        *,
        value: SerdeName | None = None,
        materialized: str | Materialized | None = None,
        name: str | None = None,
    ) -> KTable:
        """Joins the table with ``other`` on the key (``KTable.join(KTable)``):
        the result holds ``joiner(value, other value)`` for each key both
        tables hold, updated whenever either side changes; deleting either
        side's row deletes the joined one. Both tables must be co-partitioned
        (one partition count) and kept in a store (a table read from a topic
        always is; a filtered or mapped one needs ``materialized``).
        ``value`` is the joined values' serde (default: this table's);
        ``materialized`` keeps the result in a store (queryable when named);
        ``name`` names the join's nodes (``<name>-join-this``,
        ``<name>-join-other`` and ``name`` for the merge)."""
        return self._table_join("join", other, joiner, value, materialized, name)

    def left_join(
        self,
        other: KTable,
        joiner: ValueJoiner,
        *,
        value: SerdeName | None = None,
        materialized: str | Materialized | None = None,
        name: str | None = None,
    ) -> KTable:
        """:meth:`join` that keeps every row of this table: ``joiner`` gets
        None for a key ``other`` does not hold (``KTable.leftJoin(KTable)``)."""
        return self._table_join("left_join", other, joiner, value, materialized, name)

    def outer_join(
        self,
        other: KTable,
        joiner: ValueJoiner,
        *,
        value: SerdeName | None = None,
        materialized: str | Materialized | None = None,
        name: str | None = None,
    ) -> KTable:
        """:meth:`join` that keeps every row of either table: ``joiner`` gets
        None for the side that does not hold the key
        (``KTable.outerJoin(KTable)``)."""
        return self._table_join("outer_join", other, joiner, value, materialized, name)

    def _table_join(
        self,
        what: str,
        other: KTable,
        joiner: ValueJoiner,
        value: SerdeName | None,
        materialized: str | Materialized | None,
        name: str | None,
    ) -> KTable:
        if not isinstance(other, KTable):
            raise TypeError(f"{what}: other must be a KTable, not {type(other).__name__}")
        op = pb.JoinOp(
            input=self.handle.id,
            table=other.handle.id,
            left=what == "left_join",
            outer=what == "outer_join",
            value_serde=_s(value),
            name=_s(name),
        )
        t = _set_joiner(self._app, what, op, joiner)
        try:
            return self._table("join", op, materialized)
        except PolystreamsError:
            self._app._functions.pop(t, None)  # registered for this call only
            raise


def _pair_or_skip(fn: Callable[[Any, Any], tuple[Any, Any] | None]) -> Callable[[Any, Any], tuple[Any, Any]]:
    """A table's group_by mapper that may return no pair (None): Kafka
    Streams skips that side of the row's update (KTableRepartitionMap), as
    it skips a pair with a None key, which is what the engine is sent."""

    @functools.wraps(fn)
    def pair(key: Any, value: Any) -> tuple[Any, Any]:
        p = fn(key, value)
        return (None, None) if p is None else p

    return pair


class KGroupedTable(_Node):
    """A table regrouped by :meth:`KTable.group_by`, ready to aggregate
    (``KGroupedTable``): each update of the source table removes its old value
    from one group (the subtractor) and adds its new one (the adder)."""

    __slots__ = ()
    _kind: Kind = "grouped_table"

    def count(self, *, materialized: str | Materialized | None = None, name: str | None = None) -> KTable:
        """Counts the rows per group (a group whose rows all left keeps 0)."""
        op = pb.CountOp(input=self.handle.id, name=_s(name))
        _materialize(op, "count", materialized)
        return KTable(self._app, self._app._build("count", op))

    def reduce(
        self,
        adder: Callable[[Any, Any], Any] | Literal["sum"],
        subtractor: Callable[[Any, Any], Any] | None = None,
        *,
        materialized: str | Materialized | None = None,
        name: str | None = None,
    ) -> KTable:
        """``adder(aggregate, value)`` adds a new value to its group,
        ``subtractor(aggregate, old value)`` removes a replaced or deleted one;
        a group's first value becomes its aggregate. The built-in ``"sum"``
        (``long``/``double`` values) runs in the engine and needs no
        subtractor; the other built-ins cannot remove values."""
        op = pb.ReduceOp(input=self.handle.id, name=_s(name))
        if isinstance(adder, str):
            builtin = _BUILTIN_REDUCERS.get(adder)
            if builtin is None:
                raise ValueError(f"reduce: {adder!r} is not a built-in reducer (want a function or 'sum')")
            op.builtin = builtin
        elif subtractor is None:
            raise TypeError("reduce on a grouped table needs a subtractor with a function adder")
        _materialize(op, "reduce", materialized)
        if not isinstance(adder, str):
            op.token = self._app._register("reduce", adder)
        if subtractor is not None:
            op.subtractor_token = self._app._register("reduce", subtractor)
        return KTable(self._app, self._app._build("reduce", op))

    def aggregate(
        self,
        initializer: Callable[[], Any],
        adder: Callable[[Any, Any, Any], Any],
        subtractor: Callable[[Any, Any, Any], Any],
        *,
        materialized: str | Materialized | None = None,
        name: str | None = None,
    ) -> KTable:
        """``initializer()`` starts a group's aggregate, ``adder(key, value,
        aggregate)`` adds a new value and ``subtractor(key, old value,
        aggregate)`` removes one. The aggregate's serde is
        ``Materialized(value=...)``'s, else the grouped values'."""
        op = pb.AggregateOp(input=self.handle.id, name=_s(name))
        _materialize(op, "aggregate", materialized)
        for what, fn in (("initializer", initializer), ("adder", adder), ("subtractor", subtractor)):
            if not callable(fn):
                raise TypeError(f"aggregate: the {what} {fn!r} is not callable")
        op.initializer_token = self._app._register("aggregate", initializer)
        op.aggregator_token = self._app._register("aggregate", adder)
        op.subtractor_token = self._app._register("aggregate", subtractor)
        return KTable(self._app, self._app._build("aggregate", op))


def topics_of(topics: str | Sequence[str]) -> list[str]:
    if isinstance(topics, str):
        return [topics]
    out = list(topics)
    for t in out:
        if not isinstance(t, str):
            raise TypeError(f"stream: topics must be str, not {type(t).__name__}")
    return out


class GlobalKTable(_Node):
    """A table of every partition of its topic, kept whole by every engine
    instance (``GlobalKTable``), from :meth:`App.global_table`. A stream
    joins it through a key mapper (``stream.join(global_table, key_mapper,
    joiner)``), with no co-partitioning; it is restored before any record
    is processed, and then follows its topic (the store's changelog)."""

    __slots__ = ()
    _kind: Kind = "global_table"

    @property
    def store(self) -> str:
        """The name of the global table's store (always queryable)."""
        return self.handle.store

    def query(self) -> KeyValueStore:
        """The global table's store, for interactive queries while the app
        runs (``app.store(global_table.store)``)."""
        return open_store(self._app, self.handle.store)


def _join_global(
    stream: KStream,
    what: str,
    table: GlobalKTable,
    key_mapper: Callable[[Any, Any], Any],
    rest: tuple[ValueJoiner, ...],
    left: bool,
    value: SerdeName | None,
    name: str | None,
) -> KStream:
    if len(rest) != 1:
        raise TypeError(f"{what}({table!r}, key_mapper, joiner): a global table is joined through a key mapper and a joiner, {1 + len(rest)} functions given")
    app = stream._app
    km = app._register(what + " key mapper", key_mapper)
    op = pb.JoinOp(input=stream.handle.id, table=table.handle.id, key_mapper_token=km, left=left, value_serde=_s(value), name=_s(name))
    try:
        jt = _set_joiner(app, what, op, rest[0])
    except BaseException:
        app._functions.pop(km, None)
        raise
    try:
        return stream._stream("join", op)
    except PolystreamsError:
        for t in (km, jt):
            app._functions.pop(t, None)  # registered for this call only
        raise
