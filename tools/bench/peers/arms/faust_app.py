"""make bench-peers arm: each topology with Faust (faust-streaming from PyPI),
written as its documentation recommends: agents (async for over a stream),
Tables (a dict backed by a changelog topic; the in-memory store, since the
RocksDB store needs a native build that faust-streaming does not ship), and
for the word count the repartition its own example does (an agent sending
each word to a second agent keyed by the word). Values out are JSON numbers
(Faust's json serializer) where the engines write 8-byte longs.

The windowed topologies are windowed Tables (Table.tumbling / .hopping,
relative_to_stream: each record's Kafka timestamp picks its windows), `+=`
updating every window the record falls in; after each update the agent
writes each of those windows' values (table[key][window_range], over
table.window.ranges(timestamp)) as {"start": ms, "value": n}, the shape Quix
gives its window results. There is no join: Faust has no stream-table join
(its documentation lists joins as not implemented)."""
from __future__ import annotations

import common
import faust


def main() -> None:
    args = common.parser(__doc__ or "").parse_args()
    t = args.topology
    app = faust.App(
        args.app,
        broker="kafka://" + args.brokers,
        store="memory://",
        datadir=args.state_dir,
        processing_guarantee="exactly_once" if common.exactly_once(t) else "at_least_once",
        broker_commit_interval=args.commit_ms / 1000,
        topic_partitions=8,
        web_enabled=False,
        key_serializer="raw",
        value_serializer="raw",
    )
    source = app.topic(args.input, key_type=bytes, value_type=bytes)
    sink = app.topic(args.output, key_type=bytes, value_serializer="json" if t != "map_values" else "raw")

    if t == "map_values":
        @app.agent(source)
        async def upper(stream: faust.StreamT) -> None:
            async for key, value in stream.items():
                await sink.send(key=key, value=value.upper())

    elif t == "word_count":
        counts = app.Table("word-counts", default=int)

        @app.agent(value_type=str, value_serializer="raw")
        async def count_words(words: faust.StreamT) -> None:
            async for word in words:
                counts[word] += 1
                await sink.send(key=word.encode(), value=counts[word])

        @app.agent(source)
        async def shuffle_words(lines: faust.StreamT) -> None:
            async for line in lines:
                for word in line.decode().split():
                    await count_words.send(key=word.encode(), value=word.encode())

    elif t in common.WINDOWS:
        size, advance = (ms / 1000 for ms in common.WINDOWS[t])
        base = app.Table("windows", default=int)
        # Windows expire an hour after their start, in stream time.
        windows = base.tumbling(size, expires=3600) if size == advance else base.hopping(size, advance, expires=3600)
        windows = windows.relative_to_stream()
        events = app.topic(args.input, key_type=bytes, value_serializer="json")

        @app.agent(events)
        async def aggregate_windows(stream: faust.StreamT) -> None:
            async for event in stream.events():
                key = event.key
                windows[key] += event.value["amount"] if t == "hopping_sum" else 1
                for w in windows.table.window.ranges(event.message.timestamp):
                    await sink.send(key=key, value={"start": round(w[0] * 1000), "value": windows[key][w]})

    elif t in ("join", "join_global"):
        raise SystemExit(f"faust_app: Faust has no stream-table join (--topology {t})")
    else:
        table = app.Table("totals", default=int)
        json_in = t in ("sum_eos", "sum_alos")
        src = app.topic(args.input, key_type=bytes, value_serializer="json") if json_in else source

        @app.agent(src)
        async def aggregate(stream: faust.StreamT) -> None:
            async for key, value in stream.items():
                table[key] += value["amount"] if json_in else 1
                await sink.send(key=key, value=table[key])

    worker = faust.Worker(app, loglevel="WARNING", quiet=True)
    worker.execute_from_commandline()


if __name__ == "__main__":
    main()
