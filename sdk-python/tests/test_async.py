"""Async host functions (polystreams._aio): awaited together within a
bundle, results in record order, a raising awaitable failing its record
alone, and the same outcomes as the synchronous path."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from helpers import make_bundle, split_column
from test_fold import AGGREGATE, NONE, REDUCE, fold_bundle, outputs
from test_table_fold import NONE as NO_AGGREGATE
from test_table_fold import table_bundle

from polystreams._aio import is_async
from polystreams._bundle import Executor
from polystreams.v1alpha1 import engine_pb2 as pb

MAP_VALUES = pb.OPERATION_MAP_VALUES
FILTER = pb.OPERATION_FILTER
FLAT_MAP_VALUES = pb.OPERATION_FLAT_MAP_VALUES
MAP = pb.OPERATION_MAP
SELECT_KEY = pb.OPERATION_SELECT_KEY
PEEK = pb.OPERATION_PEEK
FOREACH = pb.OPERATION_FOREACH
VALUE_JOIN = pb.OPERATION_VALUE_JOIN

# A bounded wait in the functions below: a test whose awaitables are not
# run together waits this long, then fails (never hangs).
BOUND_S = 5.0


def run(functions: dict[int, Callable[..., Any]], b: pb.Bundle, **kw: Any) -> pb.BundleResult:
    ex = Executor(functions, **kw)
    try:
        return ex.process(b)
    finally:
        ex.close()


def values_of(r: pb.BundleResult, serde_name: str = "string") -> list[Any]:
    return split_column(r.values, r.value_lengths, serde_name)


def failures_of(r: pb.BundleResult) -> list[tuple[int, int, str]]:
    return [(f.index, f.step, f.message) for f in r.failures]


class Barrier:
    """Opens when n calls have started: a call waits for it (bounded), so
    n calls finish only if they run together. Not thread-safe: one loop."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.started = 0
        self.event: asyncio.Event | None = None

    async def wait(self) -> None:
        if self.event is None:
            self.event = asyncio.Event()
        self.started += 1
        if self.started == self.n:
            self.event.set()
        await asyncio.wait_for(self.event.wait(), BOUND_S)


