"""Chains with functions that asked for record metadata (``with_metadata``;
docs/design/processor.md, "Metadata, opt-in").

Such a step's function is called with one more argument, a RecordMetadata
(timestamp, headers, topic, partition, offset). A function registered with
METADATA_WRITE may set its timestamp and headers, which become its outputs'
(a flat map's outputs share them); the answer then carries each output's
timestamp and headers (``BundleResult.output_timestamps`` and the output
header columns, -1 where the input record's headers are kept).

The chain runs record by record (the columnar path of _bundle stays free of
the metadata's cost for every chain that did not ask); a record whose
function raises fails alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from polystreams._aio import Failed, Loop, function_name, is_awaitable
from polystreams._operations import (
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
    SELECT_KEY,
    STATELESS,
)
from polystreams._processor import read_headers
from polystreams.processor import Headers, RecordMetadata, headers_of, metadata_of, unwrap
from polystreams.serde import decode_column, encode
from polystreams.v1alpha1 import engine_pb2 as pb

__all__ = ["MetadataChain", "wants_metadata"]


def _level(st: pb.Step, fn: Any) -> int:
    """What a step's function gets: the step's metadata, or what its
    with_metadata wrapper asked (an engine that does not say)."""
    return max(int(st.metadata), int(metadata_of(fn)))


def wants_metadata(bundle: pb.Bundle, functions: Mapping[int, Callable[..., Any]]) -> bool:
    return any(_level(s, functions.get(s.token)) != pb.METADATA_UNSPECIFIED for s in bundle.steps)


class _Fail(Exception):
    def __init__(self, step: int, message: str) -> None:
        super().__init__(message)
        self.step = step
        self.message = message


# An element in flight: key, value, and its metadata (shared by the outputs of one call).
_Elem = tuple[Any, Any, RecordMetadata]


class MetadataChain:
    """A chain of stateless steps, some of which take metadata."""

    def __init__(self, bundle: pb.Bundle, functions: Mapping[int, Callable[..., Any]], loop: Loop) -> None:
        self.loop = loop
        self.steps: list[tuple[int, int, Callable[..., Any], bool, str]] = []  # (step, op, fn, with metadata, node)
        self.broken: tuple[int, str] | None = None
        for i, st in enumerate(bundle.steps):
            fn = functions.get(st.token)
            if st.operation not in STATELESS:
                self.broken = self.broken or (i, f"ValueError: step {i} ({st.node}) has operation {st.operation}, which a metadata chain cannot run")
                continue
            if fn is None:
                self.broken = self.broken or (i, f"LookupError: step {i} ({st.node}) names token {st.token}, which is not registered in this host")
                continue
            self.steps.append((i, st.operation, unwrap(fn), _level(st, fn) != pb.METADATA_UNSPECIFIED, st.node))
        self.writes = any(_level(s, functions.get(s.token)) == pb.METADATA_WRITE for s in bundle.steps)
        self.changes_keys = any(s.operation in CHANGES_KEY for s in bundle.steps)

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        r = fn(*args)
        if is_awaitable(r):
            got = self.loop.gather([r], lambda: f"function {function_name(fn)}")[0]
            if type(got) is Failed:
                raise _Awaited(got.message)
            return got
        return r

    def _step(self, i: int, op: int, fn: Callable[..., Any], meta_arg: bool, elems: list[_Elem]) -> list[_Elem]:
        out: list[_Elem] = []
        for k, v, m in elems:
            mine = RecordMetadata(m.topic, m.partition, m.offset, m.timestamp, m.headers) if meta_arg else m
            extra = (mine,) if meta_arg else ()
            try:
                if op == MAP_VALUES:
                    out.append((k, self._call(fn, v, *extra), mine))
                elif op == MAP_VALUES_WITH_KEY:
                    out.append((k, self._call(fn, k, v, *extra), mine))
                elif op in (FILTER, FILTER_NOT):
                    keep = bool(self._call(fn, k, v, *extra))
                    if keep != (op == FILTER_NOT):
                        out.append((k, v, m))
                elif op in (FLAT_MAP_VALUES, FLAT_MAP_VALUES_WITH_KEY):
                    args = (v,) if op == FLAT_MAP_VALUES else (k, v)
                    r = self._call(fn, *args, *extra)
                    if isinstance(r, (str, bytes)):
                        raise TypeError(f"flat_map_values must return an iterable of values, not {type(r).__name__}")
                    out.extend((k, x, mine) for x in r)
                elif op == MAP:
                    nk, nv = self._call(fn, k, v, *extra)
                    out.append((nk, nv, mine))
                elif op == FLAT_MAP:
                    for p in self._call(fn, k, v, *extra):
                        nk, nv = p
                        out.append((nk, nv, mine))
                elif op == SELECT_KEY:
                    out.append((self._call(fn, k, v, *extra), v, mine))
                elif op == PEEK:
                    self._call(fn, k, v, *extra)
                    out.append((k, v, m))
                elif op == FOREACH:
                    self._call(fn, k, v, *extra)
            except _Awaited as e:
                raise _Fail(i, str(e)) from None
            except Exception as e:
                raise _Fail(i, f"{type(e).__name__}: {e}") from None
        return out

    def run(self, b: pb.Bundle) -> pb.BundleResult:
        n = len(b.value_lengths)
        result = pb.BundleResult(bundle_id=b.id)
        if self.broken is not None:
            step, msg = self.broken
            result.output_counts.extend([0] * n)
            result.failures.extend(pb.RecordFailure(index=i, step=step, message=msg, kind=PROCESSING) for i in range(n))
            return result
        vals, vfail = decode_column(b.value_serde or "bytes", b.values, list(b.value_lengths))
        key_lengths = list(b.key_lengths)
        if len(key_lengths) == n:
            keys, kfail = decode_column(b.key_serde or "bytes", b.keys, key_lengths)
        else:
            keys, kfail = [None] * n, dict.fromkeys(range(n), f"ValueError: malformed bundle: {len(key_lengths)} keys for {n} values")
        headers = read_headers(b, n)
        offsets = list(b.offsets) or [0] * n
        times = list(b.timestamps) or [0] * n
        out_key_serde = b.output_key_serde or b.key_serde or "bytes"
        out_value_serde = b.output_value_serde or b.value_serde or "bytes"
        last = max(len(b.steps) - 1, 0)
        klens: list[int] = []
        kdata: list[bytes] = []
        vlens: list[int] = []
        vdata: list[bytes] = []
        out_times: list[int] = []
        out_headers: list[Headers | None] = []
        for i in range(n):
            bad = kfail.get(i) or vfail.get(i)
            if bad is not None:
                result.output_counts.append(0)
                result.failures.append(pb.RecordFailure(index=i, step=0, message=bad, kind=DESERIALIZATION))
                continue
            h = headers[i]
            elems: list[_Elem] = [(keys[i], vals[i], RecordMetadata(b.topic, b.partition, offsets[i], times[i], h))]
            try:
                for step, op, fn, meta_arg, _ in self.steps:
                    if not elems:
                        break
                    elems = self._step(step, op, fn, meta_arg, elems)
                enc: list[tuple[bytes | None, bytes | None, RecordMetadata]] = []
                for k, v, m in elems:
                    try:
                        kb = encode(out_key_serde, k) if self.changes_keys else None
                        vb = encode(out_value_serde, v)
                    except Exception as e:
                        raise _Fail(last, f"{type(e).__name__}: {e}") from None
                    enc.append((kb, vb, m))
            except _Fail as f:
                result.output_counts.append(0)
                result.failures.append(pb.RecordFailure(index=i, step=f.step, message=f.message, kind=PROCESSING))
                continue
            result.output_counts.append(len(enc))
            for kb, vb, m in enc:
                if self.changes_keys:
                    klens.append(-1 if kb is None else len(kb))
                    if kb is not None:
                        kdata.append(kb)
                vlens.append(-1 if vb is None else len(vb))
                if vb is not None:
                    vdata.append(vb)
                out_times.append(int(m.timestamp))
                out_headers.append(None if m.headers is h else headers_of(m.headers))
        result.value_lengths.extend(vlens)
        result.values = b"".join(vdata)
        if self.changes_keys:
            result.key_lengths.extend(klens)
            result.keys = b"".join(kdata)
        if self.writes:
            result.output_timestamps.extend(out_times)
            hk: list[bytes] = []
            hv: list[bytes] = []
            for hs in out_headers:
                if hs is None:
                    result.output_header_counts.append(-1)
                    continue
                result.output_header_counts.append(len(hs))
                for key, value in hs:
                    kb = key.encode()
                    result.output_header_key_lengths.append(len(kb))
                    hk.append(kb)
                    result.output_header_value_lengths.append(-1 if value is None else len(value))
                    if value is not None:
                        hv.append(value)
            result.output_header_keys = b"".join(hk)
            result.output_header_values = b"".join(hv)
        return result


class _Awaited(Exception):
    """An awaitable raised: its message as a failure's."""

