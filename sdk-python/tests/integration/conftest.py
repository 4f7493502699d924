"""Integration tests run against the REAL engine binary.

The binary is $POLYSTREAMS_ENGINE, else <repo>/bin/polystreams (``make
build``). When it is missing these tests fail, loudly: they never skip.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def engine_binary() -> str:
    path = os.environ.get("POLYSTREAMS_ENGINE") or str(REPO / "bin" / "polystreams")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.fail(
            f"the polystreams engine binary {path} does not exist: build it with "
            f"`cd {REPO} && go build -o bin/polystreams ./core/cmd/polystreams` (or `make build`), "
            "or set POLYSTREAMS_ENGINE to its path",
            pytrace=False,
        )
    return path


@pytest.fixture(autouse=True)
def real_engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    """Every App in these tests spawns the real engine; state goes to tmp_path."""
    path = engine_binary()
    monkeypatch.setenv("POLYSTREAMS_ENGINE", path)
    monkeypatch.delenv("POLYSTREAMS_URL", raising=False)
    yield path


@pytest.fixture
def app_id() -> str:
    return "it-" + uuid.uuid4().hex[:8]
