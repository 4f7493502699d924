"""The host side of the data plane: runs a bundle through its chain of steps.

This is the hot path. A bundle is processed a column at a time: values (and
keys, when a step reads them) are decoded once, each step maps the whole
column with one C-level ``map`` over the user's function, and the outputs
are encoded once. A record whose function raises fails alone: its outputs are
dropped and a RecordFailure names it; the rest of the bundle goes on.

Within a bundle, the elements in flight are kept as three parallel lists:
``vals`` (and ``keys`` when needed) and ``origin``, the index of the input
record each element came from (None while it is the identity, i.e. before
any filter or flat_map changed the count).

A fold bundle (one reduce or aggregate step) is laid out by key instead and
runs in ``_Fold``: see there. Aggregations over time windows need nothing
more: their groups are (key, window) pairs whose key is the grouped key;
session and sliding windows come as fold programs (``_Fold._program``).
"""

from __future__ import annotations

import operator
from collections.abc import AsyncIterable, Callable, Iterable, Mapping
from collections import Counter
from itertools import chain, compress, repeat
from typing import Any

from polystreams._extract import run_extract
from polystreams._aio import Failed, Loop, function_name, is_async, is_awaitable
from polystreams._metadata import MetadataChain, wants_metadata
from polystreams._operations import (
    AGGREGATE,
    CHANGES_KEY,
    DESERIALIZATION,
    FILTER,
    FILTER_NOT,
    FLAT_MAP,
    FLAT_MAP_VALUES,
    FLAT_MAP_VALUES_WITH_KEY,
    FOREACH,
    MAP,
    MAP_VALUES,
    MAP_VALUES_WITH_KEY,
    PEEK,
    PROCESSING,
    REDUCE,
    SELECT_KEY,
    VALUE_JOIN,
)
from polystreams._processor import ProcessorHost, ReadFn, is_processor_bundle, read_headers
from polystreams._route import ROUTES, Route
from polystreams.processor import RecordMetadata, StoreBuilder, metadata_of, unwrap
from polystreams.serde import decode, decode_column, encode, encode_column, encoder
from polystreams.v1alpha1 import engine_pb2 as pb

__all__ = ["Executor"]

Fn = Callable[..., Any]

_FOLDS = frozenset({REDUCE, AGGREGATE})

_READS_KEY = frozenset(
    {FILTER, FILTER_NOT, MAP, SELECT_KEY, PEEK, FOREACH, FLAT_MAP, MAP_VALUES_WITH_KEY, FLAT_MAP_VALUES_WITH_KEY}
)

_FAILED: Any = object()  # marks an element whose function raised
_SEQUENCES = frozenset({list, tuple})  # flat_map_values results used as they are


def _text(e: BaseException) -> str:
    if type(e) is _Raised:
        return str(e)  # the message of what an awaitable raised, as it is
    return f"{type(e).__name__}: {e}"


class _Raised(Exception):
    """An awaitable raised (or timed out): its message, already in the form
    of a failure's."""


class _Column:
    """The elements of a bundle in flight between steps."""

    __slots__ = ("n", "origin", "keys", "vals", "failed")

    def __init__(self, n: int, keys: list[Any] | None, vals: list[Any], failed: dict[int, tuple[int, str]]) -> None:
        self.n = n  # records in the bundle
        self.origin: list[int] | None = None  # None: element j is record j
        self.keys = keys
        self.vals = vals
        self.failed = failed  # record index -> (step, error text); first failure wins

    def origins(self) -> list[int]:
        if self.origin is None:
            self.origin = list(range(len(self.vals)))
        return self.origin

    def fail(self, positions: Mapping[int, str], step: int) -> None:
        """Fails the records of the elements at positions, and drops every
        element of those records (a record's outputs are all or nothing)."""
        origin = self.origins()
        failed = self.failed
        for j, msg in positions.items():
            i = origin[j]
            if i not in failed:
                failed[i] = (step, msg)
        self.drop_failed()

    def drop_failed(self) -> None:
        failed = self.failed
        if not failed:
            return
        origin = self.origins()
        keep = [i not in failed for i in origin]
        self.origin = list(compress(origin, keep))
        self.vals = list(compress(self.vals, keep))
        if self.keys is not None:
            self.keys = list(compress(self.keys, keep))


def _map_all(
    fn: Fn, *columns: list[Any], post: Callable[[Any], Any] | None = None, probe: bool = False
) -> tuple[list[Any], dict[int, str], bool]:
    """[post(fn(*args)) for args in zip(*columns)], in C, resuming after a raise.

    A failed element holds _FAILED; failures maps its position to the error.
    No function is called twice for one element. With probe, the first
    element's result is looked at alone: when it is an awaitable, no result
    is passed through post and the third value answered is True (the
    caller awaits them).
    """
    out: list[Any] = []
    failures: dict[int, str] = {}
    its = [iter(c) for c in columns]
    awaits = False
    if probe and columns and len(columns[0]) > 0:
        args = [next(it) for it in its]
        try:
            r = fn(*args)
            if is_awaitable(r):
                awaits, post = True, None
            elif post is not None:
                r = post(r)
            out.append(r)
        except Exception as e:
            failures[0] = _text(e)
            out.append(_FAILED)
    while True:
        try:
            if post is None:
                out.extend(map(fn, *its))
            else:
                out.extend(map(post, map(fn, *its)))
            return out, failures, awaits
        except Exception as e:
            # map had taken the failing element's arguments before calling.
            failures[len(out)] = _text(e)
            out.append(_FAILED)


class _Fn:
    """A step's user function as its step calls it: for every element,
    awaiting the awaitables it returns together (see _aio).

    ``awaits``: every result is checked for an awaitable. Set for an
    ``async def`` (by its type) and, from then on, for a function whose
    result for a bundle's first element was an awaitable; otherwise only
    that first result is looked at, so a synchronous function pays nothing
    per record."""

    __slots__ = ("fn", "awaits", "loop", "op", "token", "step", "node")

    def __init__(self, fn: Fn, loop: Loop, op: str, token: int, step: int, node: str) -> None:
        self.fn = fn
        self.awaits = is_async(fn)
        self.loop = loop
        self.op, self.token, self.step, self.node = op, token, step, node

    def what(self) -> str:
        return f"{self.op} function {function_name(self.fn)} (token {self.token}, step {self.step}, node {self.node})"

    def map_all(self, *columns: list[Any], post: Callable[[Any], Any] | None = None) -> tuple[list[Any], dict[int, str]]:
        """_map_all of the function, with its awaitables awaited (in record
        order; an awaitable that raises fails its element)."""
        if not self.awaits:
            out, failures, awaits = _map_all(self.fn, *columns, post=post, probe=True)
            if not awaits:
                return out, failures
            self.awaits = True
        else:
            out, failures, _ = _map_all(self.fn, *columns)
        pending = [j for j, r in enumerate(out) if r is not _FAILED and is_awaitable(r)]
        if pending:
            for j, r in zip(pending, self.loop.gather([out[j] for j in pending], self.what)):
                if type(r) is Failed:
                    failures[j] = r.message
                    out[j] = _FAILED
                else:
                    out[j] = r
        if post is not None:
            for j, r in enumerate(out):
                if r is not _FAILED:
                    try:
                        out[j] = post(r)
                    except Exception as e:
                        failures[j] = _text(e)
                        out[j] = _FAILED
        return out, failures

    def collect(self, iterables: dict[int, Any]) -> dict[int, list[Any] | Failed]:
        """The values of async iterables (an async generator's), each
        collected to a list; a Failed for one that raised."""
        keys = list(iterables)
        got = self.loop.gather([_collect(iterables[j]) for j in keys], self.what)
        return dict(zip(keys, got))


