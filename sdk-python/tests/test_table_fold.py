"""Table fold bundles (KGroupedTable reduce/aggregate): changes with old values, subtractor before adder."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from helpers import column, split_column

from polystreams._bundle import Executor
from polystreams.v1alpha1 import engine_pb2 as pb

NONE = object()


def table_bundle(
    operation: Any,
    groups: Sequence[tuple[Any, Any, Sequence[tuple[Any, Any]]]],
    *,
    initializer_token: int = 0,
    subtractor_token: int = 2,
) -> pb.Bundle:
    """groups: [(key, aggregate or NONE, [(new value, old value)])]."""
    kdata, klens = column("string", [k for k, _, _ in groups])
    changes = [c for _, _, cs in groups for c in cs]
    vdata, vlens = column("long", [n for n, _ in changes])
    odata, olens = column("long", [o for _, o in changes])
    adata, alens = column("long", [None if a is NONE else a for _, a, _ in groups])
    return pb.Bundle(
        id=3,
        steps=[
            pb.Step(
                token=1,
                operation=operation,
                node="KTABLE-REDUCE-0000000007",
                initializer_token=initializer_token,
                subtractor_token=subtractor_token,
            )
        ],
        key_serde="string",
        value_serde="long",
        output_key_serde="string",
        output_value_serde="long",
        aggregate_serde="long",
        key_lengths=klens,
        keys=kdata,
        value_lengths=vlens,
        values=vdata,
        old_value_lengths=olens,
        old_values=odata,
        group_sizes=[len(cs) for _, _, cs in groups],
        aggregate_lengths=alens,
        aggregates=adata,
        topic="t-repartition",
        offsets=list(range(len(changes))),
        timestamps=[0] * len(changes),
    )


def test_reduce_subtracts_the_old_value_then_adds_the_new() -> None:
    calls: list[tuple[str, int, int]] = []

    def add(a: int, v: int) -> int:
        calls.append(("add", a, v))
        return a + v

    def sub(a: int, v: int) -> int:
        calls.append(("sub", a, v))
        return a - v

    b = table_bundle(
        pb.OPERATION_REDUCE,
        [
            # eu has 12: a1 goes 5 -> 10 (one change), a2 (7) leaves.
            ("eu", 12, [(10, 5), (None, 7)]),
            # us has none: a2 arrives (first value becomes the aggregate), then a removal.
            ("us", NONE, [(1, None), (None, 1)]),
            # A removal from a key with no aggregate leaves none: null out.
            ("xx", NONE, [(None, 3)]),
        ],
    )
    r = Executor({1: add, 2: sub}).process(b)
    assert list(r.output_counts) == [1, 1, 1, 1, 1] and not r.failures
    assert list(r.value_lengths) == [8, 8, 8, 8, -1]
    assert split_column(r.values, [x for x in r.value_lengths if x >= 0], "long") == [17, 10, 1, 0]
    assert calls == [("sub", 12, 5), ("add", 7, 10), ("sub", 17, 7), ("sub", 1, 1)]


def test_aggregate_starts_from_the_initializer_and_keys_are_passed() -> None:
    def add(k: str, v: int, a: int) -> int:
        assert k == "eu"
        return a + v

    def sub(k: str, v: int, a: int) -> int:
        return a - v

    b = table_bundle(pb.OPERATION_AGGREGATE, [("eu", NONE, [(4, None), (6, 4)])], initializer_token=3)
    r = Executor({1: add, 2: sub, 3: lambda: 100}).process(b)
    assert not r.failures
    assert split_column(r.values, list(r.value_lengths), "long") == [104, 106]


def test_a_raising_subtractor_fails_its_change_alone() -> None:
    def sub(a: int, v: int) -> int:
        raise ValueError("cannot subtract")

    b = table_bundle(pb.OPERATION_REDUCE, [("eu", 12, [(10, 5), (3, None)])])
    r = Executor({1: lambda a, v: a + v, 2: sub}).process(b)
    assert list(r.output_counts) == [0, 1]
    assert [(f.index, f.message) for f in r.failures] == [(0, "ValueError: cannot subtract")]
    # The failed change left the aggregate as it was: 12 + 3.
    assert split_column(r.values, list(r.value_lengths), "long") == [15]


def test_an_unregistered_subtractor_fails_every_change_naming_its_token() -> None:
    b = table_bundle(pb.OPERATION_REDUCE, [("eu", 12, [(10, 5)])], subtractor_token=9)
    r = Executor({1: lambda a, v: a + v}).process(b)
    assert list(r.output_counts) == [0]
    assert "subtractor token 9" in r.failures[0].message


def test_a_subtractor_returning_none_leaves_no_aggregate() -> None:
    """As Kafka Streams' KTableReduce: a null from the subtractor stores null
    (the group has no aggregate), so the next value starts it again."""

    def sub(a: int, v: int) -> int | None:
        return None if a == v else a - v

    b = table_bundle(pb.OPERATION_REDUCE, [("eu", 5, [(None, 5), (7, None)])])
    r = Executor({1: lambda a, v: a + v, 2: sub}).process(b)
    assert not r.failures
    assert list(r.value_lengths) == [-1, 8]
    assert split_column(r.values, [8], "long") == [7]
