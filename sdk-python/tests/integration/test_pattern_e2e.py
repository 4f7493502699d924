"""stream(Pattern) through the real engine (TopologyTestDriver)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from polystreams import Config, PolystreamsError
from polystreams.testing import TopologyTestDriver


def test_a_pattern_source_reads_every_topic_it_matches_whole() -> None:
    with TopologyTestDriver("pattern", Config(statestore_cache_max_bytes=0)) as driver:
        driver.stream(re.compile("orders-[a-z]{2}"), key="string", value="string").group_by_key().count().to_stream().to("counts", value="long")
        driver.stream("orders-eu-archive", key="string", value="string").to("archived")
        assert "Source: KSTREAM-SOURCE-0000000000 (topics: orders-[a-z]{2})" in driver.describe()
        driver.pipe_input("orders-eu", "a", "x")
        driver.pipe_input("orders-us", "a", "y")
        driver.pipe_input("orders-eu-archive", "a", "old")  # matches only in part: the other source's
        assert [(r.key, r.value) for r in driver.read_output("counts")] == [("a", 1), ("a", 2)]
        assert [r.value for r in driver.read_output("archived")] == ["old"]
        with pytest.raises(PolystreamsError, match='topic "orders" is not read by the topology'):
            driver.pipe_input("orders", "a", "z")


def test_a_pattern_go_cannot_read_or_with_flags_is_refused() -> None:
    with TopologyTestDriver("pattern-refused", Config()) as driver:
        with pytest.raises(PolystreamsError, match=r'pattern "orders-\(\?!eu\)\.\*" is not a regular expression Go\'s RE2 reads'):
            driver.stream(re.compile("orders-(?!eu).*"))
        with pytest.raises(ValueError, match="takes only IGNORECASE and DOTALL"):
            driver.stream(re.compile("orders-.*", re.MULTILINE))
        driver.stream(re.compile("orders-.*", re.IGNORECASE), name="any-case")
        assert "Source: any-case (topics: (?i)orders-.*)" in driver.describe()


def test_the_readme_pattern_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    readme = (Path(__file__).resolve().parents[3] / "sdk-python" / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("\n### Topic patterns\n") :]
    m = re.search(r"^```python\n(.*?)^```", section, re.DOTALL | re.MULTILINE)
    assert m
    exec(compile(m.group(1), "README.md", "exec"), {"__name__": "readme"})  # noqa: S102 - the README runs verbatim
    assert capsys.readouterr().out == "[('a', 1), ('a', 2), ('b', 1)]\n"


def test_a_topology_source_reads_a_pattern() -> None:
    with TopologyTestDriver("pattern-topology") as driver:
        driver.topology().add_source("orders", re.compile("orders-[a-z]{2}"), key="string", value="string").add_sink("all", "all-orders", "orders")
        assert "Source: orders (topics: orders-[a-z]{2})" in driver.describe()
        driver.pipe_input("orders-eu", "o1", "eu")
        driver.pipe_input("orders-us", "o2", "us")
        assert [(r.key, r.value) for r in driver.read_output("all-orders")] == [("o1", "eu"), ("o2", "us")]
        with pytest.raises(TypeError, match="topics \\(str\\) or one compiled pattern"):
            driver.topology().add_source("mixed", "a", re.compile("b-.*"))
