"""Test helpers: columnar bundles, and a fake Connect engine over stdlib http.server."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Callable, Sequence
from typing import Any

from polystreams import serde
from polystreams.v1alpha1 import engine_pb2 as pb


def column(serde_name: str, items: Sequence[Any]) -> tuple[bytes, list[int]]:
    data, lengths, failures = serde.encode_column(serde_name, list(items))
    assert not failures, failures
    return data, lengths


def make_bundle(
    steps: Sequence[tuple[Any, int]],
    values: Sequence[Any],
    keys: Sequence[Any] | None = None,
    *,
    key_serde: str = "string",
    value_serde: str = "string",
    output_key_serde: str = "",
    output_value_serde: str = "",
    bundle_id: int = 1,
) -> pb.Bundle:
    """A bundle of records (keys default to None) through steps [(operation, token)]."""
    if keys is None:
        keys = [None] * len(values)
    kdata, klens = column(key_serde, keys)
    vdata, vlens = column(value_serde, values)
    return pb.Bundle(
        id=bundle_id,
        steps=[pb.Step(token=t, operation=op, node=f"NODE-{i}") for i, (op, t) in enumerate(steps)],
        key_serde=key_serde,
        value_serde=value_serde,
        output_key_serde=output_key_serde or key_serde,
        output_value_serde=output_value_serde or value_serde,
        key_lengths=klens,
        keys=kdata,
        value_lengths=vlens,
        values=vdata,
        topic="in",
        partition=0,
        offsets=list(range(len(values))),
        timestamps=[0] * len(values),
    )


def split_column(data: bytes, lengths: Sequence[int], serde_name: str) -> list[Any]:
    items, failures = serde.decode_column(serde_name, data, list(lengths))
    assert not failures, failures
    return items


class FakeEngine:
    """A fake EngineService: handlers[method](request bytes) returns a
    protobuf message (200) or a (status, body bytes) pair. Records every
    call as (method, body, headers)."""

    def __init__(self) -> None:
        self.handlers: dict[str, Callable[[bytes], Any]] = {}
        self.calls: list[tuple[str, bytes, dict[str, str]]] = []
        self.connections = 0
        self.close_after_response = False  # drop the keep-alive connection silently after each response
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def setup(self) -> None:
                super().setup()
                fake.connections += 1

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                method = self.path.rsplit("/", 1)[-1]
                fake.calls.append((method, body, dict(self.headers)))
                h = fake.handlers.get(method)
                if h is None:
                    status, out, ctype = 404, b'{"code":"unimplemented","message":"no such method"}', "application/json"
                else:
                    r = h(body)
                    if isinstance(r, tuple):
                        status, out = r
                        ctype = "application/json"
                    else:
                        status, out, ctype = 200, r.SerializeToString(), "application/proto"
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)
                self.wfile.flush()
                if fake.close_after_response:
                    self.close_connection = True

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()

    def methods(self) -> list[str]:
        return [m for m, _, _ in self.calls]

    def requests(self, method: str, cls: Any) -> list[Any]:
        return [cls.FromString(b) for m, b, _ in self.calls if m == method]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def connect_error(code: str, message: str, status: int = 400) -> tuple[int, bytes]:
    return status, json.dumps({"code": code, "message": message}).encode()
