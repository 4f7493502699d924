"""The fold executor: reduce and aggregate bundles, one key per group, one aggregate out per value."""

from __future__ import annotations

import struct
import time
from collections.abc import Sequence
from typing import Any

import pytest
from helpers import column, make_bundle, split_column

from polystreams._bundle import Executor
from polystreams.v1alpha1 import engine_pb2 as pb

REDUCE = pb.OPERATION_REDUCE
AGGREGATE = pb.OPERATION_AGGREGATE
NONE = object()  # a group whose key has no aggregate yet


def fold_bundle(
    operation: Any,
    groups: Sequence[tuple[Any, Any, Sequence[Any]]],
    *,
    token: int = 1,
    initializer_token: int = 0,
    key_serde: str = "string",
    value_serde: str = "long",
    aggregate_serde: str | None = None,
    bundle_id: int = 1,
) -> pb.Bundle:
    """A fold bundle of groups [(key, aggregate or NONE, values)], laid out as the engine lays it out."""
    agg_serde = aggregate_serde or value_serde
    kdata, klens = column(key_serde, [k for k, _, _ in groups])
    values = [v for _, _, vs in groups for v in vs]
    vdata, vlens = column(value_serde, values)
    adata, alens = column(agg_serde, [None if a is NONE else a for _, a, _ in groups])
    return pb.Bundle(
        id=bundle_id,
        steps=[pb.Step(token=token, operation=operation, node="KSTREAM-FOLD-0000000002", initializer_token=initializer_token)],
        key_serde=key_serde,
        value_serde=value_serde,
        output_key_serde=key_serde,
        output_value_serde=agg_serde,
        key_lengths=klens,
        keys=kdata,
        value_lengths=vlens,
        values=vdata,
        group_sizes=[len(vs) for _, _, vs in groups],
        aggregate_lengths=alens,
        aggregates=adata,
        aggregate_serde=agg_serde,
        topic="in",
        partition=0,
        offsets=list(range(len(values))),
        timestamps=[0] * len(values),
    )


def run(functions: dict[int, Any], bundle: pb.Bundle) -> pb.BundleResult:
    return Executor(functions).process(bundle)


def outputs(r: pb.BundleResult, serde_name: str = "long") -> list[Any]:
    return split_column(r.values, r.value_lengths, serde_name)


def failures_of(r: pb.BundleResult) -> list[tuple[int, int, str]]:
    return [(f.index, f.step, f.message) for f in r.failures]


