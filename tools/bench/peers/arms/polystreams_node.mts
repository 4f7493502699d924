/**
 * make bench-peers arm: each topology with the polystreams Node SDK, written as
 * sdk-node/README.md writes it, against an engine the harness started
 * (polystreams serve). Run from sdk-node/ with `node --import tsx`; takes the
 * flags every arm takes (arms/common.py).
 */

import { parseArgs } from "node:util";
import { App, type Config, TimeWindows } from "../../../../sdk-node/src/index.js";

const { values: args } = parseArgs({
  options: {
    brokers: { type: "string" },
    app: { type: "string" },
    input: { type: "string" },
    output: { type: "string" },
    topology: { type: "string" },
    "commit-ms": { type: "string" },
    "state-dir": { type: "string" },
    table: { type: "string" },
    engine: { type: "string" },
  },
});
for (const required of ["engine", "app", "input", "output", "topology", "commit-ms", "state-dir"] as const) {
  if (!args[required]) {
    throw new Error(`polystreams_node: --${required} is required`);
  }
}

const topology = args.topology!;
if (topology.startsWith("join") && !args.table) {
  throw new Error(`polystreams_node: --table is required for ${topology}`);
}
const config: Config = {
  processingGuarantee: topology === "sum_eos" ? "exactly_once_v2" : "at_least_once",
  commitIntervalMs: Number(args["commit-ms"]),
  extra: { "state.dir": args["state-dir"]! },
};
const app = await App.create(args.app!, { engine: args.engine!, config });
if (topology === "map_values") {
  app.stream(args.input!, { value: "string" }).mapValues((v) => v.toUpperCase()).to(args.output!);
} else if (topology === "word_count") {
  app.stream(args.input!, { value: "string" })
    .flatMapValues((line) => line.split(/\s+/).filter(Boolean))
    .groupBy((_key, word) => word, { key: "string" })
    .count()
    .toStream()
    .to(args.output!);
} else if (topology === "count") {
  app.stream(args.input!, { key: "string", value: "string" }).groupByKey().count().toStream().to(args.output!);
} else if (topology === "sum_eos" || topology === "sum_alos") {
  app
    .stream(args.input!, { key: "string", value: "json" })
    .groupByKey()
    .aggregate(
      () => 0n,
      (_key, v: { amount: number }, total: bigint) => total + BigInt(v.amount),
      { materialized: { value: "long" } },
    )
    .toStream()
    .to(args.output!);
} else if (topology === "tumbling_count" || topology === "hopping_count" || topology === "hopping_sum") {
  // Records arrive in timestamp order on each partition: no grace. The
  // output keys are windowed(string, 60000), as Kafka Streams writes them.
  const windows = TimeWindows.ofSizeWithNoGrace(60_000).advanceBy(topology === "tumbling_count" ? 60_000 : 15_000);
  const windowed = app.stream(args.input!, { key: "string", value: "json" }).groupByKey().windowedBy(windows);
  const results =
    topology === "hopping_sum"
      ? windowed.aggregate(
          () => 0n,
          (_key, v: { amount: number }, total: bigint) => total + BigInt(v.amount),
          { materialized: { value: "long" } },
        )
      : windowed.count();
  results.toStream().to(args.output!);
} else if (topology === "join") {
  const rates = app.table(args.table!, { key: "string", value: "json" });
  app
    .stream(args.input!, { key: "string", value: "json" })
    .join(rates, (event: { amount: number }, rate: { rate: number }) => String(event.amount * rate.rate), {
      value: "string",
    })
    .to(args.output!);
} else if (topology === "join_global") {
  // A global table is restored whole before any event is processed.
  const rates = app.globalTable(args.table!, { key: "string", value: "json" });
  app
    .stream(args.input!, { key: "string", value: "json" })
    .join(
      rates,
      (key: string) => key,
      (event: { amount: number }, rate: { rate: number }) => String(event.amount * rate.rate),
      { value: "string" },
    )
    .to(args.output!);
} else {
  throw new Error(`polystreams_node: unknown --topology ${JSON.stringify(topology)}`);
}
await app.run(); // until SIGTERM
await app.close();
