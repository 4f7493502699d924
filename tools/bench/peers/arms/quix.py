"""make bench-peers arm: each topology with Quix Streams (quixstreams from
PyPI), written as its documentation recommends: a StreamingDataFrame,
stateful functions (apply(..., stateful=True) over the RocksDB-backed State)
for counts and sums (Quix has no unwindowed count/aggregate operator),
group_by to re-key (a repartition topic), to_topic to write. Values out are
JSON numbers (Quix's default serializer) where the engines write 8-byte longs.

Windows are Quix's windows API (tumbling_window / hopping_window over the
records' Kafka timestamps, no grace: records arrive in timestamp order on
each partition), count() or, for the aggregate with a Python function,
reduce(); .current() emits every update, as the engines do, each a JSON
object {"start", "end", "value"} under the record's key. The join is
join_asof, Quix's enrichment join: each event with the latest rate whose
timestamp is at or before the event's (the rates are older than every
event), merged by a Python function into the decimal amount * rate."""
from __future__ import annotations

import common
from quixstreams import Application, State


def count(_value: object, state: State) -> int:
    n = state.get("count", 0) + 1
    state.set("count", n)
    return n


def add_amount(value: dict, state: State) -> int:
    total = state.get("sum", 0) + value["amount"]
    state.set("sum", total)
    return total


def rated(event: dict, rate: dict) -> str:
    return str(event["amount"] * rate["rate"])


def main() -> None:
    args = common.parser(__doc__ or "").parse_args()
    app = Application(
        broker_address=args.brokers,
        consumer_group=args.app,
        auto_offset_reset="earliest",
        processing_guarantee="exactly-once" if common.exactly_once(args.topology) else "at-least-once",
        commit_interval=args.commit_ms / 1000,
        state_dir=args.state_dir,
        loglevel="WARNING",
    )
    t = args.topology
    json_in = t in ("sum_eos", "sum_alos", "join", *common.WINDOWS)
    if t == "join_global":
        raise SystemExit("quix: Quix Streams has no global table (--topology join_global)")
    source = app.topic(args.input, key_deserializer="string",
                       value_deserializer="json" if json_in else "string")
    sink = app.topic(args.output, key_serializer="string",
                     value_serializer="string" if t in ("map_values", "join") else "json")
    sdf = app.dataframe(source)
    if t == "map_values":
        sdf = sdf.apply(str.upper)
    elif t == "word_count":
        sdf = sdf.apply(str.split, expand=True)
        sdf = sdf.group_by(lambda word: word, name="word")
        sdf = sdf.apply(count, stateful=True)
    elif t in common.WINDOWS:
        size, advance = common.WINDOWS[t]
        if size == advance:
            w = sdf.tumbling_window(duration_ms=size)
        else:
            w = sdf.hopping_window(duration_ms=size, step_ms=advance)
        if t == "hopping_sum":
            sdf = w.reduce(reducer=lambda total, v: total + v["amount"], initializer=lambda v: v["amount"]).current()
        else:
            sdf = w.count().current()
    elif t == "join":
        rates = app.dataframe(app.topic(args.table, key_deserializer="string", value_deserializer="json"))
        sdf = sdf.join_asof(rates, on_merge=rated)
    elif t == "count":
        sdf = sdf.apply(count, stateful=True)
    else:
        sdf = sdf.apply(add_amount, stateful=True)
    sdf.to_topic(sink)
    app.run()


if __name__ == "__main__":
    main()