class Calls:
    """Records each call of a wrapped function."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, *args: Any) -> Any:
        self.calls.append(args)
        return self.fn(*args)


def test_reduce_first_value_becomes_the_aggregate_without_a_call() -> None:
    add = Calls(lambda a, v: a + v)
    b = fold_bundle(REDUCE, [("a", NONE, [5, 1, 2]), ("b", 10, [3]), ("c", NONE, [7])], bundle_id=7)
    r = run({1: add}, b)
    assert r.bundle_id == 7
    assert list(r.output_counts) == [1, 1, 1, 1, 1]
    # One aggregate per value, in the bundle's value order: the aggregate after it.
    assert outputs(r) == [5, 6, 8, 13, 7]
    assert add.calls == [(5, 1), (6, 2), (10, 3)]  # no call for a's 5 nor c's 7
    assert list(r.key_lengths) == [] and r.keys == b""  # keys do not change
    assert not r.failures


def test_aggregate_calls_the_initializer_once_per_new_key_and_gets_key_value_aggregate() -> None:
    init = Calls(lambda: 0)
    agg = Calls(lambda k, v, a: a + v)
    b = fold_bundle(AGGREGATE, [("a", NONE, [1, 2, 3]), ("b", 100, [4]), ("c", NONE, [5])], token=2, initializer_token=1)
    r = run({1: init, 2: agg}, b)
    assert outputs(r) == [1, 3, 6, 104, 5]
    assert len(init.calls) == 2  # a and c; b had its aggregate
    assert agg.calls == [("a", 1, 0), ("a", 2, 1), ("a", 3, 3), ("b", 4, 100), ("c", 5, 0)]


def test_many_values_of_one_hot_key() -> None:
    n = 5000
    b = fold_bundle(REDUCE, [("hot", NONE, list(range(n)))])
    r = run({1: lambda a, v: a + v}, b)
    out = outputs(r)
    assert len(out) == n and list(r.output_counts) == [1] * n
    assert out[-1] == n * (n - 1) // 2 and out[:4] == [0, 1, 3, 6]
    # The next bundle of the same key starts from the stored aggregate.
    r2 = run({1: lambda a, v: a + v}, fold_bundle(REDUCE, [("hot", out[-1], [1, 1])], bundle_id=2))
    assert outputs(r2) == [out[-1] + 1, out[-1] + 2]


def test_json_aggregates_with_a_different_value_serde() -> None:
    def add(key: str, value: Any, agg: dict[str, Any]) -> dict[str, Any]:
        agg["n"] += 1
        agg["total"] += value["amount"]
        agg["items"].append(value["item"])
        return agg  # changed in place, as is usual in Python

    b = fold_bundle(
        AGGREGATE,
        [
            ("alice", NONE, [{"amount": 3, "item": "x"}, {"amount": 4, "item": "é"}]),
            ("bob", {"n": 1, "total": 10, "items": ["z"]}, [{"amount": 1, "item": "y"}]),
        ],
        token=2,
        initializer_token=1,
        value_serde="json",
        aggregate_serde="json",
    )
    r = run({1: lambda: {"n": 0, "total": 0, "items": []}, 2: add}, b)
    # Each output is the aggregate as it was after its value, though the next
    # call changed the same dict.
    assert outputs(r, "json") == [
        {"n": 1, "total": 3, "items": ["x"]},
        {"n": 2, "total": 7, "items": ["x", "é"]},
        {"n": 2, "total": 11, "items": ["z", "y"]},
    ]
    assert r.values.decode().startswith('{"n":1,"total":3,"items":["x"]}')


def test_aggregate_to_long_from_json_values() -> None:
    b = fold_bundle(
        AGGREGATE,
        [("k1", NONE, [{"amount": 2}, {"amount": 5}]), ("k2", 7, [{"amount": 1}])],
        token=2,
        initializer_token=1,
        value_serde="json",
        aggregate_serde="long",
    )
    r = run({1: lambda: 0, 2: lambda k, v, a: a + v["amount"]}, b)
    assert outputs(r, "long") == [2, 7, 8]
    assert r.values[:8] == struct.pack(">q", 2)


def test_a_raising_call_fails_its_value_and_the_aggregate_stays_as_before() -> None:
    def add(a: int, v: int) -> int:
        if v == 13:
            raise ValueError("unlucky")
        return a + v

    b = fold_bundle(REDUCE, [("a", NONE, [1, 13, 2, 13]), ("b", 5, [13, 1])])
    r = run({1: add}, b)
    assert list(r.output_counts) == [1, 0, 1, 0, 0, 1]
    assert outputs(r) == [1, 3, 6]  # a: 1, (fails), 1+2, (fails); b: (fails), 5+1
    assert failures_of(r) == [(1, 0, "ValueError: unlucky"), (3, 0, "ValueError: unlucky"), (4, 0, "ValueError: unlucky")]
    assert {f.kind for f in r.failures} == {pb.RecordFailure.KIND_PROCESSING}


def test_none_and_unencodable_aggregates_fail_their_value() -> None:
    def pick(a: int, v: int) -> Any:
        return {0: None, 1: "one", 2: 2**64}.get(v, a + v)

    b = fold_bundle(REDUCE, [("a", 100, [5, 0, 1, 2, 5])])
    r = run({1: pick}, b)
    assert list(r.output_counts) == [1, 0, 0, 0, 1]
    assert outputs(r) == [105, 110]
    assert failures_of(r) == [
        (1, 0, "TypeError: reduce returned None; an aggregate cannot be null"),
        (2, 0, "TypeError: long serde: want int, got str"),
        (3, 0, f"OverflowError: long serde: {2**64} does not fit in 64 bits"),
    ]
    r = run({1: lambda: 0, 2: lambda k, v, a: None}, fold_bundle(AGGREGATE, [("a", NONE, [1])], token=2, initializer_token=1))
    assert failures_of(r) == [(0, 0, "TypeError: aggregate returned None; an aggregate cannot be null")]


def test_aggregate_initializer_failure_and_retry_on_the_next_value() -> None:
    tries: list[int] = []

    def init() -> int:
        tries.append(1)
        if len(tries) == 1:
            raise RuntimeError("not yet")
        return 0

    b = fold_bundle(AGGREGATE, [("a", NONE, [1, 2, 3])], token=2, initializer_token=1)
    r = run({1: init, 2: lambda k, v, a: a + v}, b)
    assert failures_of(r) == [(0, 0, "RuntimeError: not yet")]
    assert list(r.output_counts) == [0, 1, 1]
    assert outputs(r) == [2, 5]  # the key still had no aggregate: initialized again, then kept
    assert len(tries) == 2


def test_reduce_first_value_that_fails_leaves_the_key_without_aggregate() -> None:
    # The first value does not encode with the store's serde: the next value
    # becomes the aggregate instead, still without a call.
    add = Calls(lambda a, v: a + v)
    b = fold_bundle(REDUCE, [("a", NONE, ["x", 1, 2])], value_serde="json", aggregate_serde="long")
    r = run({1: add}, b)
    assert failures_of(r) == [(0, 0, "TypeError: long serde: want int, got str")]
    assert outputs(r) == [1, 3] and add.calls == [(1, 2)]


def test_undecodable_value_and_stored_aggregate() -> None:
    b = fold_bundle(REDUCE, [("a", NONE, [1, 2, 3]), ("b", 1, [4])])
    # Corrupt value 1 (a 7-byte long), keeping the column consistent.
    vals = bytearray(b.values)
    del vals[8]
    b.values = bytes(vals)
    b.value_lengths[1] = 7
    r = run({1: lambda a, v: a + v}, b)
    assert list(r.output_counts) == [1, 0, 1, 1]
    assert outputs(r) == [1, 4, 5]
    assert failures_of(r) == [(1, 0, "ValueError: long serde: want 8 bytes, got 7")]
    assert r.failures[0].kind == pb.RecordFailure.KIND_DESERIALIZATION
    b = fold_bundle(REDUCE, [("a", 1, [1, 2]), ("b", 1, [4])])
    b.aggregates = b"\x00\x00\x00\x01" + struct.pack(">q", 1)  # a's is 4 bytes
    b.aggregate_lengths[:] = [4, 8]
    r = run({1: lambda a, v: a + v}, b)
    assert list(r.output_counts) == [0, 0, 1] and outputs(r) == [5]
    assert [f.index for f in r.failures] == [0, 1]
    assert "want 8 bytes, got 4" in r.failures[0].message and "stored aggregate" in r.failures[0].message
    assert {f.kind for f in r.failures} == {pb.RecordFailure.KIND_DESERIALIZATION}


def test_unregistered_tokens_and_malformed_bundles_fail_every_value() -> None:
    b = fold_bundle(REDUCE, [("a", NONE, [1, 2])], token=9)
    r = run({}, b)
    assert list(r.output_counts) == [0, 0] and [f.index for f in r.failures] == [0, 1]
    assert "token 9" in r.failures[0].message and "KSTREAM-FOLD-0000000002" in r.failures[0].message
    r = run({2: lambda k, v, a: a}, fold_bundle(AGGREGATE, [("a", NONE, [1])], token=2, initializer_token=5))
    assert "initializer token 5" in r.failures[0].message
    b = fold_bundle(REDUCE, [("a", NONE, [1, 2])])
    b.group_sizes[0] = 3
    r = run({1: lambda a, v: a + v}, b)
    assert list(r.output_counts) == [0, 0] and "malformed fold bundle" in r.failures[0].message


def test_a_fold_step_in_a_longer_chain_is_refused() -> None:
    b = make_bundle([(pb.OPERATION_MAP_VALUES, 1), (REDUCE, 2)], ["a"])
    r = run({1: str.upper, 2: lambda a, v: a + v}, b)
    assert list(r.output_counts) == [0]
    assert "only step" in r.failures[0].message and r.failures[0].step == 1


def test_empty_fold_bundle() -> None:
    r = run({1: lambda a, v: a + v}, fold_bundle(REDUCE, []))
    assert list(r.output_counts) == [] and r.values == b"" and not r.failures


def test_fold_and_chain_compiled_separately() -> None:
    ex = Executor({1: lambda a, v: a + v, 2: lambda: 0, 3: lambda k, v, a: a + v})
    ex.process(fold_bundle(REDUCE, [("a", NONE, [1])]))
    ex.process(fold_bundle(REDUCE, [("a", 1, [1])], bundle_id=2))
    ex.process(fold_bundle(AGGREGATE, [("a", NONE, [1])], token=3, initializer_token=2))
    ex.process(fold_bundle(REDUCE, [("a", NONE, [1.5])], value_serde="double"))
    assert len(ex._chains) == 3


@pytest.mark.parametrize("kind", ["reduce long", "aggregate json"])
def test_fold_cost_per_value(kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Not a benchmark gate, a sanity bound: 2,000 values over 100 keys."""
    n, keys = 2000, 100
    groups: list[tuple[Any, Any, list[Any]]]
    if kind == "reduce long":
        groups = [(f"k{g}", g if g % 2 else NONE, list(range(g, n, keys))) for g in range(keys)]
        b = fold_bundle(REDUCE, groups)
        fns: dict[int, Any] = {1: lambda a, v: a + v}
    else:
        groups = [(f"k{g}", {"n": g} if g % 2 else NONE, [{"amount": i} for i in range(g, n, keys)]) for g in range(keys)]
        b = fold_bundle(AGGREGATE, groups, token=2, initializer_token=1, value_serde="json", aggregate_serde="json")
        fns = {1: lambda: {"n": 0}, 2: lambda k, v, a: {"n": a["n"] + v["amount"]}}
    ex = Executor(fns)
    ex.process(b)
    rounds = 20
    t0 = time.perf_counter()
    for _ in range(rounds):
        r = ex.process(b)
    per_value = (time.perf_counter() - t0) / rounds / n
    assert not r.failures and len(r.value_lengths) == n
    with capsys.disabled():
        print(f"\n  fold {kind}: {per_value * 1e6:.2f} µs/value (2,000 values, 100 keys)")
    assert per_value < 50e-6


