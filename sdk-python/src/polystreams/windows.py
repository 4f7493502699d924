"""Windows: the window specs of ``windowed_by``, ``Suppressed`` (and its
``BufferConfig``), and the
``Windowed`` keys of a windowed aggregation (Kafka Streams' ``TimeWindows``,
``SlidingWindows``, ``SessionWindows``, ``Suppressed`` and ``Windowed``).

Durations are a :class:`datetime.timedelta` or an ``int`` of milliseconds.
The specs check types only; the engine checks values and names the field and
value it refuses (``size_ms 0``, ``advance_ms 90000 > size_ms 60000``,
``grace_ms -1``), raised by ``windowed_by`` as an InvalidArgumentError.
"""

from __future__ import annotations

import datetime
import operator
from dataclasses import dataclass, replace
from typing import Any, Generic, Literal, TypeVar

from polystreams.v1alpha1 import engine_pb2 as pb

__all__ = ["BufferConfig", "Duration", "EmitStrategy", "JoinWindows", "SessionWindows", "SlidingWindows", "Suppressed", "TimeWindows", "Windowed", "to_ms"]

Duration = datetime.timedelta | int
"""A duration: a timedelta, or milliseconds."""

K = TypeVar("K")

_MS = datetime.timedelta(milliseconds=1)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def to_ms(d: Duration | datetime.datetime, what: str) -> int:
    """Milliseconds of a duration (a timedelta or an int), or of an aware
    datetime since the epoch (a window store's time bounds)."""
    if isinstance(d, datetime.timedelta):
        return d // _MS
    if isinstance(d, datetime.datetime):
        if d.tzinfo is None:
            raise TypeError(f"{what}: a datetime must be timezone-aware, got {d!r}")
        return (d - _EPOCH) // _MS
    if isinstance(d, bool):
        raise TypeError(f"{what}: want a timedelta or int milliseconds, got bool")
    try:
        return operator.index(d)
    except TypeError:
        raise TypeError(f"{what}: want a timedelta or int milliseconds, got {type(d).__name__}") from None


@dataclass(frozen=True)
class Windowed(Generic[K]):
    """A key of a windowed aggregation: the grouped key and its window,
    ``start`` (inclusive) and ``end`` in epoch milliseconds (Kafka Streams'
    ``Windowed<K>``). Time windows end at ``start + size`` (exclusive);
    sliding windows' bounds are both inclusive; a session spans its first
    record's time to its last's (both inclusive).

    On a topic, a time-windowed key is the inner key's bytes and the start as
    8 big-endian bytes (serde ``windowed(<inner>,<size ms>)``, Kafka's
    ``TimeWindowedSerializer``); a session-windowed key is the inner key's
    bytes, the end, then the start (``session-windowed(<inner>)``,
    ``SessionWindowedSerializer``)."""

    key: K
    start: int
    end: int


@dataclass(frozen=True)
class TimeWindows:
    """Fixed-size windows aligned to the epoch: tumbling, or hopping with
    :meth:`advance_by`. A record at ``ts`` belongs to every window with
    ``start <= ts < start + size``."""

    size_ms: int
    advance_ms: int
    grace_ms: int

    @classmethod
    def of_size_with_no_grace(cls, size: Duration) -> TimeWindows:
        """Tumbling windows of ``size`` that accept no record after their end."""
        s = to_ms(size, "TimeWindows.of_size_with_no_grace: size")
        return cls(s, s, 0)

    @classmethod
    def of_size_and_grace(cls, size: Duration, grace: Duration) -> TimeWindows:
        """Tumbling windows of ``size`` that accept records up to ``grace``
        after their end (in stream time)."""
        s = to_ms(size, "TimeWindows.of_size_and_grace: size")
        return cls(s, s, to_ms(grace, "TimeWindows.of_size_and_grace: grace"))

    def advance_by(self, advance: Duration) -> TimeWindows:
        """Hopping windows: a new window starts every ``advance`` (at most the size)."""
        return replace(self, advance_ms=to_ms(advance, "TimeWindows.advance_by: advance"))

    def _op(self, op: pb.WindowedByOp) -> None:
        op.time.CopyFrom(pb.TimeWindows(size_ms=self.size_ms, advance_ms=self.advance_ms, grace_ms=self.grace_ms))


