"""App: one polystreams application — its engine session, its builder and its host loop."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import sys
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import FrameType, MappingProxyType, TracebackType
from typing import Any, Literal

from polystreams._bundle import Executor
from polystreams._client import Client
from polystreams._engine import EngineProcess, check_engine_version, feed_hint, find_engine
from polystreams.config import Config, OffsetReset, redact
from polystreams._session import Handle
from polystreams._version import __version__
from polystreams._pattern import pattern_of
from polystreams.dsl import GlobalKTable, KStream, KTable, Materialized, _materialize, topics_of
from polystreams.errors import FailedPreconditionError, NotFoundError, PolystreamsError, ProcessingError
from polystreams.metrics import DescribeFormat, Metrics
from polystreams.serde import SerdeName, TopicSerde
from polystreams.store import (
    KeyQueryMetadata,
    KeyValueStore,
    StreamsMetadata,
    VersionedKeyValueStore,
    WindowStore,
    open_store,
    open_versioned_store,
    open_window_store,
    query_metadata_for_key,
    streams_metadata,
)
from polystreams.processor import RecordMetadata, StoreBuilder, Topology, metadata_of
from polystreams.v1alpha1 import engine_pb2 as pb

__all__ = ["App", "BrokerOutage", "HostHealth", "RestoreProgress", "State", "StateListener"]

log = logging.getLogger("polystreams")

State = Literal["created", "rebalancing", "restoring", "running", "degraded", "stopped", "error"]
"""The state of an application, as the engine reports it: ``restoring``
while its tasks restore their stores from the changelogs (see
:meth:`App.restore_progress`); ``degraded`` while no Kafka broker has
answered the engine for 10 s (see :meth:`App.broker_outage`): processing
waits, and the state goes back to ``running`` (or ``rebalancing``) by
itself once a broker answers."""

StateListener = Callable[[State, State], object]
"""A callback of :meth:`App.on_state_change`: ``(new_state, old_state)``."""

_STATES: dict[int, State] = {
    pb.STATE_CREATED: "created",
    pb.STATE_REBALANCING: "rebalancing",
    pb.STATE_RESTORING: "restoring",
    pb.STATE_RUNNING: "running",
    pb.STATE_DEGRADED: "degraded",
    pb.STATE_STOPPED: "stopped",
    pb.STATE_ERROR: "error",
}

@dataclass(frozen=True)
class RestoreProgress:
    """How far restoring stores from their changelogs has come, over the
    store partitions of the engine's tasks since the last rebalance.

    ``total_records`` is what the restores have to read (changelog end offset
    minus the local checkpoint, summed once each partition's restore has
    begun); ``restored_records`` what they read so far.
    """

    restored_records: int = 0
    total_records: int = 0
    restoring_partitions: int = 0
    """Store partitions not restored yet."""
    total_partitions: int = 0

    @property
    def done(self) -> bool:
        """No store partition is restoring."""
        return self.restoring_partitions == 0

    @property
    def fraction(self) -> float:
        """restored / total records, between 0.0 and 1.0 (1.0 when nothing is to be read)."""
        if self.total_records <= 0:
            return 1.0
        return min(self.restored_records / self.total_records, 1.0)

    @classmethod
    def from_proto(cls, p: pb.RestoreProgress) -> RestoreProgress:
        return cls(p.restored_records, p.total_records, p.restoring_partitions, p.total_partitions)


@dataclass(frozen=True)
class BrokerOutage:
    """No Kafka broker has answered the application for 10 s or more: the
    state is ``degraded`` (see :meth:`App.broker_outage`).

    ``brokers`` are the application's ``bootstrap.servers``; ``since_ms``
    is when a broker last answered (epoch milliseconds); ``last_error`` the
    last error a request to a broker ended with (``""`` when the requests
    hang, as with a frozen broker); ``outages`` counts the outages since
    the topology started, this one included.
    """

    brokers: tuple[str, ...]
    since_ms: int
    last_error: str
    outages: int

    @classmethod
    def from_proto(cls, p: pb.BrokerOutage) -> BrokerOutage:
        return cls(tuple(p.brokers), p.since_ms, p.last_error, p.outages)


@dataclass(frozen=True)
class HostHealth:
    """This session's host as its engine sees it: whether the host
    processes (this one and any other serving the same session) take the
    bundles the engine's tasks hand them (docs/scale-out.md).

    ``bundles_waiting`` counts the bundles handed to the host and not
    answered yet, whether queued for a worker or being processed by one;
    ``idle_ms`` is how long no worker has called the engine for bundles (0
    while one waits for them); ``stalled`` is set once bundles have waited
    5 s with no worker calling: the tasks make no progress until a host
    serves them or the session expires, while :meth:`App.state` stays
    ``running``. All zero before :meth:`App.start`.
    """

    bundles_waiting: int = 0
    idle_ms: int = 0
    stalled: bool = False

    @classmethod
    def from_proto(cls, p: pb.GetStateResponse) -> HostHealth:
        return cls(p.bundles_waiting, p.host_idle_ms, p.host_stalled)


# What this host understands beyond the protocol's base (OpenSession): fold
# bundles over windows that send each record once (Bundle.value_refs), and
# fold programs, which fold host functions over session and sliding windows
# (Bundle.fold_bases).
# Processor bundles (docs/design/processor.md): store views, entries, ops;
# and header columns and output timestamps for functions with_metadata.
HOST_FEATURES = ["fold_value_refs", "fold_programs", "processors", "metadata"]

# The host loop's Exchange: bundles taken per call, and how long the engine
# may hold a call open waiting for one (also how soon stop() is noticed).
MAX_BUNDLES = 8
WAIT_MS = 500
# When the bundles in hand take longer than this to run, the results so far
# are delivered before going on (the engine re-dispatches the bundles of a
# worker silent for 30 s).
DELIVER_AFTER_S = 5.0
# How long the awaitables of one bundle's async functions may take together
# (polystreams._aio): then those still running are cancelled and fail their
# records, naming the function, before the engine's 30 s host timeout hands
# the bundle to another worker.
ASYNC_TIMEOUT_S = 20.0


TimestampExtractor = Callable[[Any, Any, RecordMetadata, int], int]
"""A source's TimestampExtractor: ``fn(key, value, metadata, partition_time)
-> timestamp`` in epoch ms; ``partition_time`` is the largest timestamp
extracted from the record's partition so far (-1 before any)."""

