"""What the builder (dsl) and the stores need of a session: the Session
protocol, which App implements, and the handles the engine answers
builder calls with. A module of its own so that app, dsl and store each
import it and none imports another the other way (no import circles:
tests/test_imports.py)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from polystreams.v1alpha1 import engine_pb2 as pb

if TYPE_CHECKING:
    from polystreams._client import Client

__all__ = ["Handle", "Kind", "Session"]

Kind = Literal[
    "stream",
    "grouped_stream",
    "table",
    "grouped_table",
    "windowed_stream",
    "session_windowed_stream",
    "global_table",
    "cogrouped_stream",
    "windowed_cogrouped_stream",
    "session_windowed_cogrouped_stream",
]
"""What a handle stands for (``windowed_stream``: a TimeWindowedKStream, of
time or sliding windows; ``cogrouped_stream``: a CogroupedKStream, and its
windowed forms)."""

_KINDS: dict[int, Kind] = {
    pb.KIND_STREAM: "stream",
    pb.KIND_GROUPED_STREAM: "grouped_stream",
    pb.KIND_TABLE: "table",
    pb.KIND_GROUPED_TABLE: "grouped_table",
    pb.KIND_WINDOWED_STREAM: "windowed_stream",
    pb.KIND_SESSION_WINDOWED_STREAM: "session_windowed_stream",
    pb.KIND_GLOBAL_TABLE: "global_table",
    pb.KIND_COGROUPED_STREAM: "cogrouped_stream",
    pb.KIND_WINDOWED_COGROUPED_STREAM: "windowed_cogrouped_stream",
    pb.KIND_SESSION_WINDOWED_COGROUPED_STREAM: "session_windowed_cogrouped_stream",
}


@dataclass(frozen=True)
class Handle:
    """The engine's answer to a builder call: an opaque id, the kind of
    thing it names, the serdes of its records and the processor node they
    come out of (e.g. ``KSTREAM-MAPVALUES-0000000001``); for a table kept
    in a store, the store's name (for interactive queries, else "")."""

    id: int
    kind: Kind
    key_serde: str
    value_serde: str
    node: str
    store: str = ""

    @classmethod
    def from_proto(cls, h: pb.Handle) -> Handle:
        kind = _KINDS.get(h.kind)
        if kind is None:
            raise ValueError(f"handle {h.id} has kind {h.kind}, which this SDK does not know")
        return cls(h.id, kind, h.key_serde, h.value_serde, h.node, h.store)


class Session(Protocol):
    """An open session of the engine, as the builder and the stores use
    it (App is one): functions registered under tokens, Build calls, and
    the client and session id for queries."""

    _session: str
    _client: Client
    _functions: dict[int, Callable[..., Any]]
    _store_key_serdes: dict[str, str]
    _store_specs: dict[str, Any]  # name -> processor.StoreBuilder

    def _register(self, op: str, fn: Callable[..., Any]) -> int: ...

    def _call_build(self, op: str, message: Any) -> pb.BuildResponse: ...

    def _build(self, op: str, message: Any) -> Handle: ...

    def _build_terminal(self, op: str, message: Any) -> None: ...

    def _add_source(self, topics: list[str], key_serde: str, value_serde: str, pattern: re.Pattern[str] | None = None) -> None: ...
