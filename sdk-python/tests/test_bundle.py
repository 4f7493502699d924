"""The host-side chain executor: columnar in, columnar out, one outcome per record."""

from __future__ import annotations

from typing import Any

from helpers import make_bundle, split_column

from polystreams._bundle import Executor
from polystreams._operations import (
    FILTER,
    FILTER_NOT,
    FLAT_MAP_VALUES,
    FOREACH,
    MAP,
    MAP_VALUES,
    PEEK,
    SELECT_KEY,
)
from polystreams.v1alpha1 import engine_pb2 as pb


def run(functions: dict[int, Any], bundle: pb.Bundle) -> pb.BundleResult:
    return Executor(functions).process(bundle)


def values_of(r: pb.BundleResult, serde_name: str = "string") -> list[Any]:
    return split_column(r.values, r.value_lengths, serde_name)


def keys_of(r: pb.BundleResult, serde_name: str = "string") -> list[Any]:
    return split_column(r.keys, r.key_lengths, serde_name)


def failures_of(r: pb.BundleResult) -> list[tuple[int, int, str]]:
    return [(f.index, f.step, f.message) for f in r.failures]


def test_map_values_one_output_per_record_and_no_keys() -> None:
    r = run({1: str.upper}, make_bundle([(MAP_VALUES, 1)], ["a", "bc", "", "d"], keys=["k1", None, "k3", "k4"], bundle_id=42))
    assert r.bundle_id == 42
    assert list(r.output_counts) == [1, 1, 1, 1]
    assert values_of(r) == ["A", "BC", "", "D"]
    # Keys are unchanged: the key columns stay empty.
    assert list(r.key_lengths) == [] and r.keys == b""
    assert not r.failures


def test_null_values_reach_the_function_as_none() -> None:
    r = run({1: lambda v: "null" if v is None else v}, make_bundle([(MAP_VALUES, 1)], ["a", None]))
    assert values_of(r) == ["a", "null"]
    r = run({1: lambda v: None}, make_bundle([(MAP_VALUES, 1)], ["a"]))
    assert list(r.value_lengths) == [-1] and list(r.output_counts) == [1]


def test_flat_map_values_many_outputs_in_record_order() -> None:
    r = run({1: str.split}, make_bundle([(FLAT_MAP_VALUES, 1)], ["a b c", "", "d", "e f"]))
    assert list(r.output_counts) == [3, 0, 1, 2]
    assert values_of(r) == ["a", "b", "c", "d", "e", "f"]
    assert list(r.key_lengths) == []


def test_flat_map_values_accepts_generators_and_rejects_a_bare_string() -> None:
    def gen(v: str) -> Any:
        yield from v

    r = run({1: gen}, make_bundle([(FLAT_MAP_VALUES, 1)], ["ab", "c"]))
    assert values_of(r) == ["a", "b", "c"]
    r = run({1: lambda v: v}, make_bundle([(FLAT_MAP_VALUES, 1)], ["ab"]))
    assert list(r.output_counts) == [0]
    assert failures_of(r) == [(0, 0, "TypeError: flat_map_values must return an iterable of values, not str")]


def test_filter_keeps_true_filter_not_keeps_false() -> None:
    b = make_bundle([(FILTER, 1)], ["1", "22", "333", "4444"], keys=["a", "b", "c", "d"])
    r = run({1: lambda k, v: len(v) % 2 == 0}, b)
    assert list(r.output_counts) == [0, 1, 0, 1]
    assert values_of(r) == ["22", "4444"]
    b = make_bundle([(FILTER_NOT, 1)], ["1", "22", "333", "4444"], keys=["a", "b", "c", "d"])
    r = run({1: lambda k, v: len(v) % 2 == 0}, b)
    assert list(r.output_counts) == [1, 0, 1, 0]
    assert values_of(r) == ["1", "333"]


def test_filter_sees_keys() -> None:
    r = run({1: lambda k, v: k == "keep"}, make_bundle([(FILTER, 1)], ["x", "y"], keys=["keep", "drop"]))
    assert list(r.output_counts) == [1, 0]