async def _collect(it: AsyncIterable[Any]) -> list[Any]:
    return [x async for x in it]


def _step_map_values(col: _Column, f: _Fn, step: int) -> None:
    vals, failures = f.map_all(col.vals)
    col.vals = vals
    if failures:
        col.fail(failures, step)


def _step_map_values_with_key(col: _Column, f: _Fn, step: int) -> None:
    assert col.keys is not None
    vals, failures = f.map_all(col.keys, col.vals)
    col.vals = vals
    if failures:
        col.fail(failures, step)


def _step_filter(col: _Column, f: _Fn, step: int, negate: bool) -> None:
    keys = col.keys
    assert keys is not None
    mask, failures = f.map_all(keys, col.vals, post=operator.not_ if negate else operator.truth)
    if failures:
        origin = col.origins()
        for j, msg in failures.items():
            mask[j] = False
            col.failed.setdefault(origin[j], (step, msg))
    elif all(mask):
        return
    col.origin = list(compress(col.origins(), mask))
    col.vals = list(compress(col.vals, mask))
    col.keys = list(compress(keys, mask))
    if failures:
        col.drop_failed()


def _flatten(col: _Column, f: _Fn, results: list[Any], failures: dict[int, str], step: int, what: str, items: str) -> list[int]:
    """Makes every result of a flat step a sequence, failing the records whose
    result is not iterable (or whose call raised, in failures); returns the
    number of outputs per element."""
    if failures or not set(map(type, results)) <= _SEQUENCES:
        # Some call raised or returned a generator (or a mistake): make every
        # result a list, failing the records whose result is not iterable.
        # Async iterables (an async generator function's) are collected on
        # the loop, together.
        aiters = {j: r for j, r in enumerate(results) if j not in failures and hasattr(r, "__aiter__")}
        if aiters:
            for j, got in f.collect(aiters).items():
                if type(got) is Failed:
                    failures[j] = got.message
                else:
                    results[j] = got
        for j, r in enumerate(results):
            if j in failures:
                results[j] = ()
            elif type(r) not in _SEQUENCES:
                try:
                    if isinstance(r, (str, bytes)):
                        raise TypeError(f"{what} must return an iterable of {items}, not {type(r).__name__}")
                    results[j] = list(r)
                except Exception as e:
                    failures[j] = _text(e)
                    results[j] = ()
    if failures:
        origin = col.origins()
        for j, msg in failures.items():
            col.failed.setdefault(origin[j], (step, msg))
    counts = list(map(len, results))
    origin_in: Iterable[int] = col.origin if col.origin is not None else range(len(results))
    col.origin = list(chain.from_iterable(map(repeat, origin_in, counts)))  # type: ignore[arg-type]
    return counts


def _step_flat_map_values(col: _Column, f: _Fn, step: int, with_key: bool = False) -> None:
    if with_key:
        assert col.keys is not None
        results, failures = f.map_all(col.keys, col.vals)
    else:
        results, failures = f.map_all(col.vals)
    counts = _flatten(col, f, results, failures, step, "flat_map_values", "values")
    col.vals = list(chain.from_iterable(results))
    if col.keys is not None:
        col.keys = list(chain.from_iterable(map(repeat, col.keys, counts)))
    if failures:
        col.drop_failed()


def _step_flat_map(col: _Column, f: _Fn, step: int) -> None:
    assert col.keys is not None
    results, failures = f.map_all(col.keys, col.vals)
    _flatten(col, f, results, failures, step, "flat_map", "(key, value) pairs")
    origin = col.origins()
    keys: list[Any] = []
    vals: list[Any] = []
    bad: dict[int, str] = {}
    for pairs in results:
        for p in pairs:
            try:
                k, v = p
            except (TypeError, ValueError):
                bad[len(keys)] = f"TypeError: flat_map must return (key, value) pairs, not {type(p).__name__}"
                k = v = None
            keys.append(k)
            vals.append(v)
    col.keys, col.vals = keys, vals
    for j, msg in bad.items():
        col.failed.setdefault(origin[j], (step, msg))
    if failures or bad:
        col.drop_failed()


def _step_map(col: _Column, f: _Fn, step: int) -> None:
    keys = col.keys
    assert keys is not None
    pairs, failures = f.map_all(keys, col.vals)
    if not failures:
        try:
            col.keys = [k for k, _ in pairs]
            col.vals = [v for _, v in pairs]
            return
        except (TypeError, ValueError):
            pass  # some result is not a (key, value) pair: find which below
    new_keys: list[Any] = []
    new_vals: list[Any] = []
    for j, p in enumerate(pairs):
        if j in failures:
            k = v = None
        else:
            try:
                k, v = p
            except (TypeError, ValueError):
                failures[j] = f"TypeError: map must return a (key, value) pair, not {type(p).__name__}"
                k = v = None
        new_keys.append(k)
        new_vals.append(v)
    col.keys, col.vals = new_keys, new_vals
    col.fail(failures, step)


def _step_select_key(col: _Column, f: _Fn, step: int) -> None:
    assert col.keys is not None
    keys, failures = f.map_all(col.keys, col.vals)
    col.keys = keys
    if failures:
        col.fail(failures, step)


def _step_peek(col: _Column, f: _Fn, step: int) -> None:
    assert col.keys is not None
    _, failures = f.map_all(col.keys, col.vals)
    if failures:
        col.fail(failures, step)


def _step_foreach(col: _Column, f: _Fn, step: int) -> None:
    _step_peek(col, f, step)
    col.origin = []
    col.vals = []
    if col.keys is not None:
        col.keys = []


_OP_NAMES = {
    MAP_VALUES: "map_values",
    FILTER: "filter",
    FILTER_NOT: "filter_not",
    FLAT_MAP_VALUES: "flat_map_values",
    MAP: "map",
    SELECT_KEY: "select_key",
    PEEK: "peek",
    FOREACH: "foreach",
    REDUCE: "reduce",
    AGGREGATE: "aggregate",
    VALUE_JOIN: "value_join",
    FLAT_MAP: "flat_map",
    MAP_VALUES_WITH_KEY: "map_values_with_key",
    FLAT_MAP_VALUES_WITH_KEY: "flat_map_values_with_key",
}