@dataclass(frozen=True)
class SlidingWindows:
    """Windows of a fixed time difference that slide with the records
    (``KStreamSlidingWindowAggregate``): two records are in a window together
    when at most ``time_difference`` apart; both bounds are inclusive."""

    time_difference_ms: int
    grace_ms: int

    @classmethod
    def of_time_difference_with_no_grace(cls, time_difference: Duration) -> SlidingWindows:
        return cls(to_ms(time_difference, "SlidingWindows.of_time_difference_with_no_grace: time_difference"), 0)

    @classmethod
    def of_time_difference_and_grace(cls, time_difference: Duration, grace: Duration) -> SlidingWindows:
        what = "SlidingWindows.of_time_difference_and_grace"
        return cls(to_ms(time_difference, f"{what}: time_difference"), to_ms(grace, f"{what}: grace"))

    def _op(self, op: pb.WindowedByOp) -> None:
        op.sliding.CopyFrom(pb.SlidingWindows(time_difference_ms=self.time_difference_ms, grace_ms=self.grace_ms))


@dataclass(frozen=True)
class SessionWindows:
    """Sessions: a key's records at most ``inactivity_gap`` apart share one;
    a record between two sessions merges them (an aggregate's merger runs)."""

    inactivity_gap_ms: int
    grace_ms: int

    @classmethod
    def of_inactivity_gap_with_no_grace(cls, inactivity_gap: Duration) -> SessionWindows:
        return cls(to_ms(inactivity_gap, "SessionWindows.of_inactivity_gap_with_no_grace: inactivity_gap"), 0)

    @classmethod
    def of_inactivity_gap_and_grace(cls, inactivity_gap: Duration, grace: Duration) -> SessionWindows:
        what = "SessionWindows.of_inactivity_gap_and_grace"
        return cls(to_ms(inactivity_gap, f"{what}: inactivity_gap"), to_ms(grace, f"{what}: grace"))

    def _op(self, op: pb.WindowedByOp) -> None:
        op.session.CopyFrom(pb.SessionWindows(inactivity_gap_ms=self.inactivity_gap_ms, grace_ms=self.grace_ms))


Windows = TimeWindows | SlidingWindows | SessionWindows


@dataclass(frozen=True)
class JoinWindows:
    """A stream-stream join's windows (Kafka Streams' ``JoinWindows``): a
    record at ``ts`` joins the other stream's records of its key at
    ``[ts - before, ts + after]`` (the other stream's records see the
    mirrored window). Records later than stream time minus
    ``before + after + grace`` are dropped; a left/outer join emits a record
    that joined nothing once its window closed."""

    before_ms: int
    after_ms: int
    grace_ms: int

    @classmethod
    def of_time_difference_with_no_grace(cls, time_difference: Duration) -> JoinWindows:
        """Records at most ``time_difference`` apart join; no late record does."""
        d = to_ms(time_difference, "JoinWindows.of_time_difference_with_no_grace: time_difference")
        return cls(d, d, 0)

    @classmethod
    def of_time_difference_and_grace(cls, time_difference: Duration, grace: Duration) -> JoinWindows:
        """Records at most ``time_difference`` apart join; records up to
        ``grace`` late (in stream time) still do."""
        what = "JoinWindows.of_time_difference_and_grace"
        d = to_ms(time_difference, f"{what}: time_difference")
        return cls(d, d, to_ms(grace, f"{what}: grace"))

    def before(self, time_difference: Duration) -> JoinWindows:
        """How much earlier the other stream's records may be (``JoinWindows.before``)."""
        return replace(self, before_ms=to_ms(time_difference, "JoinWindows.before: time_difference"))

    def after(self, time_difference: Duration) -> JoinWindows:
        """How much later the other stream's records may be (``JoinWindows.after``)."""
        return replace(self, after_ms=to_ms(time_difference, "JoinWindows.after: time_difference"))

    def _pb(self) -> pb.JoinWindows:
        return pb.JoinWindows(before_ms=self.before_ms, after_ms=self.after_ms, grace_ms=self.grace_ms)


@dataclass(frozen=True)
class EmitStrategy:
    """When a windowed aggregation forwards its results (Kafka Streams'
    ``EmitStrategy``, KIP-825), set with ``emit_strategy`` on a windowed
    stream. :meth:`on_window_update` (the default) forwards every update of
    a window; :meth:`on_window_close` only each window's final result, once,
    when stream time passes the window's end plus grace (session windows:
    end + inactivity gap + grace). The engine keeps the last close time it
    emitted with the store, so a restart neither emits a window again nor
    loses one."""

    type: Literal["on_window_update", "on_window_close"] = "on_window_update"

    @classmethod
    def on_window_update(cls) -> EmitStrategy:
        """``EmitStrategy.onWindowUpdate()``: every update (the default)."""
        return cls("on_window_update")

    @classmethod
    def on_window_close(cls) -> EmitStrategy:
        """``EmitStrategy.onWindowClose()``: only final results."""
        return cls("on_window_close")

    def _pb(self) -> pb.EmitStrategy:
        if self.type == "on_window_close":
            return pb.EMIT_STRATEGY_ON_WINDOW_CLOSE
        if self.type == "on_window_update":
            return pb.EMIT_STRATEGY_ON_WINDOW_UPDATE
        raise ValueError(f"EmitStrategy: type must be 'on_window_update' or 'on_window_close', not {self.type!r}")


