"""Fixtures of the unit tests (helpers live in helpers.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers import FakeEngine


@pytest.fixture
def fake_engine() -> Iterator[FakeEngine]:
    f = FakeEngine()
    yield f
    f.close()