def with_refs(b: pb.Bundle, records: Sequence[Any], refs: Sequence[int], value_serde: str = "long") -> pb.Bundle:
    """b with its values sent once per record and referred to by value_refs
    (a windowed fold, to a host with the fold_value_refs feature)."""
    data, lens = column(value_serde, list(records))
    b.values, b.value_lengths[:] = data, lens
    b.value_refs[:] = refs
    b.offsets[:] = list(range(len(records)))
    b.timestamps[:] = [0] * len(records)
    return b


def test_value_refs_decode_each_record_once_for_every_window_it_falls_into() -> None:
    decoded: list[str] = []
    # Two records, each in two windows (groups): ("a", w0) and ("a", w1).
    b = fold_bundle(AGGREGATE, [("a", NONE, [0, 0]), ("a", 10, [0, 0])], token=2, initializer_token=1, value_serde="json")
    b = with_refs(b, [{"n": 1}, {"n": 2}], [0, 1, 0, 1], value_serde="json")
    agg = Calls(lambda k, v, a: (decoded.append(repr(v)), a + v["n"])[1])
    r = run({1: lambda: 0, 2: agg}, b)
    assert outputs(r, "json") == [1, 3, 11, 13]
    assert list(r.output_counts) == [1, 1, 1, 1]
    # The same decoded object serves both windows of a record, as Kafka
    # Streams passes one value object to every window.
    assert agg.calls[0][1] is agg.calls[2][1]


