import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { EngineProcess, bundledEngine, checkEngineVersion, findEngine } from "./engine.js";
import { EngineStartError, FailedPreconditionError, UnavailableError } from "./errors.js";

const dir = mkdtempSync(join(tmpdir(), "polystreams-engine-"));
after(() => rmSync(dir, { recursive: true, force: true }));

function script(name: string, body: string): string {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

describe("findEngine", () => {
  test("$POLYSTREAMS_ENGINE wins, and must be executable", () => {
    const bin = script("engine-env", "exit 0");
    assert.equal(findEngine({ POLYSTREAMS_ENGINE: bin, PATH: "" }, dir), bin);
    assert.throws(() => findEngine({ POLYSTREAMS_ENGINE: join(dir, "missing") }, dir), {
      name: "EngineStartError",
      message: /POLYSTREAMS_ENGINE=.*missing is not an executable file/,
    });
  });

  test("then polystreams on PATH, then bin/polystreams above the package", () => {
    const pathDir = join(dir, "path");
    mkdirSync(pathDir, { recursive: true });
    const onPath = join(pathDir, "polystreams");
    writeFileSync(onPath, "#!/bin/sh\n");
    chmodSync(onPath, 0o755);
    assert.equal(findEngine({ PATH: `/nonexistent:${pathDir}` }, dir), onPath);

    const repo = join(dir, "repo");
    mkdirSync(join(repo, "bin"), { recursive: true });
    mkdirSync(join(repo, "sdk-node", "dist"), { recursive: true });
    writeFileSync(join(repo, "bin", "polystreams"), "#!/bin/sh\n");
    chmodSync(join(repo, "bin", "polystreams"), 0o755);
    assert.equal(findEngine({ PATH: "" }, join(repo, "sdk-node", "dist")), join(repo, "bin", "polystreams"));
  });

  test("none found: an error that says how to get one", () => {
    assert.throws(() => findEngine({ PATH: "" }, "/"), (e: unknown) => {
      assert.ok(e instanceof EngineStartError && e instanceof UnavailableError);
      assert.equal(e.code, "unavailable");
      assert.match(e.message, /POLYSTREAMS_ENGINE/);
      assert.match(e.message, /make build/);
      return true;
    });
  });
});

describe("EngineProcess", () => {
  test("an engine that exits before serving: EngineStartError with its stderr", async () => {
    const bin = script("engine-dies", 'echo "level=ERROR msg=\\"cannot bind\\"" >&2; exit 3');
    await assert.rejects(EngineProcess.start(bin, { logger: () => {} }), (e: unknown) => {
      assert.ok(e instanceof EngineStartError, String(e));
      assert.match(e.message, /exited with status 3 before serving/);
      assert.match(e.message, /cannot bind/);
      return true;
    });
  });

  test("reads the broker and engine lines, passes its arguments, and closes", async () => {
    const bin = script(
      "engine-fake",
      'echo "$@" > "$(dirname "$0")/args"; echo "polystreams: broker 127.0.0.1:1"; echo "polystreams: engine http://127.0.0.1:2"; cat >/dev/null',
    );
    const lines: string[] = [];
    const engine = await EngineProcess.start(bin, { logger: (_l, line) => void lines.push(line) });
    assert.equal(engine.url, "http://127.0.0.1:2");
    assert.equal(engine.broker, "127.0.0.1:1");
    assert.deepEqual(engine.argv.slice(1), ["dev", "--broker", "127.0.0.1:0", "--listen", "127.0.0.1:0", "--exit-on-stdin-close"]);
    assert.ok(engine.alive());
    await engine.close(); // closing stdin ends `cat`, as it ends the real engine
    assert.ok(!engine.alive());
  });

  test("serve --brokers when brokers are given; a silent engine times out", async () => {
    const bin = script("engine-silent", "sleep 30");
    await assert.rejects(EngineProcess.start(bin, { brokers: "kafka:9092", startTimeoutMs: 200, logger: () => {} }), {
      name: "EngineStartError",
      message: /engine `.*engine-silent serve --brokers kafka:9092 --listen 127\.0\.0\.1:0 --exit-on-stdin-close` did not report its address within 200 ms/,
    });
  });
});

describe("checkEngineVersion", () => {
  test("accepts the same major (and, before 1.0, minor) version, dev builds and engines that report none", () => {
    for (const [engine, sdk] of [["0.1.0", "0.1.0"], ["0.1.7", "0.1.0"], ["1.4.0", "1.0.2"], ["dev", "0.1.0"], ["", "0.1.0"]] as const) {
      checkEngineVersion(engine, sdk);
    }
  });
  test("refuses another, naming both versions", () => {
    for (const [engine, sdk] of [["0.2.0", "0.1.0"], ["99.0.0", "0.1.0"], ["2.0.0", "1.3.0"]] as const) {
      assert.throws(() => checkEngineVersion(engine, sdk), (e: unknown) => {
        assert.ok(e instanceof FailedPreconditionError);
        assert.match(e.message, new RegExp(`engine version ${engine.replaceAll(".", "\\.")} .*version ${sdk.replaceAll(".", "\\.")}`));
        return true;
      });
    }
  });
});

test("bundledEngine is undefined when no platform package is installed", () => {
  assert.equal(bundledEngine("linux", "no-such-arch"), undefined);
});