def test_filter_that_keeps_nothing() -> None:
    r = run({1: lambda k, v: False, 2: str.upper}, make_bundle([(FILTER, 1), (MAP_VALUES, 2)], ["a", "b"]))
    assert list(r.output_counts) == [0, 0]
    assert list(r.value_lengths) == [] and r.values == b""
    assert not r.failures


def test_empty_bundle() -> None:
    r = run({1: str.upper}, make_bundle([(MAP_VALUES, 1)], []))
    assert list(r.output_counts) == [] and not r.failures


def test_keys_only_when_the_chain_changes_them() -> None:
    # select_key
    r = run({1: lambda k, v: v[0]}, make_bundle([(SELECT_KEY, 1)], ["apple", "banana"], keys=[None, "old"]))
    assert keys_of(r) == ["a", "b"]
    assert values_of(r) == ["apple", "banana"]
    # map, with a new value serde
    b = make_bundle([(MAP, 1)], ["apple", "kiwi"], keys=["x", "y"], output_value_serde="long")
    r = run({1: lambda k, v: (v.upper(), len(v))}, b)
    assert keys_of(r) == ["APPLE", "KIWI"]
    assert values_of(r, "long") == [5, 4]
    # flat_map then select_key: one key per output
    b = make_bundle([(FLAT_MAP_VALUES, 1), (SELECT_KEY, 2)], ["a b", "c"], keys=["k", "k"])
    r = run({1: str.split, 2: lambda k, w: w + "!"}, b)
    assert list(r.output_counts) == [2, 1]
    assert keys_of(r) == ["a!", "b!", "c!"]
    assert len(r.key_lengths) == len(r.value_lengths) == 3
    # peek reads keys but does not change them
    seen: list[tuple[Any, Any]] = []
    r = run({1: lambda k, v: seen.append((k, v))}, make_bundle([(PEEK, 1)], ["v"], keys=["k"]))
    assert seen == [("k", "v")] and values_of(r) == ["v"] and list(r.key_lengths) == []


def test_chain_outputs_of_step_n_feed_step_n_plus_1() -> None:
    steps = [(FLAT_MAP_VALUES, 1), (FILTER_NOT, 2), (MAP_VALUES, 3), (SELECT_KEY, 4)]
    fns = {1: str.split, 2: lambda k, v: v == "the", 3: str.upper, 4: lambda k, v: v.lower()}
    r = run(fns, make_bundle(steps, ["the cat", "the the", "a dog"], keys=["1", "2", "3"]))
    assert list(r.output_counts) == [1, 0, 2]
    assert values_of(r) == ["CAT", "A", "DOG"]
    assert keys_of(r) == ["cat", "a", "dog"]


def test_foreach_passes_nothing() -> None:
    seen: list[Any] = []
    r = run({1: lambda k, v: seen.append(v)}, make_bundle([(FOREACH, 1)], ["a", "b"]))
    assert seen == ["a", "b"]
    assert list(r.output_counts) == [0, 0] and list(r.value_lengths) == []


def test_a_raising_function_fails_its_record_only() -> None:
    calls: list[str] = []

    def parse(v: str) -> int:
        calls.append(v)
        return int(v)

    b = make_bundle([(MAP_VALUES, 1)], ["1", "x", "3", "y"], output_value_serde="long")
    r = run({1: parse}, b)
    assert calls == ["1", "x", "3", "y"]  # each called once, even around failures
    assert list(r.output_counts) == [1, 0, 1, 0]
    assert values_of(r, "long") == [1, 3]
    assert failures_of(r) == [
        (1, 0, "ValueError: invalid literal for int() with base 10: 'x'"),
        (3, 0, "ValueError: invalid literal for int() with base 10: 'y'"),
    ]


