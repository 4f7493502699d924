// The README's program, installed from the npm tarballs into a fresh project
// by tools/dist/test.sh. Added around it: commitIntervalMs 100, three lines
// seeded with kcat, and a loop that reads word-counts back with kcat, prints
// the counts and stops the app.
import { execFileSync, spawnSync } from "node:child_process";
import { App } from "polystreams";

const LINES = "the quick brown fox\nthe lazy dog\nthe end\n";
const WANT = "brown=1 dog=1 end=1 fox=1 lazy=1 quick=1 the=3";

async function check(app) {
  let got = "";
  for (const deadline = Date.now() + 90_000; got !== WANT && Date.now() < deadline; ) {
    await new Promise((r) => setTimeout(r, 500));
    const out = spawnSync("kcat", ["-C", "-b", app.brokers, "-t", "word-counts", "-e", "-q", "-s", "value=q", "-f", "%k=%s\n"], { encoding: "utf8" }).stdout;
    const counts = new Map(out.split("\n").filter((l) => l.includes("=")).map((l) => l.split("=")));
    got = [...counts].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => `${k}=${v}`).join(" ");
  }
  console.log(`counts: ${got}`);
  await app.stop();
}

const app = await App.create("wordcount", { config: { commitIntervalMs: 100 } });
app.stream("lines", { value: "string" })
  .flatMapValues((line) => line.split(/\s+/).filter(Boolean))
  .groupBy((_key, word) => word, { key: "string" })
  .count()
  .toStream()
  .to("word-counts");
console.log(await app.describe());
execFileSync("kcat", ["-P", "-b", app.brokers, "-t", "lines"], { input: LINES });
const checked = check(app);
await app.run();
await checked;
await app.close();
