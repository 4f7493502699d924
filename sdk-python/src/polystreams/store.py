"""Interactive queries: read a table's key-value store while the app runs
(Kafka Streams' ``ReadOnlyKeyValueStore``), or a windowed aggregation's
window or session store (``ReadOnlyWindowStore``, ``ReadOnlySessionStore``)."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from polystreams import serde
from polystreams._session import Session
from polystreams.errors import PolystreamsError
from polystreams.v1alpha1 import engine_pb2 as pb
from polystreams.windows import Windowed, to_ms

__all__ = ["HostInfo", "KeyQueryMetadata", "KeyQueryResult", "KeyValueStore", "StreamsMetadata", "WindowStore"]

# Entries asked for per Query call; longer answers are read page by page.
PAGE = 10_000
# The most entries the engine answers in one Query call (a window fetch's
# answer is read in one call).
MAX_ENTRIES = 100_000


@dataclass(frozen=True)
class HostInfo:
    """An instance's ``application.server`` (Kafka Streams' ``HostInfo``)."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class KeyQueryMetadata:
    """Where a key of a store lives (Kafka Streams' ``KeyQueryMetadata``):
    the instance holding its partition active (None while no instance does:
    ``NOT_AVAILABLE``, e.g. during a rebalance), those holding it as
    standbys, and the partition (murmur2 of the serialized key modulo the
    partitions of the store's source topic; -1 for a global store)."""

    active_host: HostInfo | None
    standby_hosts: list[HostInfo]
    partition: int


@dataclass(frozen=True)
class StreamsMetadata:
    """One instance of the application (Kafka Streams' ``StreamsMetadata``):
    its ``application.server``, the stores and topic partitions it holds
    active, and those it holds as standbys."""

    host_info: HostInfo
    state_store_names: list[str]
    topic_partitions: list[tuple[str, int]]
    standby_state_store_names: list[str]
    standby_topic_partitions: list[tuple[str, int]]


@dataclass(frozen=True)
class KeyQueryResult:
    """The answer to :meth:`KeyValueStore.query` (an IQv2 ``KeyQuery``
    result): the value (None when the store holds none), the timestamp of
    the record that last wrote it, the key's partition, whether a standby
    answered (possible only with ``enable_stale_stores``), and the
    instances that answered (their ``application.server``)."""

    value: Any
    timestamp: int | None
    partition: int | None
    from_standby: bool
    served_by: list[str]