def test_failure_names_the_step_index() -> None:
    def boom(k: Any, v: str) -> bool:
        if v == "b":
            raise RuntimeError("no b")
        return True

    b = make_bundle([(MAP_VALUES, 1), (FILTER, 2)], ["a", "b"])
    r = run({1: lambda v: v, 2: boom}, b)
    assert failures_of(r) == [(1, 1, "RuntimeError: no b")]
    assert list(r.output_counts) == [1, 0]


def test_a_record_fails_whole_even_when_some_of_its_flat_mapped_outputs_succeed() -> None:
    def check(v: str) -> str:
        if v == "bad":
            raise ValueError("bad word")
        return v

    b = make_bundle([(FLAT_MAP_VALUES, 1), (MAP_VALUES, 2)], ["ok fine", "good bad good", "x"])
    r = run({1: str.split, 2: check}, b)
    assert list(r.output_counts) == [2, 0, 1]
    assert values_of(r) == ["ok", "fine", "x"]
    assert failures_of(r) == [(1, 1, "ValueError: bad word")]


def test_filter_failure_and_flat_map_failure() -> None:
    def pred(k: Any, v: str) -> bool:
        if v == "?":
            raise KeyError(v)
        return v != "drop"

    r = run({1: pred}, make_bundle([(FILTER, 1)], ["a", "?", "drop", "b"]))
    assert list(r.output_counts) == [1, 0, 0, 1]
    assert failures_of(r) == [(1, 0, "KeyError: '?'")]

    def explode(v: str) -> list[str]:
        if v == "!":
            raise ZeroDivisionError("division by zero")
        return [v, v]

    r = run({1: explode}, make_bundle([(FLAT_MAP_VALUES, 1)], ["a", "!"]))
    assert list(r.output_counts) == [2, 0]
    assert failures_of(r) == [(1, 0, "ZeroDivisionError: division by zero")]


def test_map_must_return_a_pair() -> None:
    r = run({1: lambda k, v: (k, v) if v != "bad" else v}, make_bundle([(MAP, 1)], ["good", "bad"], keys=["a", "b"]))
    assert list(r.output_counts) == [1, 0]
    assert keys_of(r) == ["a"] and values_of(r) == ["good"]
    assert failures_of(r) == [(1, 0, "TypeError: map must return a (key, value) pair, not str")]


def test_encode_failure_fails_the_record_at_the_last_step_never_substitutes() -> None:
    b = make_bundle([(MAP_VALUES, 1), (MAP_VALUES, 2)], ["1", "x", "2"], output_value_serde="long")
    r = run({1: lambda v: v, 2: lambda v: int(v) if v.isdigit() else v}, b)
    assert list(r.output_counts) == [1, 0, 1]
    assert values_of(r, "long") == [1, 2]
    assert failures_of(r) == [(1, 1, "TypeError: long serde: want int, got str")]


def test_key_encode_failure() -> None:
    b = make_bundle([(SELECT_KEY, 1)], ["a", "b"], keys=["k", "k"])
    r = run({1: lambda k, v: v if v == "a" else 7}, b)
    assert list(r.output_counts) == [1, 0]
    assert keys_of(r) == ["a"]
    assert failures_of(r) == [(1, 0, "TypeError: string serde: want str, got int")]


def test_decode_failure_fails_the_record_at_step_0() -> None:
    b = make_bundle([(MAP_VALUES, 1)], [b"ok", b"\xff"], value_serde="bytes", output_value_serde="bytes")
    b.value_serde = b.output_value_serde = "string"
    r = run({1: str.upper}, b)
    assert list(r.output_counts) == [1, 0]
    assert r.values == b"OK"
    assert len(r.failures) == 1 and r.failures[0].index == 1 and r.failures[0].step == 0
    assert r.failures[0].message.startswith("UnicodeDecodeError")
    # The engine applies default.deserialization.exception.handler to it.
    assert r.failures[0].kind == pb.RecordFailure.KIND_DESERIALIZATION


