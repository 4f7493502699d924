"""KTable.transform_values against the real engine, in test driver
sessions: a transformer with a store and a materialized result, old values
through the transformer for a group_by, describe(), and failures."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from polystreams import (
    Config,
    InvalidArgumentError,
    ProcessingError,
    ProcessorContext,
    Stores,
    ValueTransformerWithKey,
)
from polystreams.testing import TopologyTestDriver

REPO = Path(__file__).resolve().parents[3]


def readme_block(heading: str) -> dict[str, Any]:
    """Runs the first python block under heading of sdk-python/README.md; answers its globals."""
    readme = (REPO / "sdk-python" / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index(heading) :]
    m = re.search(r"^```python\n(.*?)^```", section, re.DOTALL | re.MULTILINE)
    assert m, f"sdk-python/README.md: no python block under {heading}"
    scope: dict[str, Any] = {"__name__": "readme"}
    exec(compile(m.group(1), f"README.md {heading}", "exec"), scope)  # noqa: S102 - the README's own code
    return scope


class Versioner(ValueTransformerWithKey):
    """Tags each value with how many values its key has had (store "versions")."""

    def init(self, context: ProcessorContext) -> None:
        self.versions = context.get_state_store("versions")

    def transform(self, key: Any, value: Any) -> Any:
        n = (self.versions.get(key) or 0) + 1
        self.versions.put(key, n)
        return f"{key} deleted (v{n})" if value is None else f"{value} (v{n})"


def test_a_transformer_with_a_store_and_a_materialized_result() -> None:
    with TopologyTestDriver("tv-store") as driver:
        driver.add_state_store(Stores.key_value_store("versions", key="string", value="long"))
        tagged = driver.table("users", key="string", value="string").transform_values(Versioner, stores=["versions"], materialized="tagged")
        tagged.to_stream().to("tagged-users")
        assert "Processor: KTABLE-TRANSFORMVALUES-0000000003 (stores: [tagged, versions])" in driver.describe()
        driver.pipe_input("users", "ann", "paris", timestamp=1)
        driver.pipe_input("users", "ann", "rome", timestamp=2)
        driver.pipe_input("users", "ann", None, timestamp=3)
        assert [(r.key, r.value, r.timestamp) for r in driver.read_output("tagged-users")] == [
            ("ann", "paris (v1)", 1), ("ann", "rome (v2)", 2), ("ann", "ann deleted (v3)", 3),
        ]
        assert driver.get_store("tagged").get("ann") == "ann deleted (v3)"


class Length(ValueTransformerWithKey):
    def transform(self, key: Any, value: Any) -> Any:
        return None if value is None else len(value)


def test_old_values_pass_through_the_transformer_for_a_group_by() -> None:
    # KTableTransformValuesTest#shouldCalculateCorrectOldValuesIfNotStatefulEvenIfNotMaterialized.
    with TopologyTestDriver("tv-old") as driver:
        lengths = driver.table("in", key="string", value="string").transform_values(Length, value="long")
        lengths.group_by(lambda k, v: (v, k), key="long", value="string").count().to_stream().to("out", key="long", value="long")
        for value, ts in [("a", 5), ("aa", 15), ("aaa", 10)]:
            driver.pipe_input("in", "A", value, timestamp=ts)
        assert [(r.key, r.value) for r in driver.read_output("out")] == [(1, 1), (1, 0), (2, 1), (2, 0), (3, 1)]


class Forwarder(ValueTransformerWithKey):
    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def transform(self, key: Any, value: Any) -> Any:
        self.context.forward(value)
        return value


def test_a_transformer_cannot_forward_and_its_failure_names_the_node() -> None:
    with TopologyTestDriver("tv-forward") as driver:
        driver.table("in", key="string", value="string").transform_values(Forwarder, name="fwd").to_stream().to("out")
        with pytest.raises(ProcessingError, match=re.escape("forward: node fwd is a transform_values node")):
            driver.pipe_input("in", "k", "v")


class Picky(ValueTransformerWithKey):
    def transform(self, key: Any, value: Any) -> Any:
        if value == "bad":
            raise ValueError("bad value")
        return value.upper()


def test_a_transformer_that_raises_is_skipped_under_log_and_continue() -> None:
    cfg = Config(extra={"processing.exception.handler": "log_and_continue"})
    with TopologyTestDriver("tv-continue", cfg) as driver:
        driver.table("in", key="string", value="string").transform_values(Picky).to_stream().to("out")
        for v in ["ok", "bad", "fine"]:
            driver.pipe_input("in", "k", v)
        assert [r.value for r in driver.read_output("out")] == ["OK", "FINE"]


def test_an_unknown_store_is_refused_naming_node_and_store() -> None:
    with TopologyTestDriver("tv-unknown") as driver:
        table = driver.table("in", key="string", value="string")
        with pytest.raises(InvalidArgumentError, match=re.escape('node KTABLE-TRANSFORMVALUES-0000000003 names store "nope", which no add_state_store added')):
            table.transform_values(Length, stores=["nope"])


def test_the_readme_transform_values_example_runs() -> None:
    assert readme_block("#### Transforming a table's values with state")["changes"] == [
        ("ann", "paris (v1)"), ("ann", "rome (v2)"), ("ann", "ann deleted (v3)"),
    ]
