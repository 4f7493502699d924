/**
 * The package as users get it: `npm pack`, installed into a fresh project
 * (offline as far as the dependencies are in the npm cache), type-checked
 * against its published declarations, and run against the real engine.
 */

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, test } from "node:test";
import { promisify } from "node:util";
import { engineBinary } from "./testing/kafka.js";

const run = promisify(execFile);
const PKG = resolve(import.meta.dirname, "..");
const tmp = mkdtempSync(join(tmpdir(), "polystreams-pack-"));

after(() => rmSync(tmp, { recursive: true, force: true }));

const SMOKE = `
import { App, InvalidArgumentError, PolystreamsError, type SerdeName } from "polystreams";

const app = await App.create("pack-smoke", { config: { stateDir: process.argv[2] } });
try {
  app.stream("lines", { value: "string" })
    .flatMapValues((line: string) => line.split(/\\s+/).filter(Boolean))
    .groupBy((_key, word) => word, { key: "string" })
    .count()
    .toStream()
    .to("word-counts");
  const refused = app.stream("x", { value: "xml" as SerdeName });
  const error = await refused.handle.then(() => undefined, (e: unknown) => e);
  if (!(error instanceof InvalidArgumentError) || !(error instanceof PolystreamsError)) {
    throw new Error("want an InvalidArgumentError, got " + String(error));
  }
  console.log(await app.describe());
} finally {
  await app.close();
}
`;

test("npm pack installs into a fresh project, type-checks and runs", { timeout: 120_000 }, async () => {
  const engine = engineBinary();
  const npm = "npm";
  const { stdout } = await run(npm, ["pack", "--json", "--pack-destination", tmp], { cwd: PKG, maxBuffer: 64 << 20 });
  const [packed] = JSON.parse(stdout.slice(stdout.indexOf("["))) as { filename: string; files: { path: string }[] }[];
  assert.ok(packed, "npm pack reported no package");
  const paths = packed.files.map((f) => f.path);
  assert.ok(paths.includes("dist/index.js") && paths.includes("dist/index.d.ts") && paths.includes("README.md"), paths.join(", "));
  assert.ok(!paths.some((p) => p.includes(".test.") || p.includes("testing/")), `tests are not shipped: ${paths.join(", ")}`);

  const project = join(tmp, "project");
  await run("mkdir", ["-p", project]);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "smoke", private: true, type: "module" }));
  await run(npm, ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", join(tmp, packed.filename)], {
    cwd: project,
    maxBuffer: 64 << 20,
  });
  const installed = JSON.parse(readFileSync(join(project, "node_modules", "polystreams", "package.json"), "utf8")) as { version: string };
  assert.equal(installed.version, "0.1.0");

  // The published declarations type-check a user's program (strict).
  writeFileSync(join(project, "smoke.ts"), SMOKE);
  writeFileSync(
    join(project, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "es2022",
        module: "nodenext",
        strict: true,
        noEmit: true,
        typeRoots: [join(PKG, "node_modules", "@types")],
        types: ["node"],
      },
      files: ["smoke.ts"],
    }),
  );
  await run(join(PKG, "node_modules", ".bin", "tsc"), ["-p", project]).catch((e: { stdout?: string; message: string }) =>
    assert.fail(`the published types do not check:\n${e.stdout ?? e.message}`),
  );

  // ... and the package runs from plain JavaScript, against the real engine.
  writeFileSync(join(project, "smoke.mjs"), SMOKE.replace(', type SerdeName', "").replace(' as SerdeName', "").replace("(line: string)", "(line)").replace("(e: unknown)", "(e)"));
  const out = await run(process.execPath, [join(project, "smoke.mjs"), join(tmp, "state")], {
    cwd: project,
    env: { ...process.env, POLYSTREAMS_ENGINE: engine, POLYSTREAMS_URL: "" },
  });
  assert.match(out.stdout, /^Topologies:\n {3}Sub-topology: 0\n {4}Source: KSTREAM-SOURCE-0000000000 \(topics: \[lines\]\)/);
  assert.match(out.stdout, /Sink: KSTREAM-SINK-0000000009 \(topic: word-counts\)/);
});
