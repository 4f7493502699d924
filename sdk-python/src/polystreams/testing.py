"""Unit-testing topologies: :class:`TopologyTestDriver`, as Kafka Streams'.

A test builds a topology with the normal API on the driver, pipes input
records one at a time, and reads what the topology wrote::

    from polystreams.testing import TopologyTestDriver

    def test_word_count() -> None:
        with TopologyTestDriver("wordcount") as driver:
            (driver.stream("lines", value="string")
                .flat_map_values(str.split)
                .group_by(lambda key, word: word, key="string")
                .count()
                .to_stream()
                .to("word-counts"))
            driver.pipe_input("lines", None, "a b a")
            assert driver.read_key_values_to_map("word-counts") == {"a": 2, "b": 1}

The driver runs the topology on an engine session in test driver mode
(``polystreams.test.driver=true``, docs/design/test-driver.md): the session
has its own in-process broker (topics of one partition) and state, and
:meth:`~TopologyTestDriver.pipe_input` returns once the record is processed
completely, through repartition topics, and committed (the record cache
flushed), as TopologyTestDriver does. So a test sees exactly what the
topology does in production with one partition, with the same code.
"""

from __future__ import annotations

import datetime
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from polystreams import serde
from polystreams.app import App, BuiltinTimestampExtractor, TimestampExtractor
from polystreams.config import Config, OffsetReset
from polystreams.dsl import GlobalKTable, KStream, KTable, Materialized
from polystreams.errors import FailedPreconditionError, ProcessingError
from polystreams.serde import SerdeName, TopicSerde
from polystreams.store import KeyValueStore, VersionedKeyValueStore, WindowStore
from polystreams.v1alpha1 import engine_pb2 as pb
from polystreams.windows import to_ms

__all__ = ["TestRecord", "TopologyTestDriver"]

Headers = Mapping[str, "bytes | str | None"] | Iterable[tuple[str, "bytes | str | None"]]
"""Record headers: a mapping, or (key, value) pairs when a key repeats."""


@dataclass(frozen=True)
class TestRecord:
    """A record the topology wrote (Kafka Streams' ``TestRecord``): key and
    value decoded with the sink's serdes, the timestamp in epoch ms, and
    the headers as (key, value) pairs in order."""

    __test__ = False  # not a pytest test class

    key: Any
    value: Any
    timestamp: int
    headers: tuple[tuple[str, bytes | None], ...] = field(default=())