class KeyValueStore:
    """A read-only view of a key-value store of the running topology
    (``app.store(name)`` or ``table.query()``).

    Keys are encoded with the store's key serde; entries come back decoded
    with the store's serdes, in the order of their **serialized** keys (as
    in Kafka Streams' RocksDB stores): byte order of UTF-8 text for string
    keys, big-endian two's complement for long and integer keys (so
    negative numbers sort after positive ones). Entries are those of the
    store partitions this engine holds.

    With ``application.server`` set on every instance of the application,
    the engine answers from whichever instance holds the key (or, for
    ``range``, ``prefix`` and ``all``, from every instance); with
    ``enable_stale_stores`` a standby copy may answer a key whose active
    instance cannot. While the group moves a partition, a query of it
    raises UnavailableError naming the store, key and partition: retry it.

    Queries may be made from any thread while :meth:`App.run` serves the
    topology. Before the topology runs they raise FailedPreconditionError;
    a store that does not exist raises NotFoundError naming it and the
    stores that do. Iterators are read page by page as they are consumed;
    the first page is read by the call itself (so errors raise there).
    """

    def __init__(self, app: Session, name: str, key_serde: str | None = None, enable_stale_stores: bool = False) -> None:
        self._app = app
        self.name = name
        self._key_serde = key_serde or None
        self.enable_stale_stores = enable_stale_stores

    def __repr__(self) -> str:
        return f"KeyValueStore({self.name!r})"

    @property
    def key_serde(self) -> str:
        """The store's key serde (asked of the engine when not known yet)."""
        if self._key_serde is None:
            self._query(pb.QueryRequest(all=True, limit=1))
        assert self._key_serde is not None
        return self._key_serde

    def get(self, key: Any) -> Any | None:
        """The value of ``key``, or None when the store holds none."""
        entries, _ = self._query(pb.QueryRequest(get=self._encode(key, "get")))
        return entries[0][1][1] if entries else None

    def query(self, key: Any) -> KeyQueryResult:
        """The value of ``key`` with its timestamp, partition and whether a
        standby answered (Kafka Streams' IQv2 ``KeyQuery``)."""
        resp = self._request(pb.QueryRequest(get=self._encode(key, "query")))
        entries = self._entries(resp)
        return KeyQueryResult(
            value=entries[0][1][1] if entries else None,
            timestamp=resp.timestamps[0] if entries and resp.timestamps else None,
            partition=resp.partition if resp.HasField("partition") else None,
            from_standby=resp.from_standby,
            served_by=list(resp.served_by),
        )

    def range(self, from_: Any = None, to: Any = None) -> Iterator[tuple[Any, Any]]:
        """The entries with keys from ``from_`` to ``to``, both inclusive;
        None leaves that end open."""
        lo = None if from_ is None else self._encode(from_, "range")
        hi = None if to is None else self._encode(to, "range")
        return self._scan(lo, hi, None)

    def prefix(self, prefix: Any) -> Iterator[tuple[Any, Any]]:
        """The entries whose serialized key starts with the serialized
        ``prefix``. A str is encoded as UTF-8 (so for string keys this is a
        text prefix); bytes are taken as they are; other objects are encoded
        with the key serde (a long prefix is all 8 bytes, i.e. one key)."""
        if isinstance(prefix, (bytes, bytearray)):
            p = bytes(prefix)
        elif isinstance(prefix, str):
            p = prefix.encode()
        else:
            p = self._encode(prefix, "prefix")
        return self._scan(p, None, p)

    def all(self) -> Iterator[tuple[Any, Any]]:
        """Every entry."""
        return self._scan(None, None, None)

    def approximate_num_entries(self) -> int:
        """The number of entries (counted by reading the keys; the store
        is not locked, so it may change meanwhile)."""
        return sum(1 for _ in self.all())

    # Internals.

    def _encode(self, key: Any, what: str) -> bytes:
        if key is None:
            raise TypeError(f"{self.name}.{what}: a key must not be None")
        ks = self.key_serde
        try:
            b = serde.encode(ks, key)
        except (TypeError, ValueError) as e:
            raise TypeError(f"store {self.name!r}: {what}: cannot encode key {key!r} with key serde {ks!r}: {e}") from None
        assert b is not None
        return b

    def _query(self, req: pb.QueryRequest) -> tuple[list[tuple[bytes, tuple[Any, Any]]], bool]:
        """Runs a query; returns ([(raw key, value)], truncated)."""
        resp = self._request(req)
        return self._entries(resp), resp.truncated

    def _request(self, req: pb.QueryRequest) -> pb.QueryResponse:
        req.session_id = self._app._session
        req.store = self.name
        req.enable_stale_stores = self.enable_stale_stores
        return self._app._client.query(req)

    def _entries(self, resp: pb.QueryResponse) -> list[tuple[bytes, tuple[Any, Any]]]:
        if resp.key_serde:
            self._key_serde = resp.key_serde
        keys, kfail = serde.decode_column(resp.key_serde or "bytes", resp.keys, list(resp.key_lengths))
        values, vfail = serde.decode_column(resp.value_serde or "bytes", resp.values, list(resp.value_lengths))
        if kfail or vfail or len(keys) != len(values):
            detail = next(iter({**kfail, **vfail}.values()), f"{len(keys)} keys, {len(values)} values")
            raise PolystreamsError("internal", f"Query {self.name!r}: the engine's answer does not decode: {detail}")
        raw: list[bytes] = []
        pos = 0
        for n in resp.key_lengths:
            raw.append(resp.keys[pos : pos + max(n, 0)])
            pos += max(n, 0)
        return [(r, (k, v)) for r, k, v in zip(raw, keys, values)]

    def _scan(self, lo: bytes | None, hi: bytes | None, prefix: bytes | None) -> Iterator[tuple[Any, Any]]:
        """Entries from lo to hi (inclusive; None: open) or with a prefix,
        paged. The first page is read now."""
        if prefix is not None:
            req = pb.QueryRequest(prefix=prefix, limit=PAGE)
        elif lo is None and hi is None:
            req = pb.QueryRequest(all=True, limit=PAGE)
        else:
            r = pb.KeyRange()
            if lo is not None:
                setattr(r, "from", lo)  # a Python keyword
            if hi is not None:
                r.to = hi
            req = pb.QueryRequest(range=r, limit=PAGE)
        first = self._query(req)
        return self._pages(first, hi, prefix)

    def _pages(
        self, page: tuple[list[tuple[bytes, tuple[Any, Any]]], bool], hi: bytes | None, prefix: bytes | None
    ) -> Iterator[tuple[Any, Any]]:
        while True:
            entries, truncated = page
            for raw, kv in entries:
                if prefix is not None and not raw.startswith(prefix):
                    return
                yield kv
            if not truncated or not entries:
                return
            # The next page starts just after the last key (key + 0x00 is the
            # next possible key in byte order).
            r = pb.KeyRange()
            setattr(r, "from", entries[-1][0] + b"\x00")
            if hi is not None:
                r.to = hi
            page = self._query(pb.QueryRequest(range=r, limit=PAGE))


