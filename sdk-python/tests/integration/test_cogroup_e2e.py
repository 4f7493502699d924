"""Cogroups (KIP-150) against the real engine, through the test driver: the
README's example, a windowed and a session cogroup, and the names Kafka
Streams gives the nodes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from polystreams import InvalidArgumentError, Materialized, SessionWindows, TimeWindows, Windowed
from polystreams.testing import TopologyTestDriver

REPO = Path(__file__).resolve().parents[3]


def test_the_readme_cogroup_example_runs() -> None:
    readme = (REPO / "sdk-python" / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### Cogroup") :]
    m = re.search(r"^```python\n(.*?)^```", section, re.S | re.M)
    assert m, "sdk-python/README.md: no python block under ### Cogroup"
    scope: dict[str, Any] = {"__name__": "readme"}
    exec(compile(m.group(1), "README.md ### Cogroup", "exec"), scope)  # noqa: S102 - the README's own code
    assert scope["output"] == [
        ("ann", {"clicks": 1, "spent": 0}),
        ("ann", {"clicks": 1, "spent": 30}),
        ("bob", {"clicks": 1, "spent": 0}),
    ]


def test_cogroup_describes_as_kafka_streams() -> None:
    # CogroupedKStreamImplTest#shouldNameProcessorsAndStoreBasedOnNamedParameter.
    with TopologyTestDriver("cogroup-names") as driver:
        one = driver.stream("one", key="string", value="string").group_by_key()
        two = driver.stream("two", key="string", value="string").group_by_key()
        table = one.cogroup(lambda k, v, a: a + v).cogroup(two, lambda k, v, a: a + v).aggregate(lambda: "", materialized="store", name="test")
        table.to_stream().to("output")
        text = driver.describe()
    assert "Processor: test-cogroup-agg-0 (stores: [store])" in text
    assert "Processor: test-cogroup-agg-1 (stores: [store])" in text
    assert "<-- test-cogroup-agg-0, test-cogroup-agg-1" in text
    assert "Processor: KTABLE-TOSTREAM-0000000005 (stores: [])" in text


def test_windowed_and_session_cogroups() -> None:
    with TopologyTestDriver("cogroup-windows") as driver:
        a = driver.stream("a", key="string", value="long").group_by_key()
        b = driver.stream("b", key="string", value="long").group_by_key()
        (a.cogroup(lambda k, v, agg: agg + v)
            .cogroup(b, lambda k, v, agg: agg + 100 * v)
            .windowed_by(TimeWindows.of_size_with_no_grace(10))
            .aggregate(lambda: 0, materialized=Materialized(value="long"))
            .to_stream()
            .to("tumbling"))
        sa = driver.stream("sa", key="string", value="long").group_by_key()
        sb = driver.stream("sb", key="string", value="long").group_by_key()
        (sa.cogroup(lambda k, v, agg: agg + v)
            .cogroup(sb, lambda k, v, agg: agg + 1)
            .windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(5))
            # Sessions kept 60 s: with the default retention (gap + grace) the
            # store would no longer return [0, 0] once it saw time 10.
            .aggregate(lambda: 0, lambda k, x, y: x + y, materialized=Materialized(value="long", retention=60_000))
            .to_stream()
            .to("sessions"))
        driver.pipe_input("a", "k", 1, timestamp=0)
        driver.pipe_input("b", "k", 2, timestamp=3)
        driver.pipe_input("a", "k", 4, timestamp=12)
        driver.pipe_input("sa", "k", 10, timestamp=0)
        driver.pipe_input("sa", "k", 20, timestamp=10)
        driver.pipe_input("sb", "k", 0, timestamp=5)
        tumbling = [(r.key, r.value) for r in driver.read_output("tumbling")]
        sessions = [(r.key, r.value) for r in driver.read_output("sessions")]
    assert tumbling == [(Windowed("k", 0, 10), 1), (Windowed("k", 0, 10), 201), (Windowed("k", 10, 20), 4)]
    assert sessions == [
        (Windowed("k", 0, 0), 10),
        (Windowed("k", 10, 10), 20),
        (Windowed("k", 0, 0), None),
        (Windowed("k", 10, 10), None),
        (Windowed("k", 0, 10), 31),
    ]


def test_two_unnamed_repartitions_are_refused() -> None:
    with TopologyTestDriver("cogroup-refused") as driver:
        one = driver.stream("one", key="string", value="string").select_key(lambda k, v: v).group_by_key()
        two = driver.stream("two", key="string", value="string").select_key(lambda k, v: v).group_by_key()
        cg = one.cogroup(lambda k, v, a: a + v).cogroup(two, lambda k, v, a: a + v)
        with pytest.raises(InvalidArgumentError, match="COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition"):
            cg.aggregate(lambda: "")
