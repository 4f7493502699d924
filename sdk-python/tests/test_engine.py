"""Finding and spawning the engine, with stand-in binaries."""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path

import pytest

from polystreams import EngineStartError
from polystreams._engine import EngineProcess, find_engine


def fake_binary(tmp_path: Path, body: str) -> str:
    p = tmp_path / "polystreams"
    p.write_text(f"#!{sys.executable}\nimport sys, time, os\n{body}\n")
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return str(p)


SERVING = """
open(os.environ["ARGV_FILE"], "w").write(" ".join(sys.argv[1:]))
if sys.argv[1] == "dev":
    print("polystreams: broker 127.0.0.1:41234", flush=True)
print("polystreams: engine http://127.0.0.1:41235", flush=True)
print("time=x level=INFO msg=serving", file=sys.stderr, flush=True)
sys.stdin.read()  # --exit-on-stdin-close
"""


def test_dev_engine_reports_broker_and_url_and_stops_on_close(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    argv_file = tmp_path / "argv"
    monkeypatch.setenv("ARGV_FILE", str(argv_file))
    e = EngineProcess(fake_binary(tmp_path, SERVING))
    try:
        assert e.url == "http://127.0.0.1:41235"
        assert e.broker == "127.0.0.1:41234"
        assert e.alive()
    finally:
        e.close(timeout=5)
    assert not e.alive()
    assert argv_file.read_text() == "dev --broker 127.0.0.1:0 --listen 127.0.0.1:0 --exit-on-stdin-close"


def test_serve_engine_gets_the_brokers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    argv_file = tmp_path / "argv"
    monkeypatch.setenv("ARGV_FILE", str(argv_file))
    e = EngineProcess(fake_binary(tmp_path, SERVING), brokers="kafka:9092")
    e.close(timeout=5)
    assert e.broker is None
    assert argv_file.read_text() == "serve --brokers kafka:9092 --listen 127.0.0.1:0 --exit-on-stdin-close"


def test_engine_exits_when_its_stdin_closes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGV_FILE", str(tmp_path / "argv"))
    e = EngineProcess(fake_binary(tmp_path, SERVING))
    assert e._proc.stdin is not None
    e._proc.stdin.close()
    e._proc.wait(timeout=5)
    assert not e.alive()


def test_start_failure_carries_the_engines_stderr(tmp_path: Path) -> None:
    binary = fake_binary(tmp_path, 'print("polystreams: --listen 127.0.0.1:0: address in use", file=sys.stderr); sys.exit(1)')
    with pytest.raises(EngineStartError) as info:
        EngineProcess(binary)
    msg = info.value.message
    assert "exited with status 1" in msg and "address in use" in msg and binary in msg


def test_start_timeout(tmp_path: Path) -> None:
    binary = fake_binary(tmp_path, 'print("warming up", file=sys.stderr, flush=True); time.sleep(60)')
    t0 = time.monotonic()
    with pytest.raises(EngineStartError) as info:
        EngineProcess(binary, start_timeout=0.5)
    assert time.monotonic() - t0 < 10
    assert "did not report its address within 0.5s" in info.value.message
    assert "warming up" in info.value.message


def test_find_engine_prefers_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    binary = fake_binary(tmp_path, "")
    monkeypatch.setenv("POLYSTREAMS_ENGINE", binary)
    assert find_engine() == binary
    monkeypatch.setenv("POLYSTREAMS_ENGINE", str(tmp_path / "missing"))
    with pytest.raises(EngineStartError, match="POLYSTREAMS_ENGINE"):
        find_engine()


def test_find_engine_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    binary = fake_binary(tmp_path, "")
    monkeypatch.delenv("POLYSTREAMS_ENGINE", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + os.environ.get("PATH", ""))
    assert find_engine() == binary


SERVING_FAKE_ENGINE = f"""
sys.path[:0] = [{str(Path(__file__).parent)!r}, {str(Path(__file__).parent.parent / "src")!r}]
from helpers import FakeEngine
from polystreams.v1alpha1 import engine_pb2 as pb
f = FakeEngine()
f.handlers["OpenSession"] = lambda b: pb.OpenSessionResponse(session_id="s", config={{"bootstrap.servers": "127.0.0.1:41234"}})
f.handlers["Stop"] = lambda b: pb.StopResponse()
print("polystreams: broker 127.0.0.1:41234", flush=True)
print("polystreams: engine " + f.url, flush=True)
sys.stdin.read()
"""


def test_app_spawns_an_engine_and_stops_it_on_close(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from polystreams import App

    monkeypatch.delenv("POLYSTREAMS_URL", raising=False)
    monkeypatch.setenv("POLYSTREAMS_ENGINE", fake_binary(tmp_path, SERVING_FAKE_ENGINE))
    with App("spawned") as app:
        assert app.brokers == "127.0.0.1:41234"
        assert app.engine_url.startswith("http://127.0.0.1:")
        proc = app._engine
        assert proc is not None and proc.alive()
    assert not proc.alive()