Time = datetime.datetime | int
"""A point in time: an aware datetime, or epoch milliseconds."""


class WindowStore:
    """A read-only view of a windowed aggregation's store of the running
    topology (``app.window_store(name)`` or ``table.window_store()``): a
    window store (time and sliding windows) or a session store.

    Entries come back as ``(Windowed(key, start, end), value)``. For a window
    store, :meth:`fetch` and :meth:`fetch_all` answer the windows whose start
    is from ``time_from`` to ``time_to`` (both inclusive; Kafka Streams'
    ``WindowStore.fetch`` and ``fetchAll``); for a session store, the
    sessions that end at or after ``time_from`` and start at or before
    ``time_to`` (``SessionStore.findSessions``). Times are epoch
    milliseconds or aware datetimes. Windows past the store's retention are
    gone. Errors are as for :class:`KeyValueStore`; an answer of more than
    100,000 windows raises: ask for a shorter time range.
    """

    def __init__(self, app: Session, name: str, key_serde: str | None = None, enable_stale_stores: bool = False) -> None:
        self._kv = KeyValueStore(app, name, key_serde, enable_stale_stores)
        self.name = name

    def __repr__(self) -> str:
        return f"WindowStore({self.name!r})"

    @property
    def key_serde(self) -> str:
        """The store's windowed key serde, e.g. ``windowed(string,60000)``
        (asked of the engine when not known yet)."""
        if self._kv._key_serde is None:
            self._kv._query(pb.QueryRequest(window_fetch=pb.WindowFetch(from_ms=0, to_ms=0), limit=1))
        return self._kv.key_serde

    def fetch(self, key: Any, time_from: Time, time_to: Time) -> list[tuple[Windowed[Any], Any]]:
        """The windows of ``key`` in the time range, by start time."""
        if key is None:
            raise TypeError(f"{self.name}.fetch: a key must not be None")
        ks = self.key_serde
        inner = _inner_serde(ks)
        try:
            b = serde.encode(inner, key)
        except (TypeError, ValueError) as e:
            raise TypeError(f"store {self.name!r}: fetch: cannot encode key {key!r} with key serde {inner!r}: {e}") from None
        return self._fetch(b, time_from, time_to, "fetch")

    def fetch_all(self, time_from: Time, time_to: Time) -> list[tuple[Windowed[Any], Any]]:
        """The windows of every key in the time range."""
        return self._fetch(None, time_from, time_to, "fetch_all")

    def _fetch(self, key: bytes | None, time_from: Time, time_to: Time, what: str) -> list[tuple[Windowed[Any], Any]]:
        w = pb.WindowFetch(from_ms=to_ms(time_from, f"{what}: time_from"), to_ms=to_ms(time_to, f"{what}: time_to"))
        if key is not None:
            w.key = key
        entries, truncated = self._kv._query(pb.QueryRequest(window_fetch=w, limit=MAX_ENTRIES))
        if truncated:
            raise PolystreamsError(
                "resource_exhausted",
                f"store {self.name!r}: {what}: more than {MAX_ENTRIES} windows from {w.from_ms} to {w.to_ms}; ask for a shorter range",
            )
        out: list[tuple[Windowed[Any], Any]] = []
        for _, (k, v) in entries:
            if not isinstance(k, Windowed):
                raise PolystreamsError("internal", f"store {self.name!r} answered key {k!r}, not a windowed key: it is no window store")
            out.append((k, v))
        return out


def _inner_serde(windowed: str) -> str:
    """The inner serde of a windowed serde name (``windowed(string,60000)`` ->
    ``string``); a name that is not windowed is its own."""
    if windowed.endswith(")") and "(" in windowed:
        return windowed[windowed.index("(") + 1 : -1].split(",", 1)[0]
    return windowed


@dataclass(frozen=True)
class VersionedRecord:
    """One version of a versioned store's value (Kafka Streams'
    ``VersionedRecord``): valid from ``timestamp`` (epoch ms) until
    ``valid_to`` (exclusive; None for the latest version)."""

    value: Any
    timestamp: int
    valid_to: int | None


