/**
 * The README program runs verbatim: the first ```ts block of
 * sdk-node/README.md, saved as wordcount.mts in an empty folder and run as
 * the README says (`npx tsx wordcount.mts`, `polystreams` resolved to this
 * package), against its own engine and embedded broker; fed a few lines, its
 * word counts are read back from Kafka.
 */

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { REPO, engineBinary, produce, readUntil, type Consumed } from "./testing/kafka.js";

const LINES = ["to be or not to be", "to do is to be"];
const WANT = { to: 4, be: 3, or: 1, not: 1, do: 1, is: 1 };
const HINT = /polystreams: embedded Kafka broker at (\S+) .*kcat -P -b \S+ -t (\S+)/;

/** The first fenced code block of readme in language lang. */
export function firstBlock(readme: string, lang: string): string {
  const m = new RegExp("^```" + lang + "\\n([\\s\\S]*?)^```", "m").exec(readFileSync(readme, "utf8"));
  assert.ok(m, `${readme} has no \`\`\`${lang} block`);
  return m[1]!;
}

function same(a: Record<string, number>, b: Record<string, number>): boolean {
  return JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());
}

function lastCounts(records: Consumed[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of records) {
    out[r.key!.toString()] = Number(r.value!.readBigInt64BE());
  }
  return out;
}

test("sdk-node/README.md opens with its title, then the README program", () => {
  const text = readFileSync(join(REPO, "sdk-node", "README.md"), "utf8");
  assert.ok(text.startsWith("# polystreams for Node.js\n\n```ts\n"), text.slice(0, 80));
});

test("the README program runs verbatim", async () => {
  const dir = mkdtempSync(join(tmpdir(), "polystreams-readme-"));
  try {
    writeFileSync(join(dir, "wordcount.mts"), firstBlock(join(REPO, "sdk-node", "README.md"), "ts"));
    // `polystreams` is this package's source, as an installed package's
    // dist would be.
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({ compilerOptions: { paths: { polystreams: [join(REPO, "sdk-node", "src", "index.ts")] } } }),
    );
    const child = spawn(process.execPath, ["--import", import.meta.resolve("tsx"), "wordcount.mts"], {
      cwd: dir,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, POLYSTREAMS_ENGINE: engineBinary(), TMPDIR: dir },
      detached: true, // its own process group: the Ctrl-C below reaches it as a terminal's would
    });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
    const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
    try {
      const deadline = Date.now() + 60_000;
      while (!HINT.test(err)) {
        assert.ok(Date.now() < deadline, `the program never printed the embedded broker's address: ${out}${err}`);
        assert.equal(child.exitCode, null, `the program exited early: ${out}${err}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const [, broker, topic] = HINT.exec(err)!;
      assert.equal(topic, "lines");
      await produce(broker!, topic!, LINES.map((value) => ({ value })));
      const got = lastCounts(
        await readUntil(broker!, "word-counts", (rs) => same(lastCounts(rs), WANT), { timeoutMs: 60_000 }),
      );
      assert.deepEqual(got, WANT);
      process.kill(-child.pid!, "SIGINT");
      const code = await exited;
      assert.equal(code, 0, `exit ${code}: ${out}${err}`);
      assert.match(out, /Sub-topology: 0/);
    } finally {
      if (child.exitCode === null) {
        process.kill(-child.pid!, "SIGKILL");
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
