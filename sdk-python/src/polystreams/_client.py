"""A Connect-protocol unary client for EngineService over the standard library.

A small pool of keep-alive HTTP/1.1 connections (one per concurrent
caller); every call is a POST of a binary protobuf
body to ``/polystreams.v1alpha1.EngineService/<Method>``. Errors come back as
non-200 responses with a JSON body ``{"code": ..., "message": ...}`` and are
raised as the matching :class:`~polystreams.errors.PolystreamsError`.
"""

from __future__ import annotations

import http.client
import json
import os
import ssl
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

    One Client may be shared by threads, and calls from different threads
    run concurrently: each call takes an idle keep-alive connection from a
    small pool (or opens one) and puts it back when done, so an interactive
    query does not wait behind a long-polling Exchange of the host loop.
    Calls made one after another reuse one connection. ``timeout`` bounds
    each call's socket operations, in seconds.

    ``token`` (default ``$POLYSTREAMS_TOKEN``) is sent as
    ``Authorization: Bearer <token>`` on every call, for an engine started
    with one. An ``https://`` URL verifies the engine's certificate against
    ``ca_file`` (PEM; default ``$POLYSTREAMS_CA_FILE``, else the system's
    CAs).
    """

    def __init__(
        self, url: str, *, timeout: float = 120.0, token: str | None = None, ca_file: str | None = None
    ) -> None:
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"engine URL {url!r}: want http://host:port or https://host:port")
        self.url = url.rstrip("/")
        self._https = u.scheme == "https"
        token = token if token is not None else os.environ.get("POLYSTREAMS_TOKEN")
        self._auth = f"Bearer {token}" if token else None
        ca_file = ca_file if ca_file is not None else os.environ.get("POLYSTREAMS_CA_FILE")
        self._tls: ssl.SSLContext | None = None
        if self._https:
            try:
                self._tls = ssl.create_default_context(cafile=ca_file or None)
            except (OSError, ssl.SSLError) as e:
                raise ValueError(f"CA file {ca_file!r}: {e}") from None
        self._host = u.hostname
        self._port = u.port
        self._prefix = u.path.rstrip("/") + _SERVICE
        self._timeout = timeout
        self._lock = threading.Lock()  # guards _idle and _generation
        # Idle connections, each of which has completed a call (so the server
        # may have closed it since); the last one put back is reused first.
        self._idle: list[http.client.HTTPConnection] = []
        self._generation = 0  # bumped by close(): connections of older generations are not pooled again

    def __repr__(self) -> str:
        return f"Client({self.url!r})"

    def close(self) -> None:
        """Closes the idle connections; calls in progress close theirs when done."""
        with self._lock:
            idle, self._idle = self._idle, []
            self._generation += 1
        for conn in idle:
            conn.close()

    def _take(self, fresh: bool) -> tuple[http.client.HTTPConnection, bool, int]:
        """A connection, whether it was used before, and the pool generation."""
        with self._lock:
            gen = self._generation
            if not fresh and self._idle:
                return self._idle.pop(), True, gen
        if self._tls is not None:
            return http.client.HTTPSConnection(self._host, self._port, timeout=self._timeout, context=self._tls), False, gen
        return http.client.HTTPConnection(self._host, self._port, timeout=self._timeout), False, gen

    def _put_back(self, conn: http.client.HTTPConnection, gen: int) -> None:
        with self._lock:
            if gen == self._generation:
                self._idle.append(conn)
                return
        conn.close()

    def call(self, method: str, request: Message, response_type: type[M]) -> M:
        """Calls EngineService/<method>; raises PolystreamsError on failure."""
        body = request.SerializeToString()
        headers = {
            "Content-Type": "application/proto",
            "Connect-Protocol-Version": "1",
            "User-Agent": _USER_AGENT,
        }
        if self._auth is not None:
            headers["Authorization"] = self._auth
        for attempt in (0, 1):
            conn, reused, gen = self._take(fresh=attempt > 0)
            try:
                conn.request("POST", self._prefix + method, body, headers)
                resp = conn.getresponse()
                data = resp.read()
            except _CLOSED as e:
                conn.close()
                if reused and attempt == 0:
                    continue  # the engine closed the idle connection: once more on a new one
                raise UnavailableError("unavailable", f"{method}: engine at {self.url} closed the connection: {e}") from None
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                raise UnavailableError("unavailable", f"{method}: engine at {self.url} is unreachable: {e}") from None
            except BaseException:
                conn.close()  # e.g. KeyboardInterrupt mid-call: the connection's state is unknown
                raise
            if resp.will_close:
                conn.close()
            else:
                self._put_back(conn, gen)
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

    def pause_processing(self, req: pb.PauseProcessingRequest) -> pb.PauseProcessingResponse:
        return self.call("PauseProcessing", req, pb.PauseProcessingResponse)

    def resume_processing(self, req: pb.ResumeProcessingRequest) -> pb.ResumeProcessingResponse:
        return self.call("ResumeProcessing", req, pb.ResumeProcessingResponse)

    def clean_up_state(self, req: pb.CleanUpStateRequest) -> pb.CleanUpStateResponse:
        return self.call("CleanUpState", req, pb.CleanUpStateResponse)

    def query(self, req: pb.QueryRequest) -> pb.QueryResponse:
        return self.call("Query", req, pb.QueryResponse)

    def query_metadata_for_key(self, req: pb.QueryMetadataForKeyRequest) -> pb.QueryMetadataForKeyResponse:
        return self.call("QueryMetadataForKey", req, pb.QueryMetadataForKeyResponse)

    def streams_metadata(self, req: pb.StreamsMetadataRequest) -> pb.StreamsMetadataResponse:
        return self.call("StreamsMetadata", req, pb.StreamsMetadataResponse)

    def get_metrics(self, req: pb.GetMetricsRequest) -> pb.GetMetricsResponse:
        return self.call("GetMetrics", req, pb.GetMetricsResponse)

    def pipe_input(self, req: pb.PipeInputRequest) -> pb.PipeInputResponse:
        return self.call("PipeInput", req, pb.PipeInputResponse)

    def read_output(self, req: pb.ReadOutputRequest) -> pb.ReadOutputResponse:
        return self.call("ReadOutput", req, pb.ReadOutputResponse)

    def read(self, req: pb.ReadRequest) -> pb.ReadResponse:
        return self.call("Read", req, pb.ReadResponse)

    def advance_wall_clock(self, req: pb.AdvanceWallClockRequest) -> pb.AdvanceWallClockResponse:
        return self.call("AdvanceWallClock", req, pb.AdvanceWallClockResponse)


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