_STEPS: dict[int, Callable[[_Column, _Fn, int], None]] = {
    MAP_VALUES: _step_map_values,
    FILTER: lambda col, fn, step: _step_filter(col, fn, step, False),
    FILTER_NOT: lambda col, fn, step: _step_filter(col, fn, step, True),
    FLAT_MAP_VALUES: _step_flat_map_values,
    MAP: _step_map,
    SELECT_KEY: _step_select_key,
    PEEK: _step_peek,
    FOREACH: _step_foreach,
    FLAT_MAP: _step_flat_map,
    MAP_VALUES_WITH_KEY: _step_map_values_with_key,
    FLAT_MAP_VALUES_WITH_KEY: lambda col, fn, step: _step_flat_map_values(col, fn, step, True),
}


class _Chain:
    """A compiled chain: the steps of a bundle with their functions resolved
    and what the chain needs (decoded keys? output keys?) worked out once."""

    __slots__ = ("steps", "key_serde", "value_serde", "out_key_serde", "out_value_serde", "reads_keys", "changes_keys", "broken")

    def __init__(self, bundle: pb.Bundle, functions: Mapping[int, Fn], loop: Loop) -> None:
        self.steps: list[tuple[Callable[[_Column, _Fn, int], None], _Fn, int]] = []
        self.broken: tuple[int, str] | None = None  # (step, error): fails every record
        ops = []
        for s, st in enumerate(bundle.steps):
            op, token = st.operation, st.token
            ops.append(op)
            run = _STEPS.get(op)
            fn = functions.get(token)
            if run is None:
                if op in _FOLDS:
                    msg = f"ValueError: step {s} ({st.node}) is a reduce or aggregate, which must be its bundle's only step"
                else:
                    msg = f"ValueError: step {s} ({st.node}) has operation {op}, which this host does not know"
                self.broken = self.broken or (s, msg)
                continue
            if fn is None:
                self.broken = self.broken or (s, f"LookupError: step {s} ({st.node}) names token {token}, which is not registered in this host")
                continue
            self.steps.append((run, _Fn(fn, loop, _OP_NAMES[op], token, s, st.node), s))
        self.key_serde = bundle.key_serde
        self.value_serde = bundle.value_serde
        self.out_key_serde = bundle.output_key_serde or bundle.key_serde
        self.out_value_serde = bundle.output_value_serde or bundle.value_serde
        self.reads_keys = any(op in _READS_KEY for op in ops)
        self.changes_keys = any(op in CHANGES_KEY for op in ops)

    def run(self, b: pb.Bundle) -> pb.BundleResult:
        value_lengths = list(b.value_lengths)
        n = len(value_lengths)
        result = pb.BundleResult(bundle_id=b.id)
        if self.broken is not None:
            result.output_counts.extend([0] * n)
            step, msg = self.broken
            result.failures.extend(pb.RecordFailure(index=i, step=step, message=msg, kind=PROCESSING) for i in range(n))
            return result

        failed: dict[int, tuple[int, str]] = {}
        vals, vfail = decode_column(self.value_serde, b.values, value_lengths)
        keys: list[Any] | None = None
        dkfail: dict[int, str] = {}
        if self.reads_keys:
            key_lengths = list(b.key_lengths)
            if len(key_lengths) != n:
                msg = f"ValueError: malformed bundle: {len(key_lengths)} keys for {n} values"
                keys, dkfail = [None] * n, dict.fromkeys(range(n), msg)
            else:
                keys, dkfail = decode_column(self.key_serde, b.keys, key_lengths)
        col = _Column(n, keys, vals, failed)
        if vfail or dkfail:
            col.fail({**dkfail, **vfail}, 0)
        undecoded = set(failed)  # deserialization failures; the rest fail in a function

        for run, fn, step in self.steps:
            if not col.vals:
                break
            run(col, fn, step)

        # Encode; a record whose output does not encode fails at the last step.
        last = max(len(b.steps) - 1, 0)
        while True:
            vdata, vlens, vfail = encode_column(self.out_value_serde, col.vals)
            kdata: bytes = b""
            klens: list[int] = []
            kfail: dict[int, str] = {}
            if self.changes_keys:
                assert col.keys is not None
                kdata, klens, kfail = encode_column(self.out_key_serde, col.keys)
            if not vfail and not kfail:
                break
            col.fail({**kfail, **vfail}, last)

        if col.origin is None and not failed:
            counts = [1] * n
        else:
            counts = [0] * n
            for i, c in Counter(col.origins()).items():
                counts[i] = c
        result.output_counts.extend(counts)
        result.value_lengths.extend(vlens)
        result.values = vdata
        if self.changes_keys:
            result.key_lengths.extend(klens)
            result.keys = kdata
        if failed:
            result.failures.extend(
                pb.RecordFailure(index=i, step=s, message=m, kind=DESERIALIZATION if i in undecoded else PROCESSING)
                for i, (s, m) in sorted(failed.items())
            )
        return result


_BAD: Any = object()  # marks a value that failed before its fold (it did not decode)


def _never(*args: Any) -> Any:
    raise AssertionError("a broken fold calls no function")


def _bind(fn: Fn, meta: RecordMetadata) -> Fn:
    """fn, given meta as its last argument when it was wrapped by
    with_metadata (a reducer, aggregator, initializer, subtractor, merger
    or joiner: its metadata is that of the record it is called for)."""
    if metadata_of(fn) == pb.METADATA_UNSPECIFIED:
        return fn
    raw = unwrap(fn)
    return lambda *args: raw(*args, meta)


def _metas(b: pb.Bundle, refs: list[int], n: int) -> list[RecordMetadata]:
    """Each fold value's (or joined record's) RecordMetadata: that of its
    record (record refs[i] with value refs, else record i)."""
    records = len(b.value_lengths)
    headers = read_headers(b, records)
    offsets = list(b.offsets) or [0] * records
    times = list(b.timestamps) or [0] * records
    at = refs or range(n)
    return [RecordMetadata(b.topic, b.partition, offsets[r], times[r], headers[r]) for r in at]