BuiltinTimestampExtractor = Literal[
    "FailOnInvalidTimestamp",
    "LogAndSkipOnInvalidTimestamp",
    "UsePartitionTimeOnInvalidTimestamp",
    "WallclockTimestampExtractor",
]
"""Kafka Streams' built-in extractors, by class name."""

class App:
    """A polystreams application: a Kafka Streams topology whose functions
    run in this process.

    ``App("wordcount")`` spawns an engine with an embedded Kafka broker
    (``polystreams dev``); ``App("x", brokers="host:9092")`` spawns one
    against that Kafka; ``App("x", engine="http://127.0.0.1:8086")`` (or the
    environment variable ``POLYSTREAMS_URL``) uses a running engine:
    ``token`` (default ``$POLYSTREAMS_TOKEN``) is the bearer token of an
    engine started with one, ``ca_file`` (default ``$POLYSTREAMS_CA_FILE``)
    the PEM CA file to trust for an ``https://`` engine. The
    engine binary is ``$POLYSTREAMS_ENGINE``, else ``polystreams`` on PATH,
    else ``bin/polystreams`` of the repository this package sits in.

    Build the topology with :meth:`stream` and the returned KStream's
    operators, then :meth:`run` serves it until stopped. ``with App(...) as
    app:`` stops the session and the spawned engine at the end; so does
    :meth:`close`.

    Builder calls are made from one thread; :meth:`stop`, :meth:`close`,
    :meth:`state` and the queries of :meth:`store` may be made from any thread.
    """

    def __init__(
        self,
        application_id: str,
        config: Config | Mapping[str, str] | None = None,
        *,
        engine: str | None = None,
        brokers: str | None = None,
        timeout: float = 120.0,
        token: str | None = None,
        ca_file: str | None = None,
    ) -> None:
        self.application_id = application_id
        props = config.properties() if isinstance(config, Config) else {str(k): str(v) for k, v in (config or {}).items()}
        if brokers:
            props["bootstrap.servers"] = brokers
        self._engine: EngineProcess | None = None
        self._closer: Callable[[], None] | None = None
        url = engine or os.environ.get("POLYSTREAMS_URL")
        if not url:
            self._engine = EngineProcess(find_engine(), brokers)
            url = self._engine.url
            # The child never outlives this App, even if close() is forgotten.
            self._closer = weakref.finalize(self, self._engine.close)
        self.engine_url: str = url
        self._client = Client(url, timeout=timeout, token=token, ca_file=ca_file)
        self._functions: dict[int, Callable[..., Any]] = {}
        self._store_key_serdes: dict[str, str] = {}  # store name -> key serde, of the tables built
        self._store_specs: dict[str, StoreBuilder] = {}  # the stores add_state_store added, by name
        self._sources: list[str] = []  # the topics streams and tables read, in builder order
        self._listeners: list[StateListener] = []
        self._last_state: State = "created"  # as run() last saw it
        self._lock = threading.Lock()  # guards the lifecycle flags below
        self._started = False
        self._running = False
        self._stop_sent = False
        self._closed = False
        self._stop_requested = threading.Event()
        self._idle = threading.Event()  # set while run() is not serving
        self._idle.set()
        try:
            resp = self._client.open_session(
                pb.OpenSessionRequest(application_id=application_id, config=props, host_features=HOST_FEATURES)
            )
            check_engine_version(resp.version, __version__)
        except BaseException:
            self._client.close()
            if self._engine is not None:
                self._engine.close()
            raise
        self._session = resp.session_id
        self.config: Mapping[str, str] = MappingProxyType(redact(resp.config))
        """The effective configuration the engine reports (credentials hidden)."""
        b = self._engine.broker if self._engine is not None else None
        self.brokers: str | None = b or resp.config.get("bootstrap.servers") or brokers or None
        """The Kafka bootstrap servers the application uses (the embedded broker's address under ``dev``)."""
        log.debug("session %s opened for %s on %s, config %s", self._session, application_id, url, dict(self.config))

    def __repr__(self) -> str:
        return f"App({self.application_id!r}, engine={self.engine_url!r})"

    def __enter__(self) -> App:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # The builder.

    def stream(
        self,
        topics: str | Sequence[str] | re.Pattern[str],
        *,
        key: SerdeName | TopicSerde | None = None,
        value: SerdeName | TopicSerde | None = None,
        name: str | None = None,
        offset_reset: OffsetReset | None = None,
        timestamp_extractor: TimestampExtractor | BuiltinTimestampExtractor | None = None,
    ) -> KStream:
        """A stream of the records of one or more topics (``StreamsBuilder.stream``).

        A compiled pattern (``re.compile("orders-.*")``) reads every topic
        whose whole name it matches (``StreamsBuilder.stream(Pattern)``):
        those that exist at the start and those created later, found at
        the next metadata refresh (``metadata.max.age.ms``, 5 minutes by
        default). The engine matches with Go's RE2, which has no
        lookaround or backreferences; ``re.IGNORECASE`` and ``re.DOTALL``
        become ``(?i)`` and ``(?s)``, other flags are refused.

        ``key`` and ``value`` name the topics' serdes (default: the config's
        ``default_key_serde`` / ``default_value_serde``, else ``bytes``);
        ``name`` names the source node (``Consumed.as``); ``offset_reset``
        is ``Consumed.withOffsetResetPolicy``: where a partition with no
        committed offset starts (default: the config's ``auto_offset_reset``).
        ``timestamp_extractor`` is ``Consumed.withTimestampExtractor``:
        ``fn(key, value, metadata, partition_time) -> int`` gives each
        record's timestamp (epoch ms; a negative one drops the record, a
        raise stops the application), or one of Kafka Streams' built-in
        extractors by class name (``"LogAndSkipOnInvalidTimestamp"``, ...).
        """
        op = pb.StreamOp(
            topics=[] if isinstance(topics, re.Pattern) else topics_of(topics),
            topic_pattern=pattern_of(topics) if isinstance(topics, re.Pattern) else "",
            key_serde=key or "",
            value_serde=value or "",
            name=name or "",
            offset_reset=offset_reset or "",
        )
        self._extractor(op, "stream", timestamp_extractor)
        return KStream(self, self._build("stream", op))

    def _extractor(self, op: Any, call: str, extractor: TimestampExtractor | BuiltinTimestampExtractor | None) -> None:
        if extractor is None:
            return
        if isinstance(extractor, str):
            op.timestamp_extractor.builtin = extractor
        else:
            op.timestamp_extractor.token = self._register(f"{call} timestamp_extractor", extractor)

    def table(
        self,
        topic: str,
        *,
        key: SerdeName | TopicSerde | None = None,
        value: SerdeName | TopicSerde | None = None,
        materialized: str | Materialized | None = None,
        name: str | None = None,
        offset_reset: OffsetReset | None = None,
        timestamp_extractor: TimestampExtractor | BuiltinTimestampExtractor | None = None,
    ) -> KTable:
        """A table of the latest value per key of ``topic`` (``StreamsBuilder.table``):
        each record upserts its key, a ``None`` value deletes it.

        ``materialized`` names the table's store (a str, or a Materialized),
        which makes it queryable; otherwise the store is named
        ``<topic>-STATE-STORE-<n>`` and kept only when an operator needs it.
        ``name`` names the source node (``Consumed.as``); ``offset_reset``
        and ``timestamp_extractor`` as for :meth:`stream`.
        """
        op = pb.TableOp(
            topic=topic, key_serde=key or "", value_serde=value or "", name=name or "", offset_reset=offset_reset or ""
        )
        self._extractor(op, "table", timestamp_extractor)
        _materialize(op, "table", materialized)
        return KTable(self, self._build("table", op))

    def global_table(
        self,
        topic: str,
        *,
        key: SerdeName | TopicSerde | None = None,
        value: SerdeName | TopicSerde | None = None,
        materialized: str | Materialized | None = None,
        name: str | None = None,
    ) -> GlobalKTable:
        """A table of every partition of ``topic``, kept whole by every
        engine instance (``StreamsBuilder.globalTable``): each record
        upserts its key, a ``None`` value deletes it. It is restored from
        ``topic`` (its changelog) before any record is processed, then
        kept up to date. Streams join it with ``stream.join(global_table,
        key_mapper, joiner)``, with no co-partitioning.

        ``materialized`` names its store (default
        ``<topic>-STATE-STORE-<n>``), which is always queryable. ``name``
        names the processor and, suffixed ``-source``, the source node
        (``Consumed.as``).
        """
        op = pb.GlobalTableOp(topic=topic, key_serde=key or "", value_serde=value or "", name=name or "")
        _materialize(op, "global_table", materialized)
        return GlobalKTable(self, self._build("global_table", op))

    def add_state_store(self, store: StoreBuilder) -> None:
        """Adds a state store for processors (``StreamsBuilder.addStateStore``):
        a processor uses it by naming it in ``process(..., stores=[name])``::

            app.add_state_store(Stores.key_value_store("counts", key="string", value="long"))
        """
        if not isinstance(store, StoreBuilder):
            raise TypeError(f"add_state_store: want a StoreBuilder (see Stores), got {type(store).__name__}")
        self._call_build("add_state_store", store.to_proto())
        self._store_specs[store.name] = store
        if store.key:
            self._store_key_serdes[store.name] = store.key

    def topology(self) -> Topology:
        """A :class:`~polystreams.processor.Topology` of this application, to
        build with sources, processors and sinks (Kafka Streams' ``Topology``
        of the Processor API) instead of, or beside, the DSL. Each call is
        made at once, so an error raises there."""
        return Topology(self)

    def add_topology(self, topology: Topology) -> None:
        """Makes the calls of a :class:`~polystreams.processor.Topology`
        built on its own (``Topology()``), in order."""
        topology._apply(self)

    def describe(self, *, format: DescribeFormat = "text") -> str:
        """The topology as Kafka Streams' ``Topology.describe().toString()``
        prints it, or in another ``format``: ``json`` (structured; the
        topology file of ``polystreams describe``), ``mermaid``, ``dot`` or
        ``svg`` (a picture laid out by the engine)::

            pathlib.Path("topology.svg").write_text(app.describe(format="svg"))
        """
        if format == "text":
            return self._client.describe(pb.DescribeRequest(session_id=self._session)).text
        return self._client.describe(pb.DescribeRequest(session_id=self._session, format=format)).output

    def _register(self, op: str, fn: Callable[..., Any]) -> int:
        if not callable(fn):
            raise TypeError(f"{op}: {fn!r} is not callable")
        name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
        req = pb.RegisterFunctionRequest(session_id=self._session, name=name, metadata=metadata_of(fn))
        token = self._client.register_function(req).token
        self._functions[token] = fn
        return token

    def _call_build(self, op: str, message: Any) -> pb.BuildResponse:
        req = pb.BuildRequest(session_id=self._session)
        getattr(req, op).CopyFrom(message)
        try:
            return self._client.build(req)
        except PolystreamsError:
            for field in ("token", "initializer_token", "aggregator_token", "subtractor_token", "merger_token"):
                self._functions.pop(getattr(message, field, 0), None)  # registered for this call only
            if op in ("stream", "table") and message.HasField("timestamp_extractor"):
                self._functions.pop(message.timestamp_extractor.token, None)
            raise

    def _build(self, op: str, message: Any) -> Handle:
        resp = self._call_build(op, message)
        if not resp.HasField("handle"):
            raise PolystreamsError("internal", f"Build({op}): the engine answered no handle")
        h = Handle.from_proto(resp.handle)
        if isinstance(message, pb.StreamOp):
            self._sources.extend(message.topics)
        elif isinstance(message, (pb.TableOp, pb.GlobalTableOp)):
            self._sources.append(message.topic)
        if h.store and h.key_serde:
            self._store_key_serdes[h.store] = h.key_serde
        return h

    def _build_terminal(self, op: str, message: Any) -> None:
        self._call_build(op, message)

    def _add_source(self, topics: list[str], key_serde: str, value_serde: str, pattern: re.Pattern[str] | None = None) -> None:
        """A Topology source was added (Topology.add_source)."""
        self._sources.extend(topics)

    # Running.

    def state(self) -> State:
        """The application's state, as the engine reports it now."""
        resp = self._client.get_state(pb.GetStateRequest(session_id=self._session))
        return _STATES.get(resp.state, "created")

    def pause(self) -> None:
        """Pauses processing (``KafkaStreams.pause``, KIP-834): the engine
        fetches nothing more and its tasks take no new records, while the
        application stays in the group with its tasks. Before :meth:`start`
        it starts paused. From any thread."""
        self._client.pause_processing(pb.PauseProcessingRequest(session_id=self._session))

    def resume(self) -> None:
        """Resumes processing where :meth:`pause` left it (``KafkaStreams.resume``)."""
        self._client.resume_processing(pb.ResumeProcessingRequest(session_id=self._session))

    def is_paused(self) -> bool:
        """Whether :meth:`pause` was called and :meth:`resume` not since (``KafkaStreams.isPaused``)."""
        return self._client.get_state(pb.GetStateRequest(session_id=self._session)).paused

    def clean_up(self) -> str | None:
        """Deletes the application's local state directory,
        ``<state.dir>/<application.id>`` (``KafkaStreams.cleanUp``), so that
        the next start restores every store from its changelog; answers the
        directory deleted, or None when there was none. Refused
        (:class:`FailedPreconditionError`) while the application runs: call it
        before :meth:`start` or after :meth:`stop`."""
        deleted = self._client.clean_up_state(pb.CleanUpStateRequest(session_id=self._session)).deleted
        return deleted or None

    def restore_progress(self) -> RestoreProgress:
        """How far the engine's restore of this application's stores has come,
        as it reports it now (all zeros before :meth:`start`). While it is
        not ``done`` the state is ``restoring``::

            p = app.restore_progress()
            print(f"{p.fraction:.0%} of {p.total_records} records, {p.restoring_partitions} partitions to go")
        """
        resp = self._client.get_state(pb.GetStateRequest(session_id=self._session))
        return RestoreProgress.from_proto(resp.restore)

    def broker_outage(self) -> BrokerOutage | None:
        """The outage that makes the application ``degraded`` now: which
        brokers do not answer, and since when; ``None`` in any other state.
        From any thread::

            if (outage := app.broker_outage()) is not None:
                print(f"no answer from {', '.join(outage.brokers)} since {outage.since_ms}")
        """
        resp = self._client.get_state(pb.GetStateRequest(session_id=self._session))
        if resp.state != pb.STATE_DEGRADED or not resp.HasField("broker_outage"):
            return None
        return BrokerOutage.from_proto(resp.broker_outage)

    def metrics(self) -> Metrics:
        """A summary of the engine's metrics for this application now:
        state, records per node, lag and store entries per task, restore
        progress, dropped and failed records (see :class:`Metrics`)."""
        resp = self._client.get_metrics(pb.GetMetricsRequest(session_id=self._session))
        return Metrics.from_proto(resp, _STATES.get(resp.state, "created"))

    def on_state_change(self, callback: StateListener) -> StateListener:
        """Calls ``callback(new_state, old_state)`` whenever the application's
        state changes (Kafka Streams' ``setStateListener``): typically
        ``created`` -> ``rebalancing`` -> ``restoring`` -> ``running`` (and
        back through ``rebalancing`` and ``restoring`` when the group
        rebalances) -> ``stopped`` or ``error``. ``restoring`` comes after each
        assignment of tasks with stores, however short (see
        :meth:`restore_progress`). ``degraded`` comes while no broker
        answers (``running`` -> ``degraded`` -> ``running``; see
        :meth:`broker_outage`). Callbacks run in the thread of :meth:`run`;
        the engine tells it of every change once, in order, so none is missed.
        An exception in a callback is logged and ignored.
        Returns ``callback``, so it may be used as a decorator."""
        if not callable(callback):
            raise TypeError(f"on_state_change: {callback!r} is not callable")
        with self._lock:
            self._listeners.append(callback)
        return callback

    def _set_state(self, new: State) -> None:
        with self._lock:
            old = self._last_state
            if new == old:
                return
            self._last_state = new
            listeners = list(self._listeners)
        log.debug("app %r: state %s -> %s", self.application_id, old, new)
        for cb in listeners:
            try:
                cb(new, old)
            except Exception:
                log.exception("app %r: state listener %r failed on %s -> %s", self.application_id, cb, old, new)

    def store(self, name: str, *, enable_stale_stores: bool = False) -> KeyValueStore:
        """The key-value store ``name`` (e.g. ``table.store``, or a
        ``materialized`` name), for interactive queries while :meth:`run`
        serves the topology — from any thread. ``enable_stale_stores`` lets
        standby copies answer (Kafka Streams'
        ``StoreQueryParameters.enableStaleStores``). See
        :class:`KeyValueStore`."""
        return open_store(self, name, enable_stale_stores)

    def window_store(self, name: str, *, enable_stale_stores: bool = False) -> WindowStore:
        """The window or session store ``name`` of a windowed aggregation
        (e.g. ``table.store``), for interactive queries while :meth:`run`
        serves the topology — from any thread. See :class:`WindowStore`."""
        return open_window_store(self, name, enable_stale_stores)

    def versioned_store(self, name: str, *, enable_stale_stores: bool = False) -> VersionedKeyValueStore:
        """The versioned store ``name`` (a table materialized with
        ``Materialized(name, versioned=...)``), for interactive queries as of
        a time while :meth:`run` serves the topology. See
        :class:`VersionedKeyValueStore`."""
        return open_versioned_store(self, name, enable_stale_stores)

    def query_metadata_for_key(self, store: str, key: Any) -> KeyQueryMetadata:
        """Which instance of the application holds ``key`` of ``store``
        (Kafka Streams' ``queryMetadataForKey``): needs ``application.server``
        on the instances. See :class:`KeyQueryMetadata`."""
        return query_metadata_for_key(self, store, key)

    def streams_metadata_for_store(self, store: str) -> list[StreamsMetadata]:
        """The instances holding ``store``, active or standby (Kafka
        Streams' ``streamsMetadataForStore``)."""
        return streams_metadata(self, store)

    def metadata_for_all_streams_clients(self) -> list[StreamsMetadata]:
        """Every instance of the application with an ``application.server``
        (Kafka Streams' ``metadataForAllStreamsClients``)."""
        return streams_metadata(self)

    def dropped_records(self) -> int:
        """Records the engine's tasks dropped since the topology started
        (Kafka Streams' ``dropped-records-total``): records too late for
        every window they fall in (past the window's end plus grace), and
        records with a null key or value that an aggregation skips."""
        resp = self._client.get_state(pb.GetStateRequest(session_id=self._session))
        return resp.dropped_records

    def host_health(self) -> HostHealth:
        """Whether this session's host takes its bundles, as the engine
        reports it now — from any thread; e.g. a health check that fails
        while ``app.host_health().stalled``. See :class:`HostHealth`."""
        resp = self._client.get_state(pb.GetStateRequest(session_id=self._session))
        return HostHealth.from_proto(resp)

    def start(self) -> None:
        """Starts processing (creates internal topics, joins the group). Called
        by :meth:`run`; builder calls are refused after it."""
        with self._lock:
            if self._closed or self._stop_sent:
                raise FailedPreconditionError("failed_precondition", f"start: app {self.application_id!r} is stopped")
            if self._started:
                return
        self._client.start(pb.StartRequest(session_id=self._session))
        with self._lock:
            self._started = True
        if self._engine is not None and self._engine.broker:
            hint = feed_hint(self._engine.broker, self._sources, self.config.get("commit.interval.ms", "?"))
            print(hint, file=sys.stderr, flush=True)

    def run(self) -> None:
        """Starts the topology and serves its bundles until it stops.

        Returns when :meth:`stop` is called (from another thread; at once if
        it was called before), on Ctrl-C or SIGTERM (when run in the main
        thread), or when the engine stops the session; raises ProcessingError when the topology fails (e.g. a
        function raised for a record; the message names node, topic,
        partition and offset).
        """
        with self._lock:
            if self._running:
                raise FailedPreconditionError("failed_precondition", "run: the app is already running")
            if self._closed:
                raise FailedPreconditionError("failed_precondition", f"run: app {self.application_id!r} is closed")
            if self._stop_sent:
                return  # stop() came first (e.g. from another thread, racing this call)
            self._running = True
            self._idle.clear()
        try:
            with _stop_on_signals(self._stop_requested):
                if not self._stop_requested.is_set():
                    self.start()
                    self._serve()
                self._send_stop()
            self._stopped()
        except KeyboardInterrupt:
            # A second Ctrl-C (or one outside the main thread's handler): stop
            # as cleanly as we can and return without a traceback.
            self._send_stop()
            self._stopped()
        except BaseException:
            self._send_stop()  # best effort: the session must not outlive the host
            raise
        finally:
            with self._lock:
                self._running = False
                self._idle.set()

    def _serve(self) -> None:
        executor = Executor(
            self._functions,
            async_timeout=ASYNC_TIMEOUT_S,
            read=self._read,
            application_id=self.application_id,
            store_specs=self._store_specs,
        )
        try:
            self._serve_with(executor)
        finally:
            executor.close()

    def _read(self, req: pb.ReadRequest) -> pb.ReadResponse:
        """A processor's store read during a bundle (the Read RPC)."""
        req.session_id = self._session
        return self._client.read(req)

    def _serve_with(self, executor: Executor) -> None:
        worker = uuid.uuid4().hex
        results: list[pb.BundleResult] = []
        exchange = self._client.exchange
        while True:
            stopping = self._stop_requested.is_set()
            req = pb.ExchangeRequest(
                session_id=self._session,
                worker_id=worker,
                results=results,
                max_bundles=0 if stopping else MAX_BUNDLES,
                wait_ms=0 if stopping else WAIT_MS,
            )
            try:
                resp = exchange(req)
            except NotFoundError:
                if self._stop_requested.is_set() or self._stop_sent:
                    return  # the session ended as asked
                raise
            results = []
            state = _STATES.get(resp.state)
            if state is not None:
                self._set_state(state)
            if resp.state == pb.STATE_ERROR:
                self._send_stop()
                message = resp.error or f"app {self.application_id!r} failed (the engine gave no reason)"
                if resp.HasField("failed_record"):
                    r = resp.failed_record
                    raise ProcessingError(message, topic=r.topic, partition=r.partition, offset=r.offset, node=r.node)
                raise ProcessingError(message)
            if resp.state == pb.STATE_STOPPED or stopping:
                return
            last_call = time.monotonic()
            for bundle in resp.bundles:
                results.append(executor.process(bundle))
                if time.monotonic() - last_call > DELIVER_AFTER_S:
                    # Slow functions: hand over what is done, so the engine's
                    # tasks go on and it does not take this worker for dead
                    # (and hand its bundles to another).
                    self._deliver(worker, results)
                    results = []
                    last_call = time.monotonic()

    def _stopped(self) -> None:
        """run() ends cleanly: the session is stopped (the engine may not have
        said so in the last Exchange)."""
        if self._started and self._last_state not in ("stopped", "error"):
            self._set_state("stopped")

    def _deliver(self, worker: str, results: list[pb.BundleResult]) -> None:
        self._client.exchange(
            pb.ExchangeRequest(session_id=self._session, worker_id=worker, results=results, max_bundles=0, wait_ms=0)
        )

    def stop(self) -> None:
        """Stops the application: :meth:`run` delivers what it has processed,
        the engine commits it and leaves the group, and run() returns. Safe
        to call from any thread, and more than once."""
        self._stop_requested.set()
        with self._lock:
            if self._running:
                return  # run() sends Stop itself
        self._send_stop()

    def _send_stop(self) -> None:
        with self._lock:
            if self._stop_sent or self._closed:
                return
            self._stop_sent = True
        try:
            self._client.stop(pb.StopRequest(session_id=self._session))
        except NotFoundError:
            pass  # the session is gone already (stopped, or expired)
        except PolystreamsError as e:
            log.warning("stopping app %r: %s", self.application_id, e)

    def close(self, timeout: float = 60.0) -> None:
        """Stops the application (see :meth:`stop`), waits up to ``timeout``
        seconds for :meth:`run` to return, and stops the engine this App
        spawned."""
        if self._closed:
            return
        self.stop()
        if not self._idle.wait(timeout):
            log.warning("app %r: run() did not return within %gs of close()", self.application_id, timeout)
        self._send_stop()
        with self._lock:
            self._closed = True
        self._client.close()
        if self._closer is not None:
            self._closer()


@contextlib.contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """Within the block (in the main thread), SIGINT and SIGTERM set stop
    instead of interrupting; the previous handlers come back after the first
    signal, so a second Ctrl-C interrupts as usual."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    sigs = [signal.SIGINT, signal.SIGTERM]
    previous = {s: signal.getsignal(s) for s in sigs}

    def restore() -> None:
        for s, h in previous.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)

    def handler(signum: int, frame: FrameType | None) -> None:
        log.info("%s: stopping", signal.Signals(signum).name)
        stop.set()
        restore()

    for s in sigs:
        signal.signal(s, handler)
    try:
        yield
    finally:
        restore()
