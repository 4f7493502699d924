/**
 * Cogroups (KIP-150) against the real engine: the README's cogroup program
 * run verbatim (the ```ts block under "### Cogroup" in sdk-node/README.md),
 * and a session cogroup through the test driver.
 */

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { SessionWindows, TopologyTestDriver } from "./index.js";
import { useEngine } from "./testing/app.js";
import { REPO, engineBinary } from "./testing/kafka.js";

useEngine();

function blockAfter(readme: string, heading: string): string {
  const text = readFileSync(readme, "utf8");
  const at = text.indexOf(`\n${heading}\n`);
  assert.ok(at >= 0, `${readme} has no ${heading}`);
  const m = /^```ts\n([\s\S]*?)^```/m.exec(text.slice(at));
  assert.ok(m, `${readme} has no \`\`\`ts block after ${heading}`);
  return m[1]!;
}

test("the README's cogroup program runs verbatim", async () => {
  const dir = mkdtempSync(join(tmpdir(), "polystreams-readme-cogroup-"));
  try {
    writeFileSync(join(dir, "cogroup.mts"), blockAfter(join(REPO, "sdk-node", "README.md"), "### Cogroup"));
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { paths: { polystreams: [join(REPO, "sdk-node", "src", "index.ts")] } } }));
    const child = spawn(process.execPath, ["--import", import.meta.resolve("tsx"), "cogroup.mts"], {
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
    assert.equal(code, 0, `exit ${code} (killed after 120 s if null): ${out}${err}`);
    assert.equal(out.trim(), 'ann={"clicks":1,"spent":0} ann={"clicks":1,"spent":30} bob={"clicks":1,"spent":0}');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a session cogroup merges the sessions a record of another stream bridges", async () => {
  await using driver = await TopologyTestDriver.create(`cogroup-sessions-${process.pid}`);
  const amounts = driver.stream("amounts", { key: "string", value: "long" }).groupByKey();
  const pings = driver.stream("pings", { key: "string", value: "long" }).groupByKey();
  const table = amounts
    .cogroup((_k, v: bigint, a: bigint) => a + v)
    .cogroup(pings, (_k, _v, a) => a + 1n)
    .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(5))
    .aggregate(() => 0n, (_k, a, b) => a + b, { materialized: { value: "long", retentionMs: 60_000 } });
  table.toStream().to("sessions");
  await driver.pipeInput("amounts", "k", 10n, { timestamp: 0 });
  await driver.pipeInput("amounts", "k", 20n, { timestamp: 10 });
  await driver.pipeInput("pings", "k", 0n, { timestamp: 5 });
  const out = await driver.readOutput("sessions");
  assert.deepEqual(
    out.map((r) => [(r.key as { start: number }).start, (r.key as { end: number }).end, r.value]),
    [[0, 0, 10n], [10, 10, 20n], [0, 0, null], [10, 10, null], [0, 10, 31n]],
  );
});