class _Fold:
    """A compiled fold: the one step of a fold bundle (reduce or aggregate).

    The bundle holds one key per group, each group's values one after the
    other, and each group's current aggregate (length -1: none yet). Every
    value's outcome is one output, the key's aggregate after folding it in;
    the aggregates are encoded as they are made (so an aggregate changed in
    place by the next call is emitted as it was) and joined once per bundle.

    A value whose call raises, returns None or gives an aggregate that does
    not encode fails alone (output count 0), and the group's next value
    folds into the aggregate as it was before it (unless the failing call
    changed it in place). The first value of a key
    with no aggregate becomes the aggregate without a call (reduce), or is
    folded into ``initializer()`` (aggregate), as in Kafka Streams.

    A fold program (``fold_bases`` set: session and sliding windows) says
    for each value which aggregate it starts from, which it merges in first,
    and refers to stored aggregates and to earlier values' outputs:
    see ``_program``.
    """

    __slots__ = (
        "reduce", "fn", "init", "merger", "sub", "key_serde", "value_serde", "agg_serde", "encode", "broken",
        "loop", "awaits", "what", "meta",
    )

    def __init__(self, bundle: pb.Bundle, functions: Mapping[int, Fn], loop: Loop) -> None:
        st = bundle.steps[0]
        self.reduce = st.operation == REDUCE
        what = "reduce" if self.reduce else "aggregate"
        self.broken: str | None = None  # fails every value
        fn = functions.get(st.token)
        if fn is None:
            self.broken = f"LookupError: {what} step ({st.node}) names token {st.token}, which is not registered in this host"
        init = None if self.reduce else functions.get(st.initializer_token)
        if not self.reduce and init is None and self.broken is None:
            self.broken = (
                f"LookupError: aggregate step ({st.node}) names initializer token {st.initializer_token}, "
                "which is not registered in this host"
            )
        # Session windows' merger(key, aggregate1, aggregate2), for programs.
        self.merger: Fn = _never
        if st.merger_token:
            merger = functions.get(st.merger_token)
            if merger is None:
                self.broken = self.broken or (
                    f"LookupError: {what} step ({st.node}) names merger token {st.merger_token}, "
                    "which is not registered in this host"
                )
            else:
                self.merger = merger
        # A table fold (KGroupedTable): each value is a change, whose old value
        # the subtractor removes before the adder (fn) adds the new one.
        self.sub: Fn | None = None
        if st.subtractor_token:
            self.sub = functions.get(st.subtractor_token)
            if self.sub is None:
                self.sub = _never
                self.broken = self.broken or (
                    f"LookupError: {what} step ({st.node}) names subtractor token {st.subtractor_token}, "
                    "which is not registered in this host"
                )
        self.fn: Fn = fn or _never
        self.init: Fn = init or _never
        self.key_serde = bundle.key_serde
        self.value_serde = bundle.value_serde
        # The aggregates go back to the engine's store and come back in later
        # bundles: they are encoded with the serde they are decoded with.
        self.agg_serde = bundle.aggregate_serde or bundle.output_value_serde or bundle.value_serde
        out = bundle.output_value_serde
        if out and out != self.agg_serde and self.broken is None:
            self.broken = (
                f"ValueError: malformed fold bundle: output value serde {out!r} is not the aggregate serde {self.agg_serde!r}"
            )
        enc = encoder(self.agg_serde)
        if enc is None:
            self.broken = self.broken or f"ValueError: unknown serde {self.agg_serde!r}"
            enc = bytes
        self.encode = enc
        # Async functions (see _aio): with any, a bundle's groups fold
        # concurrently, each group's values in order (_fold_async). A plain
        # function found returning an awaitable (it does not encode) is
        # awaited where it is found, and the fold is async from then on.
        self.loop = loop
        funcs: list[Fn] = [self.fn, self.init, self.merger]
        if self.sub is not None:
            funcs.append(self.sub)
        self.awaits = any(is_async(unwrap(f)) for f in funcs if f is not _never)
        # Functions wrapped by with_metadata get the metadata of the value's
        # record (_bind); a fold none of whose functions asked pays nothing.
        self.meta = any(metadata_of(f) != pb.METADATA_UNSPECIFIED for f in funcs)
        self.what = f"{what} functions of token {st.token} (node {st.node})"

    def _what(self) -> str:
        return self.what

    def _await(self, x: Any) -> Any:
        """x, awaited when it is an awaitable (on the loop; raises what it raised)."""
        if not is_awaitable(x):
            return x
        got = self.loop.gather([x], self._what)[0]
        if type(got) is Failed:
            raise _Raised(got.message)
        return got

    def run(self, b: pb.Bundle) -> pb.BundleResult:
        value_lengths = list(b.value_lengths)
        # A windowed fold bundle may hold each record once and refer to it from
        # every window it falls into (fold_value_refs): fold value i is record
        # refs[i]; outputs and failures index fold values.
        refs = list(b.value_refs)
        n = len(refs) if refs else len(value_lengths)
        result = pb.BundleResult(bundle_id=b.id)
        sizes = list(b.group_sizes)
        agg_lengths = list(b.aggregate_lengths)
        key_lengths = list(b.key_lengths)
        broken = self.broken
        program = len(b.fold_bases) > 0  # its aggregates are a pool, not one per group
        if broken is None and refs and (min(refs) < 0 or max(refs) >= len(value_lengths)):
            broken = f"ValueError: malformed fold bundle: value refs from {min(refs)} to {max(refs)} for {len(value_lengths)} records"
        if broken is None and (
            (len(agg_lengths) != len(sizes) and not program)
            or len(key_lengths) != len(sizes)
            or sum(sizes) != n
            or (sizes and min(sizes) < 0)
        ):
            broken = (
                f"ValueError: malformed fold bundle: {len(sizes)} group sizes adding up to {sum(sizes)}, "
                f"{len(key_lengths)} keys, {len(agg_lengths)} aggregates and {n} values"
            )
        olds: list[Any] = []
        ofail: dict[int, str] = {}
        if broken is None and self.sub is not None:
            old_lengths = list(b.old_value_lengths)
            if len(old_lengths) != n:
                broken = f"ValueError: malformed table fold bundle: {len(old_lengths)} old values for {n} values"
            else:
                olds, ofail = decode_column(self.value_serde, b.old_values, old_lengths)
                for i, msg in ofail.items():
                    olds[i] = _BAD
        if broken is not None:
            result.output_counts.extend([0] * n)
            result.failures.extend(pb.RecordFailure(index=i, step=0, message=broken, kind=PROCESSING) for i in range(n))
            return result

        failed: dict[int, str] = {}
        vals, vfail = decode_column(self.value_serde, b.values, value_lengths)
        if refs:
            vals = [vals[j] for j in refs]  # each record decoded once, however many windows it is in
            if vfail:
                vfail = {i: vfail[j] for i, j in enumerate(refs) if j in vfail}
        if vfail:
            for i, msg in vfail.items():
                vals[i] = _BAD
                failed[i] = msg
        undecoded = set(failed)  # deserialization failures; the rest fail in a function
        metas = _metas(b, refs, n) if self.meta else None
        if self.reduce:
            keys: list[Any] = [None] * len(sizes)  # a reducer does not see keys
            kfail: dict[int, str] = {}
        else:
            keys, kfail = decode_column(self.key_serde, b.keys, key_lengths)
        if program:
            return self._answer_program(b, result, n, sizes, keys, kfail, agg_lengths, vals, failed, undecoded, metas)
        aggs, afail = decode_column(self.agg_serde, b.aggregates, agg_lengths)

        if self.sub is not None:
            for i, old in enumerate(olds):
                if old is _BAD:
                    failed.setdefault(i, f"{ofail[i]} (the old value)")
                    undecoded.add(i)
        chunks: list[bytes] = []
        table_chunks: list[bytes | None] = []
        fold = self._fold_reduce if self.reduce else self._fold_aggregate
        # final_only: the engine needs each group's last aggregate only.
        final = b.final_only and self.sub is None
        skipped: list[int] = []
        pos = 0
        if self.awaits:
            return self._answer_async(result, n, sizes, keys, kfail, agg_lengths, aggs, afail, vals, olds, failed, undecoded, final, metas)
        if final and not (failed or afail or kfail) and fold == self._fold_aggregate and metas is None:
            fast = self._final_aggregates(sizes, keys, agg_lengths, aggs, vals)
            if fast is not None:
                result.output_counts.extend(_final_counts(sizes))
                result.value_lengths.extend(map(len, fast))
                result.values = b"".join(fast)
                return result
        for g, size in enumerate(sizes):
            end = pos + size
            bad = kfail.get(g) or afail.get(g)
            if bad is not None:
                what = "key" if g in kfail else "stored aggregate"
                for i in range(pos, end):
                    failed.setdefault(i, f"{bad} (the {what} of this group)")
                    undecoded.add(i)
            elif self.sub is not None:
                self._fold_table(keys[g], agg_lengths[g] < 0, aggs[g], vals, olds, pos, end, table_chunks, failed, metas)
            else:
                start = len(chunks)
                fold(keys[g], agg_lengths[g] < 0, aggs[g], vals[pos:end], pos, chunks, failed, metas)
                if final and size > 1 and len(chunks) - start == size:
                    del chunks[start : start + size - 1]
                    skipped.extend(range(pos, end - 1))
            pos = end
        if self.sub is not None:
            result.value_lengths.extend(-1 if c is None else len(c) for c in table_chunks)
            chunks = [c for c in table_chunks if c is not None]

        if failed or skipped:
            counts = [1] * n
            for i in failed:
                counts[i] = 0
            for i in skipped:
                counts[i] = 0
            result.output_counts.extend(counts)
            result.failures.extend(
                pb.RecordFailure(index=i, step=0, message=m, kind=DESERIALIZATION if i in undecoded else PROCESSING)
                for i, m in sorted(failed.items())
            )
        else:
            result.output_counts.extend([1] * n)
        if self.sub is None:
            result.value_lengths.extend(map(len, chunks))
        result.values = b"".join(chunks)
        return result

    def _answer_async(
        self,
        result: pb.BundleResult,
        n: int,
        sizes: list[int],
        keys: list[Any],
        kfail: dict[int, str],
        agg_lengths: list[int],
        aggs: list[Any],
        afail: dict[int, str],
        vals: list[Any],
        olds: list[Any],
        failed: dict[int, str],
        undecoded: set[int],
        final: bool,
        metas: list[RecordMetadata] | None,
    ) -> pb.BundleResult:
        """The answer of a fold with async functions: its groups fold
        concurrently on the loop, each group's values in order (each call's
        awaitable awaited before the next value of the group), with the
        outcomes of the synchronous path (_fold_reduce, _fold_aggregate,
        _fold_table)."""
        outs: list[bytes | None | _Failure] = [_UNSET] * n  # _UNSET: no output (failed, or skipped)
        groups = []
        pos = 0
        for g, size in enumerate(sizes):
            end = pos + size
            bad = kfail.get(g) or afail.get(g)
            if bad is not None:
                what = "key" if g in kfail else "stored aggregate"
                for i in range(pos, end):
                    failed.setdefault(i, f"{bad} (the {what} of this group)")
                    undecoded.add(i)
            else:
                groups.append((pos, end, self._fold_group_async(keys[g], agg_lengths[g] < 0, aggs[g], vals, olds, pos, end, outs, failed, metas)))
            pos = end
        done = self.loop.gather([c for _, _, c in groups], self._what)
        for (start, end, _), r in zip(groups, done):
            if type(r) is Failed:  # the group's wait passed its bound: its values not folded yet fail
                for i in range(start, end):
                    if outs[i] is _UNSET:
                        failed.setdefault(i, r.message)
        counts = [0] * n
        chunks: list[bytes] = []
        lengths: list[int] = []
        pos = 0
        for size in sizes:
            end = pos + size
            last = end - 1
            whole = all(outs[i] is not _UNSET and i not in failed for i in range(pos, end))
            for i in range(pos, end):
                o = outs[i]
                if o is _UNSET or i in failed or (final and whole and i != last and self.sub is None):
                    continue
                counts[i] = 1
                if o is None:
                    lengths.append(-1)
                else:
                    assert isinstance(o, bytes)
                    lengths.append(len(o))
                    chunks.append(o)
            pos = end
        result.output_counts.extend(counts)
        result.value_lengths.extend(lengths)
        result.values = b"".join(chunks)
        result.failures.extend(
            pb.RecordFailure(index=i, step=0, message=m, kind=DESERIALIZATION if i in undecoded else PROCESSING)
            for i, m in sorted(failed.items())
        )
        return result

    async def _fold_group_async(
        self,
        key: Any,
        fresh: bool,
        agg: Any,
        vals: list[Any],
        olds: list[Any],
        pos: int,
        end: int,
        outs: list[Any],
        failed: dict[int, str],
        metas: list[RecordMetadata] | None,
    ) -> None:
        """Folds values pos..end-1 of one group, as the synchronous folds
        do; outs[i] gets value i's encoded aggregate (None: a table change
        left the key with none)."""
        reduce, table = self.reduce, self.sub is not None
        for i in range(pos, end):
            v = vals[i]
            old = olds[i] if table else None
            if v is _BAD or old is _BAD or i in failed:
                continue
            add, init, sub = self.fn, self.init, self.sub
            if metas is not None:
                m = metas[i]
                add, init, sub = _bind(add, m), _bind(init, m), None if sub is None else _bind(sub, m)
            cur, has = agg, not fresh
            try:
                if table:
                    assert sub is not None
                    if old is not None and has:
                        cur = await _maybe(sub(cur, old) if reduce else sub(key, old, cur))
                        has = cur is not None
                    if v is not None:
                        if reduce:
                            cur = await _maybe(add(cur, v)) if has else v
                        else:
                            cur = await _maybe(add(key, v, cur if has else await _maybe(init())))
                        if cur is None:
                            failed[i] = "TypeError: the adder returned None; an aggregate cannot be null"
                            continue
                        has = True
                elif reduce:
                    cur = v if fresh else await _maybe(add(agg, v))
                    if cur is None:
                        failed[i] = (
                            "TypeError: the value is null, so it cannot become the key's first aggregate"
                            if fresh
                            else "TypeError: reduce returned None; an aggregate cannot be null"
                        )
                        continue
                    has = True
                else:
                    cur = await _maybe(add(key, v, await _maybe(init()) if fresh else agg))
                    if cur is None:
                        failed[i] = "TypeError: aggregate returned None; an aggregate cannot be null"
                        continue
                    has = True
            except Exception as e:
                failed[i] = _text(e)
                continue
            if not has:
                outs[i] = None
                agg, fresh = None, True
                continue
            try:
                data = self.encode(cur)
            except Exception:
                slow = self._encode_slow(cur, i, failed)
                if slow is None:
                    continue
                data = slow
            outs[i] = data
            agg, fresh = cur, False

    def _fold_table(
        self,
        key: Any,
        fresh: bool,
        agg: Any,
        vals: list[Any],
        olds: list[Any],
        pos: int,
        end: int,
        chunks: list[bytes | None],
        failed: dict[int, str],
        metas: list[RecordMetadata] | None = None,
    ) -> None:
        """Folds a group's changes as Kafka Streams' KTableReduce /
        KTableAggregate do: the subtractor removes the old value when it and
        the aggregate exist, then the adder adds the new value (which a
        group's first value becomes, for reduce, or which is added to
        initializer(), for aggregate). A change that leaves no aggregate (a
        removal from nothing, or a subtractor answering None) answers null."""
        add, sub, init, enc, reduce = self.fn, self.sub or _never, self.init, self.encode, self.reduce
        for i in range(pos, end):
            v, old = vals[i], olds[i]
            if v is _BAD or old is _BAD or i in failed:
                continue
            if metas is not None:
                m = metas[i]
                add, sub, init = _bind(self.fn, m), _bind(self.sub or _never, m), _bind(self.init, m)
            cur, has = agg, not fresh
            try:
                if old is not None and has:
                    # None from the subtractor leaves the group with no
                    # aggregate (KTableReduce / KTableAggregate store null).
                    cur = sub(cur, old) if reduce else sub(key, old, cur)
                    has = cur is not None
                if v is not None:
                    if reduce:
                        cur = add(cur, v) if has else v
                    else:
                        cur = add(key, v, cur if has else init())
                    if cur is None:
                        failed[i] = "TypeError: the adder returned None; an aggregate cannot be null"
                        continue
                    has = True
            except Exception as e:
                failed[i] = _text(e)
                continue
            if not has:
                chunks.append(None)
                agg, fresh = None, True
                continue
            try:
                data = enc(cur)
            except Exception:
                slow = self._encode_slow(cur, i, failed)
                if slow is None:
                    continue
                data = slow
            chunks.append(data)
            agg, fresh = cur, False

    def _fold_reduce(
        self,
        key: Any,
        fresh: bool,
        agg: Any,
        values: list[Any],
        pos: int,
        chunks: list[bytes],
        failed: dict[int, str],
        metas: list[RecordMetadata] | None = None,
    ) -> None:
        fn, enc, append = self.fn, self.encode, chunks.append
        for i, v in enumerate(values, pos):
            if v is _BAD:
                continue
            if metas is not None:
                fn = _bind(self.fn, metas[i])
            if fresh:
                nxt = v  # the first value becomes the aggregate, without a call
            else:
                try:
                    nxt = fn(agg, v)
                except Exception as e:
                    failed[i] = _text(e)
                    continue
            if nxt is None:
                if fresh:
                    failed[i] = "TypeError: the value is null, so it cannot become the key's first aggregate"
                else:
                    failed[i] = "TypeError: reduce returned None; an aggregate cannot be null"
                continue
            try:
                data = enc(nxt)
            except Exception:
                late = self._encode_late(nxt, i, failed, "TypeError: reduce returned None; an aggregate cannot be null")
                if late is None:
                    continue
                nxt, data = late
            agg = nxt
            fresh = False
            append(data)

    def _fold_aggregate(
        self,
        key: Any,
        fresh: bool,
        agg: Any,
        values: list[Any],
        pos: int,
        chunks: list[bytes],
        failed: dict[int, str],
        metas: list[RecordMetadata] | None = None,
    ) -> None:
        fn, init, enc, append = self.fn, self.init, self.encode, chunks.append
        for i, v in enumerate(values, pos):
            if v is _BAD:
                continue
            if metas is not None:
                fn, init = _bind(self.fn, metas[i]), _bind(self.init, metas[i])
            try:
                # A key with no aggregate yet starts from initializer(); after
                # a failed first value it still has none, so it starts again.
                nxt = fn(key, v, init() if fresh else agg)
            except Exception as e:
                failed[i] = _text(e)
                continue
            if nxt is None:
                failed[i] = "TypeError: aggregate returned None; an aggregate cannot be null"
                continue
            try:
                data = enc(nxt)
            except Exception:
                late = self._encode_late(nxt, i, failed, "TypeError: aggregate returned None; an aggregate cannot be null")
                if late is None:
                    continue
                nxt, data = late
            agg = nxt
            fresh = False
            append(data)

    def _answer_program(
        self,
        b: pb.Bundle,
        result: pb.BundleResult,
        n: int,
        sizes: list[int],
        keys: list[Any],
        kfail: dict[int, str],
        agg_lengths: list[int],
        vals: list[Any],
        failed: dict[int, str],
        undecoded: set[int],
        metas: list[RecordMetadata] | None,
    ) -> pb.BundleResult:
        chunks, bad = self._program(b, sizes, keys, kfail, agg_lengths, vals, failed, metas)
        if bad is not None:
            result.output_counts.extend([0] * n)
            result.failures.extend(pb.RecordFailure(index=i, step=0, message=bad, kind=PROCESSING) for i in range(n))
            return result
        result.output_counts.extend(0 if i in failed else 1 for i in range(n))
        result.failures.extend(
            pb.RecordFailure(index=i, step=0, message=m, kind=DESERIALIZATION if i in undecoded else PROCESSING)
            for i, m in sorted(failed.items())
        )
        result.value_lengths.extend(map(len, chunks))
        result.values = b"".join(chunks)
        return result

    def _program(
        self,
        b: pb.Bundle,
        sizes: list[int],
        keys: list[Any],
        kfail: dict[int, str],
        agg_lengths: list[int],
        vals: list[Any],
        failed: dict[int, str],
        metas: list[RecordMetadata] | None,
    ) -> tuple[list[bytes], str | None]:
        """Runs a fold program (session and sliding windows; Bundle.fold_bases).

        Value i starts from the aggregate ``fold_bases[i]`` names: -1 is
        ``initializer()`` (reduce: none), below ``len(aggregate_lengths)`` a
        stored aggregate of the pool, above it an earlier value's output.
        Then its ``merge_counts[i]`` operands are merged in, ``merger(key,
        aggregate, operand)`` (reduce: the reducer, none taking the operand),
        then the value folds in. Each reference is decoded afresh, so a
        function that changes an aggregate in place cannot change another
        window's. A value fails alone, and so does every value that refers to
        its output. Returns the outputs of the values that did not fail, in
        order, and a message when the program is malformed (every value
        fails).
        """
        bases, counts, mrefs = list(b.fold_bases), list(b.merge_counts), list(b.merge_refs)
        n, pool = len(vals), len(agg_lengths)
        if len(bases) != n or len(counts) != n or sum(counts) != len(mrefs) or (counts and min(counts) < 0):
            return [], (
                f"ValueError: malformed fold program: {len(bases)} bases and {len(counts)} merge counts "
                f"adding up to {sum(counts)} for {n} values and {len(mrefs)} merge refs"
            )
        starts = [0] * n
        m = 0
        for i in range(n):
            starts[i] = m
            m += counts[i]
            for r in chain((bases[i],), mrefs[starts[i] : m]):
                if r < -1 or r >= pool + i:
                    return [], f"ValueError: malformed fold program: value {i} refers to {r}, past the {pool} stored aggregates and the values before it"
            if -1 in mrefs[starts[i] : m]:
                return [], f"ValueError: malformed fold program: value {i} merges in the initializer's aggregate (ref -1)"
        if not self.reduce and mrefs and self.merger is _never:
            return [], "LookupError: a fold program merges sessions, but its step names no merger token"
        serde, reduce, fn, init, merger, enc = self.agg_serde, self.reduce, self.fn, self.init, self.merger, self.encode
        pool_bytes: list[bytes] = []
        off = 0
        for length in agg_lengths:
            if length < 0:
                return [], "ValueError: malformed fold program: a stored aggregate of the pool is null"
            pool_bytes.append(b.aggregates[off : off + length])
            off += length
        if off != len(b.aggregates):
            return [], f"ValueError: malformed fold program: aggregate lengths account for {off} bytes, the column holds {len(b.aggregates)}"
        outs: list[bytes | None] = [None] * n

        # A program's values refer to each other's outputs: async functions
        # are awaited one call at a time.
        aw: Callable[[Any], Any] = self._await if self.awaits else _same

        def resolve(r: int) -> Any:
            if r == -1:
                return _NONE if reduce else aw(init())
            if r < pool:
                return decode(serde, pool_bytes[r])
            data = outs[r - pool]
            if data is None:
                raise _Depends(f"ValueError: depends on fold value {r - pool}, which failed")
            return decode(serde, data)

        pos = 0
        for g, size in enumerate(sizes):
            key, bad_key = keys[g], kfail.get(g)
            for i in range(pos, pos + size):
                if bad_key is not None:
                    failed.setdefault(i, f"{bad_key} (the key of this group)")
                if i in failed:
                    continue
                if metas is not None:
                    meta = metas[i]
                    fn, init, merger = _bind(self.fn, meta), _bind(self.init, meta), _bind(self.merger, meta)
                try:
                    acc = resolve(bases[i])
                    for r in mrefs[starts[i] : starts[i] + counts[i]]:
                        other = resolve(r)
                        if reduce:
                            acc = other if acc is _NONE else aw(fn(acc, other))
                        else:
                            acc = aw(merger(key, acc, other))
                        if acc is None:
                            raise TypeError(f"{'reduce' if reduce else 'merger'} returned None; an aggregate cannot be null")
                    v = vals[i]
                    acc = (v if acc is _NONE else aw(fn(acc, v))) if reduce else aw(fn(key, v, acc))
                    if acc is None:
                        raise TypeError(f"{'reduce' if reduce else 'aggregate'} returned None; an aggregate cannot be null")
                except _Depends as e:
                    failed[i] = str(e)
                    continue
                except Exception as e:
                    failed[i] = _text(e)
                    continue
                try:
                    outs[i] = enc(acc)
                except Exception:
                    outs[i] = self._encode_slow(acc, i, failed)
            pos += size
        return [o for o in outs if o is not None], None

    def _final_aggregates(
        self, sizes: list[int], keys: list[Any], agg_lengths: list[int], aggs: list[Any], vals: list[Any]
    ) -> list[bytes] | None:
        """The fast path of a final_only aggregate bundle: each group's last
        aggregate, encoded; None when anything raises or an aggregate is None,
        and the general path then runs the bundle and names the failure."""
        fn, init, enc = self.fn, self.init, self.encode
        out: list[bytes] = []
        append = out.append
        pos = 0
        try:
            for g, size in enumerate(sizes):
                agg = init() if agg_lengths[g] < 0 else aggs[g]
                if size == 1:  # most groups of a windowed fold: one record's window
                    agg = fn(keys[g], vals[pos], agg)
                    if agg is None:
                        return None
                    append(enc(agg))
                    pos += 1
                    continue
                key = keys[g]
                end = pos + size
                for v in vals[pos:end]:
                    agg = fn(key, v, agg)
                    if agg is None:
                        return None  # the general path fails this value and goes on from the aggregate before
                append(enc(agg))
                pos = end
        except Exception:
            return None
        return out

    def _encode_late(self, obj: Any, i: int, failed: dict[int, str], null: str) -> tuple[Any, bytes] | None:
        """(aggregate, its encoding) when the fast encoder refused obj: an
        awaitable (a plain function returned one; it never encodes) is
        awaited first, and the fold is async from the next bundle on. None
        when value i fails (recorded in failed)."""
        if is_awaitable(obj):
            self.awaits = True
            try:
                obj = self._await(obj)
            except _Raised as e:
                failed[i] = str(e)
                return None
            if obj is None:
                failed[i] = null
                return None
        data = self._encode_slow(obj, i, failed)
        return None if data is None else (obj, data)

    def _encode_slow(self, obj: Any, i: int, failed: dict[int, str]) -> bytes | None:
        """Encodes obj with the serde's checking encoder, whose error names
        the serde; on failure records it for value i and answers None."""
        try:
            return encode(self.agg_serde, obj)
        except Exception as e:
            failed[i] = _text(e)
            return None


