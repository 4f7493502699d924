"""The host side of a source's TimestampExtractor (OPERATION_EXTRACT_TIMESTAMP).

A bundle has one step; each record is answered with one output whose
timestamp is ``output_timestamps[i]``. Record i's partition time is the
bundle's ``partition_time`` for record 0, then the largest non-negative
timestamp extracted before it. A record whose key or value does not decode
fails as a deserialization failure; a call that raises or answers no int
fails as processing (the engine stops the application, as Kafka Streams).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from polystreams._aio import function_name, is_awaitable
from polystreams._operations import DESERIALIZATION, PROCESSING
from polystreams._processor import read_headers
from polystreams.processor import RecordMetadata
from polystreams.serde import decode_column
from polystreams.v1alpha1 import engine_pb2 as pb


def run_extract(b: pb.Bundle, functions: Mapping[int, Callable[..., Any]]) -> pb.BundleResult:
    st = b.steps[0]
    n = len(b.value_lengths)
    result = pb.BundleResult(bundle_id=b.id)
    fn = functions.get(st.token)
    if fn is None:
        msg = f"LookupError: timestamp extractor ({st.node}) names token {st.token}, which is not registered in this host"
        result.failures.extend(pb.RecordFailure(index=i, step=0, message=msg, kind=PROCESSING) for i in range(n))
        return result
    keys, kfail = decode_column(b.key_serde or "bytes", b.keys, list(b.key_lengths))
    values, vfail = decode_column(b.value_serde or "bytes", b.values, list(b.value_lengths))
    headers = read_headers(b, n)
    offsets = list(b.offsets) or [0] * n
    times = list(b.timestamps) or [0] * n
    pt = b.partition_time
    for i in range(n):
        bad = kfail.get(i) or vfail.get(i)
        if bad is not None:
            result.output_counts.append(0)
            result.failures.append(pb.RecordFailure(index=i, step=0, message=bad, kind=DESERIALIZATION))
            continue
        meta = RecordMetadata(topic=b.topic, partition=b.partition, offset=offsets[i], timestamp=times[i], headers=headers[i])
        try:
            ts = fn(keys[i], values[i], meta, pt)
            if is_awaitable(ts) or isinstance(ts, bool) or not isinstance(ts, int):
                close = getattr(ts, "close", None)
                if callable(close):
                    close()
                raise TypeError(
                    f"timestamp extractor {function_name(fn)} answered {type(ts).__name__}; it must return an int (epoch ms) and cannot be async"
                )
        except Exception as e:  # noqa: BLE001 - the user function's failure is the record's
            result.output_counts.append(0)
            result.failures.append(pb.RecordFailure(index=i, step=0, message=f"{type(e).__name__}: {e}", kind=PROCESSING))
            continue
        result.output_counts.append(1)
        result.output_timestamps.append(ts)
        if ts >= 0:
            pt = max(pt, ts)
    return result
