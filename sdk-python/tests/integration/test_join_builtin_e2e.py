"""Built-in joiners ("pair", "this", "other") against the real engine: they
run in the engine, so the topology registers no host function at all."""

from __future__ import annotations

import pytest

from polystreams import InvalidArgumentError, JoinWindows
from polystreams.testing import TestRecord, TopologyTestDriver


def test_pair_in_a_stream_table_left_join_runs_with_no_host_function() -> None:
    # KStreamKTableJoinProcessor: a left join calls the joiner with a null
    # table value for a key the table does not hold; "pair" makes it
    # [order, None] in JSON.
    with TopologyTestDriver("py-builtin-join") as driver:
        customers = driver.table("customers", key="string", value="string")
        orders = driver.stream("orders", key="string", value="long")
        joined = orders.left_join(customers, "pair")
        assert joined.handle.value_serde == "json"
        joined.to("out")
        assert driver._functions == {}, "a built-in joiner registers no host function"
        driver.pipe_input("customers", "c1", "ann", timestamp=1)
        driver.pipe_input("orders", "c1", 5, timestamp=2)
        driver.pipe_input("orders", "c2", 7, timestamp=3)
        assert driver.read_output("out") == [TestRecord("c1", [5, "ann"], 2), TestRecord("c2", [7, None], 3)]


def test_this_and_other_in_table_table_and_stream_stream_joins() -> None:
    with TopologyTestDriver("py-builtin-join-kinds") as driver:
        left = driver.table("l", key="string", value="string")
        right = driver.table("r", key="string", value="long")
        left.outer_join(right, "other").to_stream().to("tt")
        views = driver.stream("views", key="string", value="string")
        clicks = driver.stream("clicks", key="string", value="string")
        views.join(clicks, "this", JoinWindows.of_time_difference_with_no_grace(100)).to("ss")
        assert driver._functions == {}
        driver.pipe_input("l", "k", "a", timestamp=1)
        driver.pipe_input("r", "k", 9, timestamp=2)
        # KTableKTableOuterJoin: the left row alone joins a null right value.
        assert [(r.key, r.value) for r in driver.read_output("tt")] == [("k", None), ("k", 9)]
        driver.pipe_input("views", "a", "v1", timestamp=1000)
        driver.pipe_input("clicks", "a", "c1", timestamp=1050)
        assert [(r.key, r.value) for r in driver.read_output("ss")] == [("a", "v1")]


def test_builtin_joiner_refusals_name_the_offender() -> None:
    with TopologyTestDriver("py-builtin-join-refusals") as driver:
        raw = driver.table("raw", key="string")
        orders = driver.stream("orders", key="string", value="string")
        with pytest.raises(InvalidArgumentError, match=r"built-in joiner pair cannot read the other side, handle \d+ .*bytes values"):
            orders.join(raw, "pair")
        with pytest.raises(InvalidArgumentError, match="built-in joiner this makes string values, but the value serde is json"):
            orders.join(raw, "this", value="json")
        with pytest.raises(ValueError, match="'concat' is not a built-in joiner"):
            orders.join(raw, "concat")  # type: ignore[call-overload]