def test_final_only_answers_each_groups_last_aggregate() -> None:
    b = fold_bundle(AGGREGATE, [("a", NONE, [1, 2, 3]), ("b", 100, [4])], token=2, initializer_token=1)
    b.final_only = True
    r = run({1: lambda: 0, 2: lambda k, v, a: a + v}, b)
    assert list(r.output_counts) == [0, 0, 1, 1]
    assert outputs(r) == [6, 104]


def test_final_only_with_a_failure_answers_per_value_and_names_it() -> None:
    def add(k: str, v: int, a: int) -> int:
        if v == 13:
            raise ValueError("unlucky")
        return a + v

    b = fold_bundle(AGGREGATE, [("a", NONE, [1, 13, 2])], token=2, initializer_token=1)
    b.final_only = True
    r = run({1: lambda: 0, 2: add}, b)
    assert failures_of(r) == [(1, 0, "ValueError: unlucky")]
    assert list(r.output_counts) == [1, 0, 1] and outputs(r) == [1, 3]


def test_final_only_none_midway_fails_that_value_as_the_per_value_path_does() -> None:
    # 2 -> None (fails), then the next value folds into the aggregate before it.
    b = fold_bundle(AGGREGATE, [("a", NONE, [1, 2, 3])], token=2, initializer_token=1)
    b.final_only = True
    r = run({1: lambda: 0, 2: lambda k, v, a: None if v == 2 else (a or 0) + v}, b)
    assert failures_of(r)[0][0] == 1
    assert outputs(r)[-1] == 4
