"""The SDK against a real engine that requires a token and serves TLS."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from polystreams import App, Config, PolystreamsError

from conftest import engine_binary
from test_engine_e2e import Runner

TOKEN = "py-token-4e1d-planted"


class SecureEngine:
    """`polystreams dev` with $POLYSTREAMS_TOKEN and a self-signed certificate."""

    def __init__(self, tmp: Path) -> None:
        self.ca = str(tmp / "cert.pem")
        key = str(tmp / "key.pem")
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
             "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
             "-keyout", key, "-out", self.ca],
            check=True, capture_output=True,
        )
        env = dict(os.environ, POLYSTREAMS_TOKEN=TOKEN)
        self.proc = subprocess.Popen(
            [engine_binary(), "dev", "--listen", "127.0.0.1:0", "--broker", "127.0.0.1:0", "--state-dir", str(tmp / "state"),
             "--tls-cert", self.ca, "--tls-key", key, "--exit-on-stdin-close"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        assert self.proc.stdout is not None
        self.url = self.broker = ""
        while not self.url:
            line = self.proc.stdout.readline()
            assert line, f"the engine exited: {self.proc.stderr.read() if self.proc.stderr else ''}"
            if line.startswith("polystreams: broker "):
                self.broker = line.split()[-1]
            if line.startswith("polystreams: engine "):
                self.url = line.split()[-1]

    def close(self) -> str:
        """Stops the engine; returns everything it wrote."""
        self.proc.terminate()
        out, err = self.proc.communicate(timeout=60)
        return out + err


@pytest.fixture
def secure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SecureEngine]:
    monkeypatch.delenv("POLYSTREAMS_TOKEN", raising=False)
    monkeypatch.delenv("POLYSTREAMS_CA_FILE", raising=False)
    e = SecureEngine(tmp_path)
    yield e
    e.close()


@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_a_missing_or_wrong_token_is_unauthenticated(secure: SecureEngine, app_id: str, token: str | None) -> None:
    with pytest.raises(PolystreamsError) as e:
        App(app_id, engine=secure.url, token=token, ca_file=secure.ca)
    assert e.value.code == "unauthenticated", e.value
    assert TOKEN not in str(e.value)


def test_an_untrusted_certificate_is_refused(secure: SecureEngine, app_id: str) -> None:
    with pytest.raises(PolystreamsError) as e:
        App(app_id, engine=secure.url, token=TOKEN)
    assert e.value.code == "unavailable" and "CERTIFICATE_VERIFY_FAILED" in str(e.value), e.value


def test_the_token_and_ca_file_process_records(secure: SecureEngine, app_id: str, tmp_path: Path) -> None:
    p = Producer({"bootstrap.servers": secure.broker})
    for v in ("a", "b", "c"):
        p.produce("in", value=v.encode())
    assert p.flush(30) == 0
    with App(app_id, Config(state_dir=str(tmp_path / "s"), commit_interval_ms=100), engine=secure.url, token=TOKEN,
             ca_file=secure.ca) as app:
        app.stream("in", value="string").map_values(str.upper).to("out")
        runner = Runner(app)
        got: list[bytes] = []
        c = Consumer({"bootstrap.servers": secure.broker, "group.id": "verify", "auto.offset.reset": "earliest"})
        c.subscribe(["out"])
        deadline = time.monotonic() + 60
        while len(got) < 3 and time.monotonic() < deadline:
            assert runner.error is None, runner.error
            for m in c.consume(10, timeout=0.5):
                if not m.error():
                    got.append(m.value())
        c.close()
        app.stop()
        runner.join(60)
        assert runner.error is None
        assert sorted(got) == [b"A", b"B", b"C"]
        assert TOKEN not in repr(app)
    assert TOKEN not in secure.close()


def test_the_environment_gives_token_and_ca_file(secure: SecureEngine, app_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYSTREAMS_TOKEN", TOKEN)
    monkeypatch.setenv("POLYSTREAMS_CA_FILE", secure.ca)
    with App(app_id, engine=secure.url) as app:
        assert app.state() == "created"