@dataclass(frozen=True)
class BufferConfig:
    """The bounds of a suppression's buffer (Kafka Streams'
    ``Suppressed.BufferConfig``): at most ``max_records`` keys and
    ``max_bytes`` bytes (None: no bound; bytes are counted as Kafka Streams
    counts them: key, values, the record's topic and headers). When an
    update would pass a bound, ``when_full="emit_early"`` (the default, as
    ``maxRecords``/``maxBytes``) forwards the oldest held updates until the
    rest fit; ``"shut_down"`` fails the record under the processing error
    policy, naming the node and its store. ``BufferConfig()`` is unbounded."""

    max_records: int | None = None
    max_bytes: int | None = None
    when_full: Literal["emit_early", "shut_down"] = "emit_early"

    def __post_init__(self) -> None:
        for field in ("max_records", "max_bytes"):
            v = getattr(self, field)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                raise TypeError(f"BufferConfig: {field} must be an int or None, not {type(v).__name__}")
        if self.when_full not in ("emit_early", "shut_down"):
            raise ValueError(f"BufferConfig: when_full must be 'emit_early' or 'shut_down', not {self.when_full!r}")

    @classmethod
    def unbounded(cls) -> BufferConfig:
        """``BufferConfig.unbounded()``: no bound (memory is the limit)."""
        return cls(when_full="shut_down")

    def _pb(self) -> pb.SuppressBuffer:
        full = pb.BUFFER_FULL_SHUT_DOWN if self.when_full == "shut_down" else pb.BUFFER_FULL_EMIT_EARLY
        return pb.SuppressBuffer(max_records=self.max_records, max_bytes=self.max_bytes, when_full=full)


@dataclass(frozen=True)
class Suppressed:
    """How :meth:`KTable.suppress` holds back a table's updates (Kafka
    Streams' ``Suppressed``): :meth:`until_window_closes`, each window's
    final result of a windowed aggregation, once, when stream time passes
    its end plus grace; :meth:`until_time_limit`, each key's latest update
    once stream time reaches its first held update's time plus the limit."""

    name: str = ""
    time_limit_ms: int | None = None
    buffer: BufferConfig | None = None

    @classmethod
    def until_window_closes(cls, buffer: BufferConfig | None = None, *, name: str | None = None) -> Suppressed:
        """``buffer`` (None: unbounded) must be unbounded or shut down when
        full: a window emitted early would not be final. ``name`` names the
        suppress node (and its store, ``<name>-store``; ``Suppressed.withName``);
        None generates ``KTABLE-SUPPRESS-<n>``."""
        return cls(_check_name("until_window_closes", name), None, _check_buffer("until_window_closes", buffer))

    @classmethod
    def until_time_limit(cls, limit: Duration, buffer: BufferConfig | None = None, *, name: str | None = None) -> Suppressed:
        """``Suppressed.untilTimeLimit(limit, buffer)``: a key's updates are
        held until stream time (the largest timestamp the suppression has
        seen) reaches the time of its first held update plus ``limit``;
        then its latest, a tombstone too, is forwarded. ``buffer`` None:
        unbounded."""
        return cls(_check_name("until_time_limit", name), to_ms(limit, "Suppressed.until_time_limit"), _check_buffer("until_time_limit", buffer))

    def _pb(self, input: int) -> pb.SuppressOp:
        op = pb.SuppressOp(input=input, name=self.name)
        if self.time_limit_ms is not None:
            op.time_limit_ms = self.time_limit_ms
        if self.buffer is not None and (self.buffer.max_records is not None or self.buffer.max_bytes is not None):
            op.buffer.CopyFrom(self.buffer._pb())
        return op


def _check_name(method: str, name: str | None) -> str:
    if name is not None and not isinstance(name, str):
        raise TypeError(f"Suppressed.{method}: name must be a str, not {type(name).__name__}")
    return name or ""


def _check_buffer(method: str, buffer: BufferConfig | None) -> BufferConfig | None:
    if buffer is not None and not isinstance(buffer, BufferConfig):
        raise TypeError(f"Suppressed.{method}: buffer must be a BufferConfig, not {type(buffer).__name__}")
    return buffer


def _check_windows(w: Any) -> Windows:
    if not isinstance(w, (TimeWindows, SlidingWindows, SessionWindows)):
        raise TypeError(f"windowed_by: want TimeWindows, SlidingWindows or SessionWindows, not {type(w).__name__}")
    return w
