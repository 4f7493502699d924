"""make bench-peers arm: each topology with the polystreams Python SDK, written
as sdk-python/README.md writes it, against an engine the harness started
(polystreams serve)."""
from __future__ import annotations

import common
from polystreams import App, Config, Materialized, TimeWindows


def main() -> None:
    args = common.parser(__doc__ or "").parse_args()
    guarantee = "exactly_once_v2" if common.exactly_once(args.topology) else "at_least_once"
    app = App(args.app, Config(processing_guarantee=guarantee, commit_interval_ms=args.commit_ms,
                               extra={"state.dir": args.state_dir}), engine=args.engine)
    t = args.topology
    if t == "map_values":
        app.stream(args.input, value="string").map_values(str.upper).to(args.output)
    elif t == "word_count":
        (app.stream(args.input, value="string")
            .flat_map_values(str.split)
            .group_by(lambda key, word: word, key="string")
            .count()
            .to_stream()
            .to(args.output))
    elif t == "count":
        app.stream(args.input, key="string", value="string").group_by_key().count().to_stream().to(args.output)
    elif t in common.WINDOWS:
        # Records arrive in timestamp order on each partition: no grace.
        size, advance = common.WINDOWS[t]
        windowed = (app.stream(args.input, key="string", value="json")
                    .group_by_key()
                    .windowed_by(TimeWindows.of_size_with_no_grace(size).advance_by(advance)))
        if t == "hopping_sum":
            sums = windowed.aggregate(lambda: 0, lambda key, v, total: total + v["amount"],
                                      materialized=Materialized(value="long"))
        else:
            sums = windowed.count()
        sums.to_stream().to(args.output)  # keys: windowed(string, size), as Kafka Streams writes them
    elif t == "join":
        rates = app.table(args.table, key="string", value="json")
        (app.stream(args.input, key="string", value="json")
            .join(rates, lambda event, rate: str(event["amount"] * rate["rate"]), value="string")
            .to(args.output))
    elif t == "join_global":
        # A global table is restored whole before any event is processed.
        global_rates = app.global_table(args.table, key="string", value="json")
        (app.stream(args.input, key="string", value="json")
            .join(global_rates, lambda key, event: key, lambda event, rate: str(event["amount"] * rate["rate"]),
                  value="string")
            .to(args.output))
    else:
        (app.stream(args.input, key="string", value="json")
            .group_by_key()
            .aggregate(lambda: 0, lambda key, v, total: total + v["amount"],
                       materialized=Materialized(value="long"))
            .to_stream()
            .to(args.output))
    app.run()
    app.close()


if __name__ == "__main__":
    main()