def test_failures_say_whether_the_record_did_not_decode_or_the_function_raised() -> None:
    b = make_bundle([(MAP_VALUES, 1)], [b"1", b"\xff", b"x"], value_serde="bytes", output_value_serde="bytes")
    b.value_serde = b.output_value_serde = "string"
    r = run({1: lambda v: str(int(v))}, b)
    assert list(r.output_counts) == [1, 0, 0]
    assert [(f.index, f.kind) for f in r.failures] == [
        (1, pb.RecordFailure.KIND_DESERIALIZATION),
        (2, pb.RecordFailure.KIND_PROCESSING),
    ]


def test_json_values_and_serde_change() -> None:
    b = make_bundle([(MAP_VALUES, 1)], [{"n": 1}, {"n": 2}], value_serde="json", output_value_serde="double")
    r = run({1: lambda v: v["n"] / 2}, b)
    assert values_of(r, "double") == [0.5, 1.0]


def test_unregistered_token_fails_every_record_with_a_clear_message() -> None:
    r = run({}, make_bundle([(MAP_VALUES, 9)], ["a", "b"]))
    assert list(r.output_counts) == [0, 0]
    assert [f.index for f in r.failures] == [0, 1]
    assert "token 9" in r.failures[0].message and "NODE-0" in r.failures[0].message


def test_compiled_chains_are_cached_per_shape() -> None:
    ex = Executor({1: str.upper})
    ex.process(make_bundle([(MAP_VALUES, 1)], ["a"]))
    ex.process(make_bundle([(MAP_VALUES, 1)], ["b"], bundle_id=2))
    ex.process(make_bundle([(MAP_VALUES, 1)], ["b"], output_value_serde="json", bundle_id=3))
    assert len(ex._chains) == 2


def test_large_bundle_round_trip() -> None:
    values = [f"line {i} with some words" for i in range(5000)]
    r = run({1: str.split}, make_bundle([(FLAT_MAP_VALUES, 1)], values))
    assert list(r.output_counts) == [5] * 5000
    assert values_of(r)[:5] == ["line", "0", "with", "some", "words"]


FLAT_MAP = pb.OPERATION_FLAT_MAP
MAP_VALUES_WITH_KEY = pb.OPERATION_MAP_VALUES_WITH_KEY
FLAT_MAP_VALUES_WITH_KEY = pb.OPERATION_FLAT_MAP_VALUES_WITH_KEY


def test_flat_map_pairs_in_record_order_with_a_key_column() -> None:
    r = run({1: lambda k, v: [(w, k) for w in v.split()]}, make_bundle([(FLAT_MAP, 1)], ["a b", "", "c"], keys=["k1", "k2", None]))
    assert list(r.output_counts) == [2, 0, 1]
    assert keys_of(r) == ["a", "b", "c"]
    assert values_of(r) == ["k1", "k1", None]
    assert not r.failures


def test_flat_map_fails_a_record_whose_result_is_no_iterable_of_pairs() -> None:
    fns = {1: lambda k, v: "ab" if v == "s" else [(k, v), v] if v == "x" else [(v, k)]}
    r = run(fns, make_bundle([(FLAT_MAP, 1)], ["s", "x", "y"], keys=["k1", "k2", "k3"]))
    assert list(r.output_counts) == [0, 0, 1]
    assert keys_of(r) == ["y"] and values_of(r) == ["k3"]
    assert failures_of(r) == [
        (0, 0, "TypeError: flat_map must return an iterable of (key, value) pairs, not str"),
        (1, 0, "TypeError: flat_map must return (key, value) pairs, not str"),
    ]


def test_with_key_mappers_read_the_key_and_keep_it() -> None:
    r = run({1: lambda k, v: f"{k}:{v}"}, make_bundle([(MAP_VALUES_WITH_KEY, 1)], ["a", "b"], keys=["k1", None]))
    assert values_of(r) == ["k1:a", "None:b"]
    assert list(r.key_lengths) == []
    r = run({1: lambda k, v: [k, v]}, make_bundle([(FLAT_MAP_VALUES_WITH_KEY, 1)], ["a"], keys=["k1"]))
    assert list(r.output_counts) == [2] and values_of(r) == ["k1", "a"]
    assert list(r.key_lengths) == []
