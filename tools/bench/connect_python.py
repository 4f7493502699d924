"""The Python SDK's Connect client: the standard library's http.client
(polystreams._client.Client) against the Connect runtime from PyPI
(connect-python's ConnectClientSync over pyqwest), on the control plane
(OpenSession and Build call latency) and on the data plane (the host loop's
bundle exchange, records per second through a map_values over the embedded
broker). Prints a table for docs/performance.md; asserts nothing.

    python -m venv /tmp/cbench && /tmp/cbench/bin/pip install connect-python==0.9.0
    PYTHONPATH=sdk-python/src /tmp/cbench/bin/python tools/bench/connect_python.py [rounds] [data]

rounds (default 3) interleaves the variants; "data" skips the control plane.

connect-python is not a dependency of the SDK: this script swaps it in by
subclassing Client (same call signature, errors, headers) for the run.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import threading
import time
from typing import Any, TypeVar

from google.protobuf.message import Message

import polystreams.app
from polystreams import App
from polystreams._client import _USER_AGENT, Client
from polystreams.errors import UnavailableError, error_for_code
from polystreams.v1alpha1 import engine_pb2 as pb

M = TypeVar("M", bound=Message)
SERVICE = "polystreams.v1alpha1.EngineService"


def connect_client(compress: bool) -> type[Client]:
    from connectrpc.client import ConnectClientSync
    from connectrpc.errors import ConnectError
    from connectrpc.method import IdempotencyLevel, MethodInfo

    class ConnectPythonClient(Client):
        def __init__(self, url: str, **kw: Any) -> None:
            super().__init__(url, **kw)
            opts: dict[str, Any] = {} if compress else {"send_compression": None, "accept_compression": []}
            self._connect = ConnectClientSync(self.url, timeout_ms=120_000, **opts)
            self._methods: dict[str, Any] = {}
            self._headers = {"user-agent": _USER_AGENT}

        def call(self, method: str, request: Message, response_type: type[M]) -> M:
            info = self._methods.get(method)
            if info is None:
                info = MethodInfo(name=method, service_name=SERVICE, input=type(request), output=response_type,
                                  idempotency_level=IdempotencyLevel.UNKNOWN)
                self._methods[method] = info
            try:
                return self._connect.execute_unary(request=request, method=info, headers=self._headers)  # type: ignore[no-any-return]
            except ConnectError as e:
                raise error_for_code(e.code.name.lower(), e.message) from None
            except OSError as e:
                raise UnavailableError("unavailable", f"{method}: engine at {self.url} is unreachable: {e}") from None

    return ConnectPythonClient


class _Skip(Exception):
    pass


SESSIONS = iter(range(1 << 62))


def control_plane(client: Client, n: int) -> tuple[float, float]:
    """Median µs of OpenSession and of Build (a stream source), n calls each."""
    opens, builds = [], []
    for _ in range(n):
        t = time.perf_counter_ns()
        s = client.open_session(pb.OpenSessionRequest(application_id=f"bench-{next(SESSIONS)}"))
        opens.append(time.perf_counter_ns() - t)
        t = time.perf_counter_ns()
        client.build(pb.BuildRequest(session_id=s.session_id, stream=pb.StreamOp(topics=["lines"], value_serde="string")))
        builds.append(time.perf_counter_ns() - t)
    return statistics.median(opens) / 1e3, statistics.median(builds) / 1e3


def data_plane(records: int) -> float:
    """Records per second through map_values(str.upper), the host loop's Exchange carrying the bundles."""
    done = threading.Event()
    seen = 0
    first = last = 0.0

    def upper(v: str) -> str:
        nonlocal seen, first, last
        seen += 1
        if seen == 1:
            first = time.perf_counter()
        if seen == records:
            last = time.perf_counter()
            done.set()
        return v.upper()

    with App("bench-data", {"commit.interval.ms": "1000"}) as app:
        app.stream("lines", value="string").map_values(upper).to("upper")
        payload = "".join(f"line {i} of the benchmark, some words to carry\n" for i in range(records))
        subprocess.run(["kcat", "-P", "-b", app.brokers or "", "-t", "lines", "-z", "lz4"], input=payload, text=True, check=True)
        threading.Thread(target=lambda: (done.wait(600), app.stop()), daemon=True).start()
        app.run()
    return (records - 1) / (last - first)


def main() -> None:
    n, records = 2000, 100_000
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    data_only = len(sys.argv) > 2 and sys.argv[2] == "data"
    variants: list[tuple[str, type[Client]]] = [
        ("http.client (stdlib, the SDK's)", Client),
        ("connect-python 0.9.0, identity", connect_client(False)),
        ("connect-python 0.9.0, gzip (its default)", connect_client(True)),
    ]
    # Rounds interleave the variants, so that a noisy neighbour weighs on all alike; best round counts.
    cp: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in variants}
    engine = App("bench-engine")  # spawns the engine; its own client is not used below
    try:
        if data_only:
            raise _Skip
        clients = [(name, cls(engine._client.url)) for name, cls in variants]
        for _, c in clients:
            control_plane(c, 200)  # warm-up
        for _ in range(rounds):
            for name, c in clients:
                cp[name].append(control_plane(c, n))
        for _, c in clients:
            c.close()
    except _Skip:
        pass
    finally:
        engine.close()
    dp: dict[str, list[float]] = {name: [] for name, _ in variants}
    for _ in range(rounds):
        for name, cls in variants:
            polystreams.app.Client = cls  # type: ignore[misc]
            dp[name].append(data_plane(records))
    polystreams.app.Client = Client  # type: ignore[misc]
    base = statistics.median(dp[variants[0][0]])
    print(f"Python {sys.version.split()[0]}; control plane: median of {n} calls, best of {rounds} rounds; "
          f"data plane: {records:,} records through map_values(str.upper), {rounds} rounds")
    print("| client | OpenSession µs | Build µs | map_values records/s, median (min–max) | vs http.client |")
    print("|---|---:|---:|---:|---:|")
    for name, _ in variants:
        o = f"{min(o for o, _ in cp[name]):.0f}" if cp[name] else "–"
        b = f"{min(b for _, b in cp[name]):.0f}" if cp[name] else "–"
        r = statistics.median(dp[name])
        print(f"| {name} | {o} | {b} | {r:,.0f} ({min(dp[name]):,.0f}–{max(dp[name]):,.0f}) | {r / base:.2f}x |")


if __name__ == "__main__":
    main()