class TopologyTestDriver(App):
    """Kafka Streams' TopologyTestDriver: an :class:`App` whose topology is
    fed by the test, one record at a time.

    Build the topology on the driver with the usual methods (``stream``,
    ``table``, ``global_table`` and the operators of what they return); the first call of
    :meth:`pipe_input`, :meth:`read_output`, :meth:`get_store` or
    :meth:`advance_wall_clock` starts it. ``config`` is the application's
    configuration as for App (e.g. ``Config(statestore_cache_max_bytes=0)``
    turns the record cache off; by default it is on, 10 MiB, as in Kafka
    Streams, and flushed after each piped record). ``engine`` names a running
    engine (else one is spawned, as App does, and stopped by :meth:`close`).
    ``with TopologyTestDriver(...) as driver:`` closes it: the session, its
    broker and state, and the engine it spawned are gone after the block.

    Not safe for concurrent use: a test drives it from one thread (the
    topology's functions run in a thread of the driver).
    """

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        application_id: str = "test-driver",
        config: Config | Mapping[str, str] | None = None,
        *,
        engine: str | None = None,
        timeout: float = 60.0,
    ) -> None:
        props = config.properties() if isinstance(config, Config) else {str(k): str(v) for k, v in (config or {}).items()}
        props["polystreams.test.driver"] = "true"
        super().__init__(application_id, props, engine=engine, timeout=timeout)
        self._serdes: dict[str, tuple[str, str]] = {}  # source topic -> (key, value) serdes
        # pattern sources and their serdes, for topics no source names
        self._patterns: list[tuple[re.Pattern[str], tuple[str, str]]] = []
        self._host: threading.Thread | None = None
        self._host_error: BaseException | None = None

    def __enter__(self) -> TopologyTestDriver:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # The builder: sources remember their serdes, to encode piped records.

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
        s = super().stream(
            topics, key=key, value=value, name=name, offset_reset=offset_reset, timestamp_extractor=timestamp_extractor
        )
        if isinstance(topics, re.Pattern):
            self._patterns.append((topics, (s.handle.key_serde or "bytes", s.handle.value_serde or "bytes")))
            return s
        for t in [topics] if isinstance(topics, str) else topics:
            self._serdes[t] = (s.handle.key_serde or "bytes", s.handle.value_serde or "bytes")
        return s

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
        t = super().table(
            topic,
            key=key,
            value=value,
            materialized=materialized,
            name=name,
            offset_reset=offset_reset,
            timestamp_extractor=timestamp_extractor,
        )
        self._serdes[topic] = (t.handle.key_serde or "bytes", t.handle.value_serde or "bytes")
        return t

    def global_table(
        self,
        topic: str,
        *,
        key: SerdeName | TopicSerde | None = None,
        value: SerdeName | TopicSerde | None = None,
        materialized: str | Materialized | None = None,
        name: str | None = None,
    ) -> GlobalKTable:
        """As :meth:`App.global_table`; a record piped into ``topic`` is in
        the global store when :meth:`pipe_input` returns, so the next
        stream record joins with it (TopologyTestDriver updates a global
        store at once)."""
        g = super().global_table(topic, key=key, value=value, materialized=materialized, name=name)
        self._serdes[topic] = (g.handle.key_serde or "bytes", g.handle.value_serde or "bytes")
        return g

    def _add_source(self, topics: list[str], key_serde: str, value_serde: str, pattern: re.Pattern[str] | None = None) -> None:
        super()._add_source(topics, key_serde, value_serde, pattern)
        if pattern is not None:
            self._patterns.append((pattern, (key_serde or "bytes", value_serde or "bytes")))
        for t in topics:
            self._serdes[t] = (key_serde or "bytes", value_serde or "bytes")

    # Driving.

    def _ensure_started(self) -> None:
        if self._host is not None:
            return
        if self._closed:
            raise FailedPreconditionError("failed_precondition", f"test driver {self.application_id!r} is closed")
        self.start()
        with self._lock:
            self._running = True
            self._idle.clear()
        self._host = threading.Thread(target=self._serve_host, name=f"polystreams-test-driver-{self.application_id}", daemon=True)
        self._host.start()
        # Returns once the tasks are assigned (the session waits for them).
        self._client.advance_wall_clock(pb.AdvanceWallClockRequest(session_id=self._session, millis=0))

    def _serve_host(self) -> None:
        try:
            self._serve()
        except ProcessingError:
            pass  # pipe_input raises it, with the record named
        except BaseException as e:  # reported by the next call
            self._host_error = e
        finally:
            with self._lock:
                self._running = False
                self._idle.set()

    def pipe_input(
        self,
        topic: str,
        key: Any = None,
        value: Any = None,
        *,
        timestamp: int | datetime.datetime | None = None,
        headers: Headers | None = None,
    ) -> None:
        """Writes one record to ``topic`` and returns once the topology has
        processed it completely (TestInputTopic.pipeInput): through every
        repartition topic, with the record cache flushed. ``timestamp`` is
        epoch ms or an aware datetime (default: the wall clock, see
        :meth:`advance_wall_clock`). Key and value are encoded with the
        serdes the topic's ``stream``/``table`` named.

        Raises InvalidArgumentError naming the topic when the topology does
        not read it, and ProcessingError naming the record and node when a
        function raised for it (the topology is then stopped, as a Kafka
        Streams application is)."""
        self.pipe_records([(topic, key, value, timestamp, headers)])

    def pipe_key_values(self, topic: str, records: Iterable[tuple[Any, Any]], *, timestamp: int | None = None) -> None:
        """Pipes (key, value) pairs one after another (TestInputTopic.pipeKeyValueList)."""
        self.pipe_records([(topic, k, v, timestamp, None) for k, v in records])

    def pipe_records(
        self, records: Iterable[tuple[str, Any, Any, int | datetime.datetime | None, Headers | None]]
    ) -> None:
        """Pipes (topic, key, value, timestamp, headers) records in one call,
        each processed completely before the next."""
        self._ensure_started()
        req = pb.PipeInputRequest(session_id=self._session)
        for topic, key, value, ts, headers in records:
            req.records.append(self._record(topic, key, value, ts, headers))
        resp = self._client.pipe_input(req)
        if resp.error:
            if resp.HasField("failed_record"):
                r = resp.failed_record
                raise ProcessingError(resp.error, topic=r.topic, partition=r.partition, offset=r.offset, node=r.node)
            raise ProcessingError(resp.error)
        self._raise_host_error()

    def _record(self, topic: str, key: Any, value: Any, ts: int | datetime.datetime | None, headers: Headers | None) -> pb.TestRecord:
        serdes = self._serdes.get(topic) or next((s for p, s in self._patterns if p.fullmatch(topic)), None)
        if serdes is None:
            # The engine names the topics the topology reads.
            return pb.TestRecord(topic=topic)
        ks, vs = serdes
        r = pb.TestRecord(topic=topic)
        k, v = serde.encode(ks, key), serde.encode(vs, value)
        if k is not None:
            r.key = k
        if v is not None:
            r.value = v
        if ts is not None:
            r.timestamp_ms = to_ms(ts, "timestamp")
        if headers is not None:
            pairs = headers.items() if isinstance(headers, Mapping) else headers
            for hk, hv in pairs:
                h = pb.TestHeader(key=hk)
                if hv is not None:
                    h.value = hv.encode() if isinstance(hv, str) else bytes(hv)
                r.headers.append(h)
        return r

    def read_output(self, topic: str) -> list[TestRecord]:
        """The records the topology wrote to ``topic`` since the last read of
        it, oldest first (TestOutputTopic.readRecordsToList), decoded with
        the sink's serdes. Raises InvalidArgumentError naming the topic when
        the topology does not write it."""
        self._ensure_started()
        resp = self._client.read_output(pb.ReadOutputRequest(session_id=self._session, topic=topic))
        ks, vs = resp.key_serde or "bytes", resp.value_serde or "bytes"
        return [
            TestRecord(
                serde.decode(ks, r.key if r.HasField("key") else None),
                serde.decode(vs, r.value if r.HasField("value") else None),
                r.timestamp_ms,
                tuple((h.key, h.value if h.HasField("value") else None) for h in r.headers),
            )
            for r in resp.records
        ]

    def read_key_values_to_map(self, topic: str) -> dict[Any, Any]:
        """The latest value per key the topology wrote to ``topic`` since the
        last read (TestOutputTopic.readKeyValuesToMap): a later record of a
        key replaces an earlier one; a tombstone leaves the key mapped to
        None. Raises ValueError for a record with a null key, as Kafka
        Streams does."""
        out: dict[Any, Any] = {}
        for r in self.read_output(topic):
            if r.key is None:
                raise ValueError(f"read_key_values_to_map({topic!r}): a record has a null key (value {r.value!r}); use read_output")
            out[r.key] = r.value
        return out

    def get_store(self, name: str) -> KeyValueStore:
        """The key-value store ``name`` (TopologyTestDriver.getKeyValueStore),
        to query. Raises NotFoundError naming the store (and those that
        exist) when there is none of that name, and InvalidArgumentError for
        a window or session store (see :meth:`get_window_store`)."""
        self._ensure_started()
        self._client.query(pb.QueryRequest(session_id=self._session, store=name, all=True, limit=1))
        return self.store(name)

    def get_window_store(self, name: str) -> WindowStore:
        """The window store ``name`` of a windowed aggregation
        (TopologyTestDriver.getWindowStore). Raises NotFoundError naming the
        store when there is none of that name."""
        self._ensure_started()
        self._client.query(pb.QueryRequest(session_id=self._session, store=name, window_fetch=pb.WindowFetch(from_ms=0, to_ms=0), limit=1))
        return self.window_store(name)

    def get_versioned_store(self, name: str) -> VersionedKeyValueStore:
        """The versioned store ``name`` (a table materialized with
        ``Materialized(name, versioned=...)``). Raises NotFoundError naming
        the store when there is none of that name, and InvalidArgumentError
        when it is not versioned."""
        self._ensure_started()
        self._client.query(pb.QueryRequest(session_id=self._session, store=name, versioned_get=pb.VersionedGet(key=b"")))
        return self.versioned_store(name)

    def advance_wall_clock(self, millis: int | datetime.timedelta) -> int:
        """Moves the driver's wall clock forward (TopologyTestDriver.advanceWallClockTime)
        and commits; returns the new wall clock in epoch ms. Records piped
        without a timestamp take the wall clock's."""
        self._ensure_started()
        ms = to_ms(millis, "advance_wall_clock")
        resp = self._client.advance_wall_clock(pb.AdvanceWallClockRequest(session_id=self._session, millis=ms))
        self._raise_host_error()
        return resp.wall_clock_ms

    def _raise_host_error(self) -> None:
        if self._host_error is not None:
            e, self._host_error = self._host_error, None
            raise e

    def close(self, timeout: float = 60.0) -> None:
        """Stops the session (its broker and state go with it) and the
        engine the driver spawned. Safe to call more than once."""
        if self._closed:
            return
        self._send_stop()  # the host thread's Exchange answers STOPPED at once
        host = self._host
        if host is not None:
            host.join(timeout)
        super().close(timeout)