_NONE: Any = object()  # a reduce's missing aggregate in a fold program
_UNSET: Any = object()  # no outcome (yet) of a fold value


def _same(x: Any) -> Any:
    return x


async def _maybe(x: Any) -> Any:
    """x, awaited when it is an awaitable (a function may be async for some calls only)."""
    if is_awaitable(x):
        return await x
    return x


class _Failure:
    """A call that failed, in a column of results."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message


class _Depends(Exception):
    """A fold program's value refers to the output of one that failed."""


def _final_counts(sizes: list[int]) -> list[int]:
    """Output counts of a final_only answer: 1 for each group's last value."""
    if sizes.count(1) == len(sizes):
        return [1] * len(sizes)  # a group per value (a windowed fold's usual bundle)
    counts: list[int] = []
    for size in sizes:
        counts.extend([0] * (size - 1))
        counts.append(1)
    return counts


class _Join:
    """A stream-table join's ValueJoiner (one step): ``joiner(value, table
    value)`` for each record, the table value None where a left join found
    none. A None result is a null value (Kafka Streams forwards it). A
    record whose value or table value does not decode, or whose call
    raises, fails alone. A joiner wrapped by with_metadata gets the
    metadata of the record it joins as a third argument."""

    __slots__ = ("fn", "broken", "encode", "out_serde", "call", "meta")

    def __init__(self, bundle: pb.Bundle, functions: Mapping[int, Fn], loop: Loop) -> None:
        st = bundle.steps[0]
        self.broken: str | None = None
        fn = functions.get(st.token)
        if fn is None:
            self.broken = f"LookupError: join step ({st.node}) names token {st.token}, which is not registered in this host"
        self.meta = metadata_of(fn) != pb.METADATA_UNSPECIFIED
        self.fn: Fn = fn or _never
        if fn is not None:
            self.fn = unwrap(fn)
        self.call = _Fn(self.fn, loop, "value_join", st.token, 0, st.node)
        self.out_serde = bundle.output_value_serde or bundle.value_serde
        enc = encoder(self.out_serde)
        if enc is None:
            self.broken = self.broken or f"ValueError: unknown serde {self.out_serde!r}"
            enc = bytes
        self.encode = enc

    def run(self, b: pb.Bundle) -> pb.BundleResult:
        lengths, other_lengths = list(b.value_lengths), list(b.other_value_lengths)
        n = len(lengths)
        result = pb.BundleResult(bundle_id=b.id)
        broken = self.broken
        if broken is None and len(other_lengths) != n:
            broken = f"ValueError: malformed join bundle: {len(other_lengths)} table values for {n} records"
        if broken is not None:
            result.output_counts.extend([0] * n)
            result.failures.extend(pb.RecordFailure(index=i, step=0, message=broken, kind=PROCESSING) for i in range(n))
            return result
        vals, vfail = decode_column(b.value_serde, b.values, lengths)
        others, ofail = decode_column(b.other_value_serde, b.other_values, other_lengths)
        fn, enc = self.fn, self.encode
        failed: dict[int, str] = {}
        undecoded: set[int] = set()
        counts: list[int] = []
        out_lengths: list[int] = []
        chunks: list[bytes] = []
        joined: dict[int, Any] = {}
        metas = _metas(b, [], n) if self.meta else None
        together = self.call.awaits
        if together:
            # Async: every call first, in record order, then the awaitables together.
            live = [i for i in range(n) if i not in vfail and i not in ofail]
            columns = [[vals[i] for i in live], [others[i] for i in live]]
            if metas is not None:
                columns.append([metas[i] for i in live])
            outs, fails = self.call.map_all(*columns)
            for j, i in enumerate(live):
                joined[i] = _Failure(fails[j]) if j in fails else outs[j]
        for i in range(n):
            bad = vfail.get(i)
            if bad is None and i in ofail:
                bad = f"{ofail[i]} (the table value)"
            if bad is not None:
                failed[i] = bad
                undecoded.add(i)
                counts.append(0)
                continue
            try:
                if together:
                    out = joined[i]
                    if type(out) is _Failure:
                        failed[i] = out.message
                        counts.append(0)
                        continue
                elif metas is None:
                    out = fn(vals[i], others[i])
                else:
                    out = fn(vals[i], others[i], metas[i])
                try:
                    data = None if out is None else enc(out)
                except Exception:
                    if is_awaitable(out):
                        # A plain joiner that returns awaitables (they never
                        # encode): awaited here, together from the next bundle on.
                        self.call.awaits = True
                        out = self.call.loop.gather([out], self.call.what)[0]
                        if type(out) is Failed:
                            failed[i] = out.message
                            counts.append(0)
                            continue
                    data = None if out is None else self._encode(enc, out)
            except Exception as e:
                failed[i] = _text(e)
                counts.append(0)
                continue
            counts.append(1)
            if data is None:
                out_lengths.append(-1)
            else:
                out_lengths.append(len(data))
                chunks.append(data)
        result.output_counts.extend(counts)
        result.value_lengths.extend(out_lengths)
        result.values = b"".join(chunks)
        result.failures.extend(
            pb.RecordFailure(index=i, step=0, message=m, kind=DESERIALIZATION if i in undecoded else PROCESSING)
            for i, m in sorted(failed.items())
        )
        return result

    def _encode(self, enc: Callable[[Any], bytes], obj: Any) -> bytes:
        """Encodes with the fast encoder; on its error, with the checking
        one, whose error names the serde."""
        try:
            return enc(obj)
        except Exception:
            data = encode(self.out_serde, obj)
            assert data is not None
            return data


