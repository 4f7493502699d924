// A TypeScript consumer of the npm package, type-checked (never run) by
// tools/dist/test.sh with `tsc --strict`, skipLibCheck off, in a fresh
// project: the package's .d.ts files must check there, with and without
// @types/node. It uses the README's program and the types a user names.
import { App } from "polystreams";

export async function wordcount(): Promise<string> {
  const app: App = await App.create("wordcount", { config: { commitIntervalMs: 100 } });
  const lines = app.stream("lines", { value: "string" });
  lines
    .flatMapValues((line) => line.split(/\s+/).filter(Boolean))
    .groupBy((_key, word) => word, { key: "string" })
    .count()
    .toStream()
    .to("word-counts");
  const text = await app.describe();
  await app[Symbol.asyncDispose]();
  return text;
}
