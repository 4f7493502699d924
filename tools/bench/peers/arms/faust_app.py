"""make bench-peers arm: each topology with Faust (faust-streaming from PyPI),
written as its documentation recommends: agents (async for over a stream),
Tables (a dict backed by a changelog topic; the in-memory store, since the
RocksDB store needs a native build that faust-streaming does not ship), and
for the word count the repartition its own example does (an agent sending
each word to a second agent keyed by the word). Values out are JSON numbers
(Faust's json serializer) where the engines write 8-byte longs."""
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