def asynced(fn: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    """fn as an async def that yields to the loop before answering."""

    async def wrapper(*args: Any) -> Any:
        await asyncio.sleep(0)
        return fn(*args)

    return wrapper


def test_results_in_record_order_when_later_records_finish_first() -> None:
    finished: list[str] = []

    async def slow_first(v: str) -> str:
        await asyncio.sleep(0.01 * (5 - int(v)))  # record 0 sleeps longest
        finished.append(v)
        return f"v{v}"

    r = run({1: slow_first}, make_bundle([(MAP_VALUES, 1)], ["0", "1", "2", "3", "4"]))
    assert finished == ["4", "3", "2", "1", "0"]  # they did finish in reverse
    assert values_of(r) == ["v0", "v1", "v2", "v3", "v4"]
    assert list(r.output_counts) == [1] * 5 and not r.failures


def test_a_bundles_awaitables_run_together() -> None:
    n = 50
    barrier = Barrier(n)

    async def f(v: str) -> str:
        await barrier.wait()  # times out, failing the record, unless all n run at once
        return v.upper()

    r = run({1: f}, make_bundle([(MAP_VALUES, 1)], [f"r{i}" for i in range(n)]))
    assert failures_of(r) == []
    assert values_of(r) == [f"R{i}" for i in range(n)]


def test_an_exception_fails_its_own_record_only() -> None:
    async def f(v: str) -> str:
        await asyncio.sleep(0)
        if v == "bad":
            raise ValueError(f"cannot take {v}")
        return v + "!"

    r = run({1: f}, make_bundle([(MAP_VALUES, 1)], ["a", "bad", "c"]))
    assert list(r.output_counts) == [1, 0, 1]
    assert values_of(r) == ["a!", "c!"]
    assert failures_of(r) == [(1, 0, "ValueError: cannot take bad")]
    assert r.failures[0].kind == pb.RecordFailure.KIND_PROCESSING


def test_every_stream_step_awaits_and_steps_run_in_order() -> None:
    seen: list[tuple[str, str]] = []

    async def keep(k: str, v: str) -> bool:
        await asyncio.sleep(0)
        return v != "drop"

    async def split(v: str) -> list[str]:
        await asyncio.sleep(0)
        return v.split("-")

    async def pair(k: str, v: str) -> tuple[str, str]:
        await asyncio.sleep(0)
        return v, k

    async def key_of(k: str, v: str) -> str:
        return k.upper()

    async def peek(k: str, v: str) -> None:
        seen.append((k, v))

    steps = [(FILTER, 1), (FLAT_MAP_VALUES, 2), (MAP, 3), (SELECT_KEY, 4), (PEEK, 5)]
    fns = {1: keep, 2: split, 3: pair, 4: key_of, 5: peek}
    b = make_bundle(steps, ["a-b", "drop", "c"], keys=["k1", "k2", "k3"])
    r = run(fns, b)
    assert list(r.output_counts) == [2, 0, 1]
    assert split_column(r.keys, r.key_lengths, "string") == ["A", "B", "C"]
    assert values_of(r) == ["k1", "k1", "k3"]
    assert seen == [("A", "k1"), ("B", "k1"), ("C", "k3")]


def test_async_generators_for_flat_map_values_and_foreach() -> None:
    async def words(v: str) -> AsyncIterator[str]:
        for w in v.split():
            await asyncio.sleep(0)
            if w == "boom":
                raise RuntimeError("boom in the generator")
            yield w

    r = run({1: words}, make_bundle([(FLAT_MAP_VALUES, 1)], ["a b", "", "x boom", "c"]))
    assert list(r.output_counts) == [2, 0, 0, 1]
    assert values_of(r) == ["a", "b", "c"]
    assert failures_of(r) == [(2, 0, "RuntimeError: boom in the generator")]

    done: list[str] = []

    async def sink(k: str, v: str) -> None:
        await asyncio.sleep(0)
        if v == "bad":
            raise OSError("the sink refused bad")
        done.append(v)

    r = run({1: sink}, make_bundle([(FOREACH, 1)], ["a", "bad", "c"]))
    assert done == ["a", "c"]
    assert list(r.output_counts) == [0, 0, 0]
    assert failures_of(r) == [(1, 0, "OSError: the sink refused bad")]


def test_a_plain_function_returning_awaitables_is_awaited() -> None:
    async def fetch(v: str) -> str:
        await asyncio.sleep(0)
        return v * 2

    calls = 0

    def plain(v: str) -> Any:
        nonlocal calls
        calls += 1
        return fetch(v)

    ex = Executor({1: plain})
    r = ex.process(make_bundle([(MAP_VALUES, 1)], ["a", "b"]))
    assert values_of(r) == ["aa", "bb"] and calls == 2
    r = ex.process(make_bundle([(MAP_VALUES, 1)], ["c"], bundle_id=2))
    assert values_of(r) == ["cc"] and calls == 3
    ex.close()

    # A function async for some records only, once known to return awaitables.
    r = run({1: lambda v: fetch(v) if v.startswith("x") else v.upper()}, make_bundle([(MAP_VALUES, 1)], ["xa", "b", "xc"]))
    assert values_of(r) == ["xaxa", "B", "xcxc"]


def test_filter_with_a_plain_function_returning_awaitables() -> None:
    async def check(v: str) -> bool:
        return v.startswith("k")

    r = run({1: lambda k, v: check(v)}, make_bundle([(FILTER, 1)], ["keep", "drop", "kept"]))
    assert values_of(r) == ["keep", "kept"]
    assert list(r.output_counts) == [1, 0, 1]


def test_a_wait_past_the_bound_fails_its_record_naming_the_function() -> None:
    async def stuck(v: str) -> str:
        if v == "stuck":
            await asyncio.Event().wait()  # never set
        return v

    r = run({7: stuck}, make_bundle([(MAP_VALUES, 7)], ["a", "stuck", "b"]), async_timeout=0.2)
    assert values_of(r) == ["a", "b"]
    assert failures_of(r) == [
        (1, 0, f"TimeoutError: map_values function {stuck.__qualname__} (token 7, step 0, node NODE-0) "
               "did not finish within 0.2 s (cancelled)"),
    ]


def test_works_when_the_calling_thread_runs_an_event_loop() -> None:
    # e.g. app.run() called from inside a coroutine: the SDK's loop runs in
    # a thread of its own.
    barrier = Barrier(3)

    async def f(v: str) -> str:
        await barrier.wait()
        return v + "?"

    ex = Executor({1: f})

    async def main() -> pb.BundleResult:
        return ex.process(make_bundle([(MAP_VALUES, 1)], ["a", "b", "c"]))

    try:
        r = asyncio.run(main())
        assert values_of(r) == ["a?", "b?", "c?"] and not r.failures
    finally:
        ex.close()


def test_one_loop_per_executor_across_bundles() -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    async def f(v: str) -> str:
        loops.append(asyncio.get_running_loop())
        return v

    ex = Executor({1: f})
    for i in range(3):
        ex.process(make_bundle([(MAP_VALUES, 1)], ["a"], bundle_id=i))
    assert len(loops) == 3 and len(set(map(id, loops))) == 1
    ex.close()
    assert loops[0].is_closed()


def test_is_async_sees_through_partials_and_callable_objects() -> None:
    async def f(a: int, b: int) -> int:
        return a + b

    class Caller:
        async def __call__(self, v: int) -> int:
            return v

    assert is_async(f) and is_async(functools.partial(f, 1)) and is_async(Caller())
    assert not is_async(lambda v: v) and not is_async(str.upper)


def test_value_join_awaits_joiners_together() -> None:
    barrier = Barrier(3)

    async def joiner(v: str, t: str | None) -> str:
        await barrier.wait()
        if v == "bad":
            raise KeyError(v)
        return f"{v}+{t}"

    vals = ["a", "bad", "c"]
    b = make_bundle([(VALUE_JOIN, 1)], vals)
    from helpers import column

    b.other_value_serde = "string"
    b.other_values, lengths = column("string", ["x", None, "z"])
    b.other_value_lengths.extend(lengths)
    r = run({1: joiner}, b)
    assert values_of(r) == ["a+x", "c+z"]
    assert failures_of(r) == [(1, 0, "KeyError: 'bad'")]


# Folds: the groups of a bundle fold together, each group in order, with
# exactly the outcomes of the synchronous path.


def test_fold_groups_run_together_and_each_group_in_order() -> None:
    barrier = Barrier(3)  # the first value of each of 3 groups
    order: list[tuple[str, int]] = []

    async def add(k: str, v: int, agg: int) -> int:
        if v == 1:
            await barrier.wait()
        else:
            await asyncio.sleep(0.001 * v)
        order.append((k, v))
        return agg + v

    b = fold_bundle(AGGREGATE, [("a", NONE, [1, 5, 2]), ("b", 10, [1, 3]), ("c", NONE, [1])], token=2, initializer_token=1)
    r = run({1: lambda: 0, 2: add}, b)
    assert not r.failures
    assert outputs(r) == [1, 6, 8, 11, 14, 1]
    assert [v for k, v in order if k == "a"] == [1, 5, 2]


def reducer(a: int, v: int) -> Any:
    if v == 13:
        raise ValueError("unlucky")
    if v == 0:
        return None
    if v == 99:
        return "not a long"
    return a + v


def aggregator(k: str, v: int, a: int) -> Any:
    return reducer(a, v)


def initializer() -> int:
    return 100


def subtractor(a: int, old: int) -> Any:
    return None if old == 7 else a - old


def table_subtractor(k: str, old: int, a: int) -> Any:
    return subtractor(a, old)


GROUPS: list[tuple[Any, Any, list[Any]]] = [("a", NONE, [1, 13, 2]), ("b", 5, [0, 4, 99, 1]), ("c", NONE, [13, 3]), ("d", 9, [2])]
CHANGES: list[tuple[Any, Any, list[tuple[Any, Any]]]] = [
    ("a", 10, [(1, 2), (13, None), (None, 5)]),
    ("b", NO_AGGREGATE, [(4, None), (2, 7)]),
    ("c", 3, [(5, 7), (0, 1)]),
]


@pytest.mark.parametrize(
    "name,functions,bundle",
    [
        ("reduce", {1: reducer}, lambda: fold_bundle(REDUCE, GROUPS)),
        ("aggregate", {1: initializer, 2: aggregator}, lambda: fold_bundle(AGGREGATE, GROUPS, token=2, initializer_token=1)),
        ("table reduce", {1: reducer, 2: subtractor}, lambda: table_bundle(REDUCE, CHANGES)),
        (
            "table aggregate",
            {1: aggregator, 2: table_subtractor, 3: initializer},
            lambda: table_bundle(AGGREGATE, CHANGES, initializer_token=3),
        ),
    ],
)
@pytest.mark.parametrize("final_only", [False, True])
def test_async_folds_answer_as_sync_folds_do(
    name: str, functions: dict[int, Callable[..., Any]], bundle: Callable[[], pb.Bundle], final_only: bool
) -> None:
    b = bundle()
    b.final_only = final_only
    want = run(functions, b)
    assert want.failures, f"{name}: the case fails some values"
    for which in functions:  # each function async in turn, then all
        fns = {t: asynced(f) if t == which else f for t, f in functions.items()}
        assert run(fns, b) == want, f"{name}: token {which} async"
    assert run({t: asynced(f) for t, f in functions.items()}, b) == want, f"{name}: all async"


def test_a_plain_reducer_returning_awaitables_is_awaited() -> None:
    async def add(a: int, v: int) -> int:
        await asyncio.sleep(0)
        return a + v

    ex = Executor({1: lambda a, v: add(a, v)})
    r = ex.process(fold_bundle(REDUCE, [("a", NONE, [1, 2, 3]), ("b", 10, [5])]))
    assert outputs(r) == [1, 3, 6, 15] and not r.failures
    r = ex.process(fold_bundle(REDUCE, [("a", 6, [4])], bundle_id=2))
    assert outputs(r) == [10] and not r.failures
    ex.close()
