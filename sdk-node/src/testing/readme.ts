/**
 * README programs as tests: a fenced ```ts block of sdk-node/README.md,
 * saved in an empty folder and run as a user would (tsx, `polystreams`
 * resolved to this package's source), against its own engine. Tests that
 * feed a running program (readme.e2e.test.ts) drive the process themselves.
 */

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { REPO, engineBinary } from "./kafka.js";

const README = join(REPO, "sdk-node", "README.md");

/** The ```ts block following the line `heading` in sdk-node/README.md. */
export function readmeBlock(heading: string): string {
  const text = readFileSync(README, "utf8");
  const at = text.indexOf(`\n${heading}\n`);
  assert.ok(at >= 0, `${README} has no ${heading}`);
  const m = /^```ts\n([\s\S]*?)^```/m.exec(text.slice(at));
  assert.ok(m, `${README} has no \`\`\`ts block after ${heading}`);
  return m[1]!;
}

/**
 * Runs the ```ts block after heading to its end (killed after 120 s) and
 * answers its trimmed stdout; a non-zero exit fails with what it printed.
 */
export async function runReadmeBlock(heading: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "polystreams-readme-"));
  try {
    writeFileSync(join(dir, "block.mts"), readmeBlock(heading));
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { paths: { polystreams: [join(REPO, "sdk-node", "src", "index.ts")] } } }));
    const child = spawn(process.execPath, ["--import", import.meta.resolve("tsx"), "block.mts"], {
      cwd: dir,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, POLYSTREAMS_ENGINE: engineBinary(), TMPDIR: dir },
    });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
    clearTimeout(timer);
    assert.equal(code, 0, `${heading}: exit ${code} (killed after 120 s if null): ${out}${err}`);
    return out.trim();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
