/** Runs sdk-node/README.md's code blocks as a user would (tsx). @internal */

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { REPO, engineBinary } from "./kafka.js";

/** The ```ts block following `heading` in readme. */
export function blockAfter(readme: string, heading: string): string {
  const text = readFileSync(readme, "utf8");
  const at = text.indexOf(`\n${heading}\n`);
  assert.ok(at >= 0, `${readme} has no ${heading}`);
  const m = /^```ts\n([\s\S]*?)^```/m.exec(text.slice(at));
  assert.ok(m, `${readme} has no \`\`\`ts block after ${heading}`);
  return m[1]!;
}

/** Runs the ```ts block after heading of sdk-node/README.md as a user would (tsx); answers its stdout. */
export async function runReadmeBlock(heading: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "polystreams-readme-"));
  try {
    writeFileSync(join(dir, "block.mts"), blockAfter(join(REPO, "sdk-node", "README.md"), heading));
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
