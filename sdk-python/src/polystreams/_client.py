"""A Connect-protocol unary client for EngineService over the standard library.

One keep-alive HTTP/1.1 connection; every call is a POST of a binary protobuf
body to ``/polystreams.v1alpha1.EngineService/<Method>``. Errors come back as
non-200 responses with a JSON body ``{"code": ..., "message": ...}`` and are
raised as the matching :class:`~polystreams.errors.PolystreamsError`.
"""

from __future__ import annotations

import http.client
import json
import threading
import urllib.parse
from typing import TypeVar, cast

from google.protobuf.message import DecodeError, Message

from polystreams.errors import PolystreamsError, UnavailableError, error_for_code
from polystreams.v1alpha1 import engine_pb2 as pb

__all__ = ["Client"]

_SERVICE = "/polystreams.v1alpha1.EngineService/"
_USER_AGENT = "polystreams-python/0.1.0"

# The Connect protocol's mapping of HTTP status to code, for error responses
# whose body is not Connect JSON (a proxy in between, a crashed engine).
_HTTP_CODES = {
    400: "internal",
    401: "unauthenticated",
    403: "permission_denied",
    404: "unimplemented",
    429: "unavailable",
    502: "unavailable",
    503: "unavailable",
    504: "unavailable",
}

# Errors that mean "the server closed the keep-alive connection we reused".
_CLOSED = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)

M = TypeVar("M", bound=Message)


class Client:
    """A unary Connect client for one engine.

    Calls are serialised by a lock, so one Client may be shared by threads
    (a call waits for the one in progress). ``timeout`` bounds each call's
    socket operations, in seconds.
    """

    def __init__(self, url: str, *, timeout: float = 120.0) -> None:
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"engine URL {url!r}: want http://host:port")
        self.url = url.rstrip("/")
        self._https = u.scheme == "https"
        self._host = u.hostname
        self._port = u.port
        self._prefix = u.path.rstrip("/") + _SERVICE
        self._timeout = timeout
        self._lock = threading.Lock()  # guards _conn and _used
        self._conn: http.client.HTTPConnection | None = None
        self._used = False  # _conn has completed a call, so it may have been closed by the server since

    def __repr__(self) -> str:
        return f"Client({self.url!r})"

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = None
        self._used = False

    def _connect(self) -> http.client.HTTPConnection:
        if self._conn is None:
            cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            self._conn = cls(self._host, self._port, timeout=self._timeout)
            self._used = False
        return self._conn

    def call(self, method: str, request: Message, response_type: type[M]) -> M:
        """Calls EngineService/<method>; raises PolystreamsError on failure."""
        body = request.SerializeToString()
        headers = {
            "Content-Type": "application/proto",
            "Connect-Protocol-Version": "1",
            "User-Agent": _USER_AGENT,
        }
        with self._lock:
            for attempt in (0, 1):
                conn = self._connect()
                reused = self._used
                try:
                    conn.request("POST", self._prefix + method, body, headers)
                    resp = conn.getresponse()
                    data = resp.read()
                except _CLOSED as e:
                    self._drop()
                    if reused and attempt == 0:
                        continue  # the engine closed the idle connection: once more on a new one
                    raise UnavailableError("unavailable", f"{method}: engine at {self.url} closed the connection: {e}") from None
                except (OSError, http.client.HTTPException) as e:
                    self._drop()
                    raise UnavailableError("unavailable", f"{method}: engine at {self.url} is unreachable: {e}") from None
                except BaseException:
                    self._drop()  # e.g. KeyboardInterrupt mid-call: the connection's state is unknown
                    raise
                self._used = True
                if resp.will_close:
                    self._drop()
                break
        if resp.status != 200:
            raise _error(method, resp.status, data)
        try:
            return cast(M, response_type.FromString(data))
        except DecodeError as e:
            raise PolystreamsError("internal", f"{method}: the engine's response does not parse: {e}") from None

    # Typed methods, one per RPC.

    def open_session(self, req: pb.OpenSessionRequest) -> pb.OpenSessionResponse:
        return self.call("OpenSession", req, pb.OpenSessionResponse)

    def register_function(self, req: pb.RegisterFunctionRequest) -> pb.RegisterFunctionResponse:
        return self.call("RegisterFunction", req, pb.RegisterFunctionResponse)

    def build(self, req: pb.BuildRequest) -> pb.BuildResponse:
        return self.call("Build", req, pb.BuildResponse)

    def describe(self, req: pb.DescribeRequest) -> pb.DescribeResponse:
        return self.call("Describe", req, pb.DescribeResponse)

    def start(self, req: pb.StartRequest) -> pb.StartResponse:
        return self.call("Start", req, pb.StartResponse)

    def exchange(self, req: pb.ExchangeRequest) -> pb.ExchangeResponse:
        return self.call("Exchange", req, pb.ExchangeResponse)

    def get_state(self, req: pb.GetStateRequest) -> pb.GetStateResponse:
        return self.call("GetState", req, pb.GetStateResponse)

    def stop(self, req: pb.StopRequest) -> pb.StopResponse:
        return self.call("Stop", req, pb.StopResponse)


def _error(method: str, status: int, data: bytes) -> PolystreamsError:
    code = message = ""
    try:
        obj = json.loads(data)
        if isinstance(obj, dict):
            code = str(obj.get("code") or "")
            message = str(obj.get("message") or "")
    except ValueError:
        pass
    if not code:
        code = _HTTP_CODES.get(status, "unknown")
        text = data[:200].decode("utf-8", "replace").strip()
        message = f"{method}: HTTP {status}" + (f": {text}" if text else "")
    elif not message:
        message = f"{method}: {code}"
    return error_for_code(code, message)
