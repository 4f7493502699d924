"""The Connect unary client against a fake engine (stdlib http.server)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from helpers import FakeEngine, connect_error

from polystreams import (
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    PolystreamsError,
    UnavailableError,
)
from polystreams._client import Client
from polystreams.v1alpha1 import engine_pb2 as pb


def test_unary_call_speaks_connect(fake_engine: FakeEngine) -> None:
    fake_engine.handlers["RegisterFunction"] = lambda body: pb.RegisterFunctionResponse(token=7)
    c = Client(fake_engine.url)
    resp = c.register_function(pb.RegisterFunctionRequest(session_id="s", name="f"))
    assert resp.token == 7
    method, body, headers = fake_engine.calls[0]
    assert method == "RegisterFunction"
    assert pb.RegisterFunctionRequest.FromString(body).name == "f"
    assert headers["Content-Type"] == "application/proto"
    assert headers["Connect-Protocol-Version"] == "1"


def test_calls_share_one_keep_alive_connection(fake_engine: FakeEngine) -> None:
    fake_engine.handlers["GetState"] = lambda body: pb.GetStateResponse(state=pb.STATE_RUNNING)
    c = Client(fake_engine.url)
    for _ in range(5):
        assert c.get_state(pb.GetStateRequest(session_id="s")).state == pb.STATE_RUNNING
    assert fake_engine.connections == 1


def test_reconnects_once_when_the_engine_closed_the_connection(fake_engine: FakeEngine) -> None:
    fake_engine.handlers["GetState"] = lambda body: pb.GetStateResponse(state=pb.STATE_RUNNING)
    fake_engine.close_after_response = True  # closes without telling the client (no Connection: close)
    c = Client(fake_engine.url)
    for _ in range(3):
        assert c.get_state(pb.GetStateRequest(session_id="s")).state == pb.STATE_RUNNING
    assert fake_engine.connections == 3
    assert fake_engine.methods() == ["GetState"] * 3


@pytest.mark.parametrize(
    "code,cls",
    [
        ("invalid_argument", InvalidArgumentError),
        ("not_found", NotFoundError),
        ("failed_precondition", FailedPreconditionError),
        ("unavailable", UnavailableError),
        ("internal", PolystreamsError),
    ],
)
def test_connect_errors_map_to_exceptions(fake_engine: FakeEngine, code: str, cls: type[PolystreamsError]) -> None:
    msg = "Build(count): handle 3 is a stream; count takes a grouped stream"
    fake_engine.handlers["Build"] = lambda body: connect_error(code, msg)
    c = Client(fake_engine.url)
    with pytest.raises(cls) as info:
        c.build(pb.BuildRequest(session_id="s"))
    assert type(info.value) is cls
    assert info.value.code == code
    assert info.value.message == msg
    assert msg in str(info.value) and code in str(info.value)


def test_session_stays_usable_after_an_error(fake_engine: FakeEngine) -> None:
    fake_engine.handlers["Build"] = lambda body: connect_error("invalid_argument", "no")
    fake_engine.handlers["GetState"] = lambda body: pb.GetStateResponse(state=pb.STATE_CREATED)
    c = Client(fake_engine.url)
    with pytest.raises(InvalidArgumentError):
        c.build(pb.BuildRequest())
    assert c.get_state(pb.GetStateRequest()).state == pb.STATE_CREATED
    assert fake_engine.connections == 1


def test_non_connect_error_body_maps_from_http_status(fake_engine: FakeEngine) -> None:
    fake_engine.handlers["Start"] = lambda body: (503, b"upstream gone")
    c = Client(fake_engine.url)
    with pytest.raises(UnavailableError) as info:
        c.start(pb.StartRequest())
    assert info.value.code == "unavailable"
    assert "HTTP 503" in info.value.message and "upstream gone" in info.value.message


def test_unknown_method_is_unimplemented(fake_engine: FakeEngine) -> None:
    with pytest.raises(PolystreamsError) as info:
        Client(fake_engine.url).stop(pb.StopRequest())
    assert info.value.code == "unimplemented"


def test_unreachable_engine_is_unavailable() -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens on port now
    with pytest.raises(UnavailableError) as info:
        Client(f"http://127.0.0.1:{port}").get_state(pb.GetStateRequest())
    assert f"127.0.0.1:{port}" in info.value.message and "GetState" in info.value.message


def test_bad_url() -> None:
    with pytest.raises(ValueError):
        Client("127.0.0.1:8080")


def test_token_goes_in_a_bearer_header(fake_engine: FakeEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYSTREAMS_TOKEN", "from-env")
    fake_engine.handlers["GetState"] = lambda body: pb.GetStateResponse()
    Client(fake_engine.url, token="explicit").get_state(pb.GetStateRequest())
    Client(fake_engine.url).get_state(pb.GetStateRequest())
    monkeypatch.delenv("POLYSTREAMS_TOKEN")
    Client(fake_engine.url).get_state(pb.GetStateRequest())
    auth = [headers.get("Authorization") for _, _, headers in fake_engine.calls]
    assert auth == ["Bearer explicit", "Bearer from-env", None]


def test_a_missing_ca_file_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="absent.pem"):
        Client("https://localhost:1", ca_file=str(tmp_path / "absent.pem"))