class VersionedKeyValueStore:
    """A read-only view of a versioned store of the running topology
    (``app.versioned_store(name)``): a table materialized with
    ``Materialized(name, versioned=...)`` (Kafka Streams'
    ``VersionedKeyValueStore``, KIP-889).

    :meth:`get` answers the latest version of a key, ``get(key, as_of=t)``
    the version valid at ``t`` (epoch ms or an aware datetime). A read as
    of a time older than the store's history retention (behind the newest
    timestamp the store saw) finds nothing, unless the key's latest
    version is older still; a deleted key (a tombstone) finds nothing.
    Errors are as for :class:`KeyValueStore`.
    """

    def __init__(self, app: Session, name: str, key_serde: str | None = None, enable_stale_stores: bool = False) -> None:
        self._kv = KeyValueStore(app, name, key_serde, enable_stale_stores)
        self.name = name

    def __repr__(self) -> str:
        return f"VersionedKeyValueStore({self.name!r})"

    @property
    def key_serde(self) -> str:
        """The store's key serde (asked of the engine when not known yet)."""
        if self._kv._key_serde is None:
            self._kv._query(pb.QueryRequest(versioned_get=pb.VersionedGet(key=b"")))
        return self._kv.key_serde

    def get(self, key: Any, *, as_of: Time | None = None) -> VersionedRecord | None:
        """The latest version of ``key``, or with ``as_of`` the version valid
        then (``VersionedKeyValueStore.get(key[, asOfTimestamp])``); None
        when there is none."""
        if key is None:
            raise TypeError(f"{self.name}.get: a key must not be None")
        self.key_serde  # noqa: B018 - learn the key serde before encoding
        g = pb.VersionedGet(key=self._kv._encode(key, "get"))
        if as_of is not None:
            g.as_of_ms = to_ms(as_of, "get: as_of")
        resp = self._kv._request(pb.QueryRequest(versioned_get=g))
        entries = self._kv._entries(resp)
        if not entries:
            return None
        return VersionedRecord(
            value=entries[0][1][1],
            timestamp=resp.timestamps[0] if resp.timestamps else 0,
            valid_to=resp.valid_to_ms if resp.HasField("valid_to_ms") else None,
        )


def open_versioned_store(session: Session, name: str, enable_stale_stores: bool = False) -> VersionedKeyValueStore:
    """The versioned store ``name`` of session (App.versioned_store)."""
    return VersionedKeyValueStore(session, name, session._store_key_serdes.get(name), enable_stale_stores)


def open_store(session: Session, name: str, enable_stale_stores: bool = False) -> KeyValueStore:
    """The key-value store ``name`` of session (App.store, table.query())."""
    return KeyValueStore(session, name, session._store_key_serdes.get(name), enable_stale_stores)


def open_window_store(session: Session, name: str, enable_stale_stores: bool = False) -> WindowStore:
    """The window or session store ``name`` of session (App.window_store,
    table.window_store())."""
    return WindowStore(session, name, session._store_key_serdes.get(name), enable_stale_stores)


def _host(h: pb.HostInfo) -> HostInfo:
    return HostInfo(h.host, h.port)


def query_metadata_for_key(session: Session, store: str, key: Any) -> KeyQueryMetadata:
    """KafkaStreams.queryMetadataForKey: key is encoded with the store's key
    serde (a window or session store's inner key serde)."""
    kv = KeyValueStore(session, store, session._store_key_serdes.get(store))
    inner = _inner_serde(kv.key_serde)
    try:
        b = serde.encode(inner, key)
    except (TypeError, ValueError) as e:
        raise TypeError(f"store {store!r}: query_metadata_for_key: cannot encode key {key!r} with key serde {inner!r}: {e}") from None
    assert b is not None
    resp = session._client.query_metadata_for_key(pb.QueryMetadataForKeyRequest(session_id=session._session, store=store, key=b))
    return KeyQueryMetadata(
        active_host=_host(resp.active_host) if resp.HasField("active_host") else None,
        standby_hosts=[_host(h) for h in resp.standby_hosts],
        partition=resp.partition,
    )


def streams_metadata(session: Session, store: str = "") -> list[StreamsMetadata]:
    """metadataForAllStreamsClients (store empty) or streamsMetadataForStore."""
    resp = session._client.streams_metadata(pb.StreamsMetadataRequest(session_id=session._session, store=store))
    return [
        StreamsMetadata(
            host_info=_host(m.host_info),
            state_store_names=list(m.state_store_names),
            topic_partitions=[(tp.topic, tp.partition) for tp in m.topic_partitions],
            standby_state_store_names=list(m.standby_state_store_names),
            standby_topic_partitions=[(tp.topic, tp.partition) for tp in m.standby_topic_partitions],
        )
        for m in resp.metadata
    ]
