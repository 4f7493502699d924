"""Versioned stores (KIP-889) and the stream-table join that reads them
(KIP-914) against the real engine, through the test driver."""

from __future__ import annotations

import datetime
import re
from pathlib import Path
from typing import Any

import pytest

from polystreams import InvalidArgumentError, Materialized, VersionedRecord
from polystreams.testing import TestRecord, TopologyTestDriver


def test_stream_records_join_the_version_valid_at_their_time() -> None:
    with TopologyTestDriver("py-versioned-join") as driver:
        prices = driver.table(
            "prices", key="string", value="string", materialized=Materialized("prices", versioned=datetime.timedelta(milliseconds=100))
        )
        orders = driver.stream("orders", key="string", value="string")
        orders.left_join(prices, lambda order, price: f"{order}@{price}").to("priced")
        driver.pipe_input("prices", "apple", "3", timestamp=10)
        driver.pipe_input("prices", "apple", "4", timestamp=20)
        driver.pipe_input("orders", "apple", "o1", timestamp=15)
        driver.pipe_input("prices", "apple", "2", timestamp=12)  # out of order: a version of the past
        driver.pipe_input("orders", "apple", "o2", timestamp=15)
        driver.pipe_input("orders", "apple", "o3", timestamp=25)
        driver.pipe_input("orders", "apple", "o4", timestamp=5)  # before any version
        assert driver.read_output("priced") == [
            TestRecord("apple", "o1@3", 15),
            TestRecord("apple", "o2@2", 15),
            TestRecord("apple", "o3@4", 25),
            TestRecord("apple", "o4@None", 5),
        ]

        store = driver.get_versioned_store("prices")
        assert store.get("apple") == VersionedRecord("4", 20, None)
        assert store.get("apple", as_of=13) == VersionedRecord("2", 12, 20)
        assert store.get("apple", as_of=9) is None
        assert store.get("pear") is None
        # Stream time 1000: reads older than the history retention (100 ms)
        # find nothing unless the latest version is older still; writes that
        # old are dropped.
        driver.pipe_input("prices", "pear", "9", timestamp=1000)
        driver.pipe_input("prices", "apple", "7", timestamp=50)
        assert store.get("apple", as_of=13) is None
        assert store.get("apple", as_of=60) == VersionedRecord("4", 20, None)
        with pytest.raises(InvalidArgumentError, match='store "prices" is a versioned store'):
            driver.get_store("prices")


def test_versioned_needs_a_table_and_a_name() -> None:
    with TopologyTestDriver("py-versioned-refused") as driver:
        with pytest.raises(InvalidArgumentError, match="needs a store name"):
            driver.table("t", key="string", materialized=Materialized(versioned=60_000))
        with pytest.raises(ValueError, match="give versioned too"):
            driver.table("u", key="string", materialized=Materialized("u", segment_interval=1000))
        counts = driver.stream("in", key="string").group_by_key()
        with pytest.raises(InvalidArgumentError, match="only a table source"):
            counts.count(materialized=Materialized("c", versioned=60_000))


def test_the_readme_versioned_example_runs() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("#### Versioned stores") :]
    m = re.search(r"^```python\n(.*?)^```", section, re.DOTALL | re.MULTILINE)
    assert m, "sdk-python/README.md: no python block under #### Versioned stores"
    scope: dict[str, Any] = {"__name__": "readme"}
    exec(compile(m.group(1), "README.md #### Versioned stores", "exec"), scope)  # noqa: S102 - the README's own code
    assert scope["priced"] == ["o1 at 3"]
    assert scope["version"] == VersionedRecord("3", 1000, 5000)
