"""The host side of stream-table joins (OPERATION_VALUE_JOIN bundles)."""

from __future__ import annotations

from typing import Any

from helpers import column, split_column

from polystreams._bundle import Executor
from polystreams.v1alpha1 import engine_pb2 as pb


def join_bundle(values: list[Any], others: list[Any], *, token: int = 1, out: str = "json") -> pb.Bundle:
    vdata, vlens = column("json", values)
    odata, olens = column("string", others)
    return pb.Bundle(
        id=3,
        steps=[pb.Step(token=token, operation=pb.OPERATION_VALUE_JOIN, node="KSTREAM-JOIN-0000000004")],
        key_serde="string",
        value_serde="json",
        output_key_serde="string",
        output_value_serde=out,
        key_lengths=[-1] * len(values),
        value_lengths=vlens,
        values=vdata,
        other_value_lengths=olens,
        other_values=odata,
        other_value_serde="string",
        topic="orders",
        offsets=list(range(len(values))),
        timestamps=[0] * len(values),
    )


def test_joiner_sees_value_and_table_value_none_for_a_left_join_miss() -> None:
    calls: list[tuple[Any, Any]] = []

    def joiner(v: Any, name: Any) -> Any:
        calls.append((v, name))
        return {"order": v["id"], "customer": name}

    r = Executor({1: joiner}).process(join_bundle([{"id": 1}, {"id": 2}], ["ann", None]))
    assert list(r.output_counts) == [1, 1] and not r.failures
    assert split_column(r.values, r.value_lengths, "json") == [{"order": 1, "customer": "ann"}, {"order": 2, "customer": None}]
    assert calls == [({"id": 1}, "ann"), ({"id": 2}, None)]


def test_a_raising_joiner_fails_its_record_alone_and_none_is_a_null_value() -> None:
    def joiner(v: Any, name: Any) -> Any:
        if v["id"] == 2:
            raise KeyError("no")
        return None if v["id"] == 3 else name

    r = Executor({1: joiner}).process(join_bundle([{"id": 1}, {"id": 2}, {"id": 3}], ["a", "b", "c"], out="string"))
    assert list(r.output_counts) == [1, 0, 1]
    assert list(r.value_lengths) == [1, -1]
    assert [(f.index, f.message, f.kind) for f in r.failures] == [(1, "KeyError: 'no'", pb.RecordFailure.KIND_PROCESSING)]


def test_unregistered_joiner_and_malformed_bundles_fail_every_record() -> None:
    r = Executor({}).process(join_bundle([{"id": 1}], ["a"], token=9))
    assert list(r.output_counts) == [0] and "token 9" in r.failures[0].message
    b = join_bundle([{"id": 1}, {"id": 2}], ["a", "b"])
    del b.other_value_lengths[1:]
    r = Executor({1: lambda v, o: v}).process(b)
    assert list(r.output_counts) == [0, 0] and "1 table values for 2 records" in r.failures[0].message


def test_a_stream_stream_outer_join_bundle_gives_none_for_either_absent_side() -> None:
    # An outer join's unjoined records: the left value absent (length -1)
    # for a right-only record, the right value absent for a left-only one.
    b = join_bundle([{"id": 1}, None, {"id": 3}], ["r1", "r2", None], out="string")
    b.steps[0].node = "KSTREAM-OUTERTHIS-0000000004"
    calls: list[tuple[Any, Any]] = []

    def joiner(v: Any, other: Any) -> Any:
        calls.append((v, other))
        return f"{v and v['id']}|{other}"

    r = Executor({1: joiner}).process(b)
    assert list(r.output_counts) == [1, 1, 1] and not r.failures
    assert calls == [({"id": 1}, "r1"), (None, "r2"), ({"id": 3}, None)]
    assert split_column(r.values, r.value_lengths, "string") == ["1|r1", "None|r2", "3|None"]
