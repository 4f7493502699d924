"""A source's TimestampExtractor through the real engine (TopologyTestDriver)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from polystreams import Config, PolystreamsError, RecordMetadata
from polystreams.testing import TopologyTestDriver


def test_a_timestamp_extractor_stamps_drops_and_fails() -> None:
    seen: list[tuple[str, int, int, int]] = []

    def event_time(key: str | None, value: int, meta: RecordMetadata, partition_time: int) -> int:
        if value == 13:
            raise ValueError("unlucky")
        seen.append((meta.topic, meta.offset, meta.timestamp, partition_time))
        return value

    with TopologyTestDriver("extractor", Config(statestore_cache_max_bytes=0)) as driver:
        driver.stream("in", key="string", value="long", timestamp_extractor=event_time).to("out")
        for v in (500, -1, 200, 900):
            driver.pipe_input("in", "k", v, timestamp=7)
        got = [(r.value, r.timestamp) for r in driver.read_output("out")]
        assert got == [(500, 500), (200, 200), (900, 900)]
        # Partition time: the largest valid timestamp extracted before.
        assert seen == [("in", 0, 7, -1), ("in", 1, 7, 500), ("in", 2, 7, 500), ("in", 3, 7, 500)]
        with pytest.raises(PolystreamsError, match=r"record at in/0@4 failed in node KSTREAM-SOURCE-0000000000: timestamp extractor failed: ValueError: unlucky"):
            driver.pipe_input("in", "k", 13)


def test_a_builtin_timestamp_extractor_by_name() -> None:
    with TopologyTestDriver("extractor-builtin", Config(statestore_cache_max_bytes=0)) as driver:
        driver.table("t", key="string", value="string", timestamp_extractor="UsePartitionTimeOnInvalidTimestamp").to_stream().to("out")
        driver.pipe_input("t", "a", "x", timestamp=300)
        driver.pipe_input("t", "b", "y", timestamp=100)
        assert [(r.key, r.timestamp) for r in driver.read_output("out")] == [("a", 300), ("b", 100)]
    with (
        TopologyTestDriver("extractor-unknown", Config()) as driver,
        pytest.raises(PolystreamsError, match='"EventTime" is not a built-in one'),
    ):
        driver.stream("in", timestamp_extractor="EventTime")  # type: ignore[arg-type]


def test_the_readme_extractor_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    readme = (Path(__file__).resolve().parents[3] / "sdk-python" / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("\n### Timestamp extractors\n") :]
    m = re.search(r"^```python\n(.*?)^```", section, re.DOTALL | re.MULTILINE)
    assert m
    exec(compile(m.group(1), "README.md", "exec"), {"__name__": "readme"})  # noqa: S102 - the README runs verbatim
    assert capsys.readouterr().out == "[('o1', 1700000000000)]\n"


def test_default_timestamp_extractor_applies_to_sources_that_give_none() -> None:
    config = Config(statestore_cache_max_bytes=0, extra={"default.timestamp.extractor": "LogAndSkipOnInvalidTimestamp"})
    with TopologyTestDriver("extractor-default", config) as driver:
        driver.stream("in", value="string").to("out")
        driver.pipe_input("in", None, "kept", timestamp=100)
        driver.pipe_input("in", None, "dropped", timestamp=-1)
        assert [r.value for r in driver.read_output("out")] == ["kept"]