class Executor:
    """Runs bundles with the functions registered under their tokens.

    Compiled chains are cached by their shape (steps and serdes). Async
    functions are awaited on the executor's own event loop (see _aio), each
    bundle's waits bounded by ``async_timeout`` seconds; :meth:`close`
    closes it. Not safe for concurrent use: one host session thread uses it.

    Processor bundles (docs/design/processor.md) run in the processor mode
    (polystreams._processor), which keeps the tasks' processor instances
    across bundles: ``read`` is its Read call to the engine, for store
    reads a bundle did not bring; ``store_specs`` are the stores the
    topology added, by name.
    """

    def __init__(
        self,
        functions: Mapping[int, Fn],
        *,
        async_timeout: float = 20.0,
        read: ReadFn | None = None,
        application_id: str = "",
        store_specs: Mapping[str, StoreBuilder] | None = None,
    ) -> None:
        self._functions = functions
        self._chains: dict[tuple[Any, ...], _Chain | _Fold | _Join | MetadataChain | Route] = {}
        self._loop = Loop(async_timeout)
        self._processors = ProcessorHost(functions, self._loop, read=read, application_id=application_id, store_specs=store_specs)

    def close(self) -> None:
        """Closes the event loop of async functions (if a bundle made one)."""
        self._processors.close()
        self._loop.close()

    def process(self, bundle: pb.Bundle) -> pb.BundleResult:
        steps = bundle.steps
        if is_processor_bundle(bundle):
            self._loop.start_bundle()
            return self._processors.process(bundle)
        if len(steps) == 1 and steps[0].operation == pb.OPERATION_EXTRACT_TIMESTAMP:
            return run_extract(bundle, self._functions)
        key = (
            tuple((s.token, s.operation, s.initializer_token, s.subtractor_token, s.metadata) for s in steps),
            bundle.key_serde,
            bundle.value_serde,
            bundle.output_key_serde,
            bundle.output_value_serde,
            bundle.aggregate_serde,
            bundle.other_value_serde,
        )
        chain = self._chains.get(key)
        if chain is None:
            if len(steps) == 1 and steps[0].operation in _FOLDS:
                chain = _Fold(bundle, self._functions, self._loop)
            elif len(steps) == 1 and steps[0].operation in ROUTES:
                chain = Route(bundle, self._functions, self._loop)
            elif len(steps) == 1 and steps[0].operation == VALUE_JOIN:
                chain = _Join(bundle, self._functions, self._loop)
            elif wants_metadata(bundle, self._functions):
                chain = MetadataChain(bundle, self._functions, self._loop)
            else:
                chain = _Chain(bundle, self._functions, self._loop)
            self._chains[key] = chain
        self._loop.start_bundle()
        return chain.run(bundle)

    def process_all(self, bundles: Iterable[pb.Bundle]) -> list[pb.BundleResult]:
        return [self.process(b) for b in bundles]
