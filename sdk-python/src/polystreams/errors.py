"""The exceptions of polystreams: one base class, one subclass per error family.

Every error carries ``code`` (a Connect code such as ``"invalid_argument"``)
and ``message`` (the engine's text, which names the offending method, handle,
kind, token, node, or topic/partition/offset).
"""

from __future__ import annotations

import re

__all__ = [
    "PolystreamsError",
    "InvalidArgumentError",
    "NotFoundError",
    "FailedPreconditionError",
    "UnavailableError",
    "EngineStartError",
    "ProcessingError",
    "error_for_code",
]


class PolystreamsError(Exception):
    """Base class of every error polystreams raises.

    ``code`` is the Connect error code (``invalid_argument``, ``not_found``,
    ``failed_precondition``, ``unavailable``, ``internal``, ...); ``message``
    is the engine's (or the SDK's) description of what failed.
    """

    code: str
    message: str

    def __init__(self, code: str, message: str) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.message} [{self.code}]"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


class InvalidArgumentError(PolystreamsError):
    """The engine refused a call's arguments: a wrong kind of handle, a missing
    topic, an unknown serde, bad configuration. The session stays usable."""


class NotFoundError(PolystreamsError):
    """A call named something that does not exist: a session, handle or token."""


class FailedPreconditionError(PolystreamsError):
    """A call came at the wrong time, e.g. a builder call after start."""


class UnavailableError(PolystreamsError):
    """The engine could not be reached (or stopped answering)."""


class EngineStartError(UnavailableError):
    """The engine binary could not be found or did not start. The message
    carries the tail of the engine's standard error."""


_PROCESSING_CONTEXT = re.compile(
    r"record at (?P<topic>.+?)/(?P<partition>-?\d+)@(?P<offset>-?\d+) failed in node (?P<node>\S+?):"
)


class ProcessingError(PolystreamsError):
    """The running topology failed (state ``ERROR``), e.g. because a user
    function raised for a record. ``message`` is the engine's text; ``topic``,
    ``partition``, ``offset`` and ``node`` name the failed record when the
    failure was a record's (else None). The engine sends them as fields; for
    older engines they are parsed out of the message."""

    topic: str | None
    partition: int | None
    offset: int | None
    node: str | None

    def __init__(
        self,
        message: str,
        code: str = "aborted",
        *,
        topic: str | None = None,
        partition: int | None = None,
        offset: int | None = None,
        node: str | None = None,
    ) -> None:
        super().__init__(code, message)
        if node is None:
            m = _PROCESSING_CONTEXT.search(message)
            if m:
                topic, partition, offset, node = m["topic"], int(m["partition"]), int(m["offset"]), m["node"]
        self.topic, self.partition, self.offset, self.node = topic, partition, offset, node


_BY_CODE: dict[str, type[PolystreamsError]] = {
    "invalid_argument": InvalidArgumentError,
    "out_of_range": InvalidArgumentError,
    "not_found": NotFoundError,
    "failed_precondition": FailedPreconditionError,
    "unavailable": UnavailableError,
    "deadline_exceeded": UnavailableError,
}


def error_for_code(code: str, message: str) -> PolystreamsError:
    """The exception for a Connect error code (PolystreamsError itself for a
    code with no family of its own)."""
    return _BY_CODE.get(code, PolystreamsError)(code, message)
