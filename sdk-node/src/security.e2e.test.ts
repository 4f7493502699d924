// The Node SDK against a real engine that requires a token and serves TLS.
import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { after, before, describe, test } from "node:test";
import { App } from "./index.js";
import { engineBinary } from "./testing/kafka.js";

const TOKEN = "node-token-8c2f-planted";

describe("an engine with a token and TLS", () => {
  let dir = "";
  let url = "";
  let ca = "";
  let proc: ChildProcess | undefined;
  let output = "";

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "polystreams-sec-"));
    ca = join(dir, "cert.pem");
    const key = join(dir, "key.pem");
    execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
      "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", key, "-out", ca], { stdio: "ignore" });
    proc = spawn(engineBinary(), ["dev", "--listen", "127.0.0.1:0", "--broker", "127.0.0.1:0", "--state-dir", join(dir, "state"),
      "--tls-cert", ca, "--tls-key", key, "--exit-on-stdin-close"], { env: { ...process.env, POLYSTREAMS_TOKEN: TOKEN } });
    proc.stderr?.on("data", (b: Buffer) => { output += b.toString(); });
    const lines = createInterface({ input: proc.stdout! });
    for await (const line of lines) {
      output += line + "\n";
      if (line.startsWith("polystreams: engine ")) {
        url = line.slice("polystreams: engine ".length);
        break;
      }
    }
    assert.match(url, /^https:\/\/127\.0\.0\.1:\d+$/);
    delete process.env["POLYSTREAMS_TOKEN"];
    delete process.env["POLYSTREAMS_CA_FILE"];
  });

  after(() => {
    proc?.kill("SIGTERM");
    rmSync(dir, { recursive: true, force: true });
    assert.ok(!output.includes(TOKEN), "the engine's output shows the token");
  });

  for (const token of [undefined, "wrong-token"]) {
    test(`token ${token ?? "(none)"} is unauthenticated`, async () => {
      await assert.rejects(App.create("sec-node", { engine: url, caFile: ca, ...(token ? { token } : {}) }), (e: Error & { code?: string }) => {
        assert.equal(e.code, "unauthenticated", String(e));
        assert.ok(!e.message.includes(TOKEN));
        return true;
      });
    });
  }

  test("the token and caFile open a session", async () => {
    const app = await App.create("sec-node", { engine: url, caFile: ca, token: TOKEN, config: { stateDir: join(dir, "s1") } });
    try {
      assert.equal(await app.state(), "created");
    } finally {
      await app.close();
    }
  });

  test("a missing caFile is refused naming it", async () => {
    await assert.rejects(App.create("sec-node", { engine: url, caFile: join(dir, "absent.pem"), token: TOKEN }), /CA file ".*absent\.pem"/);
  });

  test("$POLYSTREAMS_TOKEN and $POLYSTREAMS_CA_FILE are the defaults", async () => {
    process.env["POLYSTREAMS_TOKEN"] = TOKEN;
    process.env["POLYSTREAMS_CA_FILE"] = ca;
    try {
      const app = await App.create("sec-node-env", { engine: url, config: { stateDir: join(dir, "s2") } });
      assert.equal(await app.state(), "created");
      await app.close();
    } finally {
      delete process.env["POLYSTREAMS_TOKEN"];
      delete process.env["POLYSTREAMS_CA_FILE"];
    }
  });
});
