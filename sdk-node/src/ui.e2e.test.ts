// The engine's live page, /ui, end to end in headless Chromium (Debian's
// `chromium`, driven by playwright-core): a word count and a failing
// application run on one engine, and the test asserts on what the page
// shows. Screenshots go to $POLYSTREAMS_ARTIFACTS/ui (default
// <repo>/.artifacts/ui, ignored by git).
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { after, before, describe, test } from "node:test";
import { type Browser, type Locator, type Page, chromium } from "playwright-core";
import { App } from "./index.js";
import { Runner, appId, useEngine } from "./testing/app.js";
import { REPO, createTopics, engineBinary, produce, readUntil } from "./testing/kafka.js";

const stateDir = useEngine();
const CHROMIUM = process.env["POLYSTREAMS_CHROMIUM"] ?? "/usr/bin/chromium";
const ARTIFACTS = join(process.env["POLYSTREAMS_ARTIFACTS"] ?? join(REPO, ".artifacts"), "ui");

/** A dev engine of its own: its URL and its broker's address, read from its standard output. */
async function startEngine(): Promise<{ child: ChildProcess; url: string; broker: string }> {
  const child = spawn(engineBinary(), ["dev", "--listen", "127.0.0.1:0", "--broker", "127.0.0.1:0", "--exit-on-stdin-close", "--log-level", "warn"], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  let url = "";
  let broker = "";
  await new Promise<void>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`the engine exited (${code}) before serving`)));
    createInterface({ input: child.stdout! }).on("line", (line) => {
      broker ||= /^polystreams: broker (\S+)/.exec(line)?.[1] ?? "";
      url ||= /^polystreams: engine (\S+)/.exec(line)?.[1] ?? "";
      if (url && broker) {
        resolve();
      }
    });
  });
  return { child, url, broker };
}

/** Waits until every element loc matches has a text matching re (and there is one). */
async function until(loc: Locator, re: RegExp, timeoutMs = 30_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  let texts: string[] = [];
  while (Date.now() < deadline) {
    texts = await loc.allTextContents();
    if (texts.length > 0 && texts.every((t) => re.test(t))) {
      return texts;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`${String(loc)} shows ${JSON.stringify(texts)}, want ${String(re)}`);
}

describe("/ui in headless Chromium", { concurrency: false }, () => {
  let engine: Awaited<ReturnType<typeof startEngine>>;
  let browser: Browser;
  let page: Page;
  const apps: App[] = [];

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: run tools/install-deps.sh (apt chromium), or set POLYSTREAMS_CHROMIUM`);
    mkdirSync(ARTIFACTS, { recursive: true });
    engine = await startEngine();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  });

  after(async () => {
    for (const app of apps) {
      await app.close().catch(() => {});
    }
    await browser?.close();
    engine?.child.stdin?.end();
    engine?.child.kill();
  });

  async function open(): Promise<App> {
    const id = appId();
    const app = await App.create(id, { engine: engine.url, config: { stateDir: join(stateDir(), id), commitIntervalMs: 100 } });
    apps.push(app);
    return app;
  }

  test("shows the running topology, records/s per node, lag per task, store entries and state", async () => {
    await createTopics(engine.broker, { lines: 2, "word-counts": 2 });
    await produce(engine.broker, "lines", Array.from({ length: 3000 }, (_, i) => ({ key: `k${i}`, value: `a b c${i % 5}` })));
    const app = await open();
    app
      .stream("lines", { value: "string" })
      .flatMapValues((line) => line.split(" "))
      .groupBy((_key, word) => word, { key: "string" })
      .count({ materialized: "word-store" })
      .toStream()
      .to("word-counts");
    // Node names from describe's JSON: the named store shifts the numbers.
    const topo = JSON.parse(await app.describe({ format: "json" })) as { subtopologies: { nodes: { name: string; type: string; stores?: string[] }[] }[] };
    const nodes = topo.subtopologies.flatMap((s) => s.nodes);
    const agg = nodes.find((n) => n.stores?.includes("word-store"))!.name;
    const sink = nodes.filter((n) => n.type === "sink").at(-1)!.name;
    const runner = new Runner(app);
    await readUntil(engine.broker, "word-counts", (rs) => new Set(rs.map((r) => r.key!.toString())).size === 7, {
      timeoutMs: 60_000,
      check: runner.check,
    });

    await page.goto(`${engine.url}/ui/`);
    const section = page.locator(`section.app[data-app="${app.applicationId}"]`);
    await section.locator(".state", { hasText: "running" }).waitFor();
    assert.match((await page.locator("#engine-version").textContent()) ?? "", /^engine \d+\.\d+\.\d+/);
    // The topology, drawn by the engine: every node, topic and the store.
    const svg = section.locator(".graph svg.ps-topology");
    for (const node of ["KSTREAM-SOURCE-0000000000", "KSTREAM-FLATMAPVALUES-0000000001", agg, sink]) {
      await svg.locator(`g.ps-node[data-node="${node}"]`).waitFor();
    }
    await svg.locator('g.ps-topic[data-topic="lines"]').waitFor();
    await svg.locator('g.ps-store[data-store="word-store"]').waitFor();
    // Counters: the source read 3,000 records, the aggregation 9,000 words.
    const records = (node: string) => section.locator(`table.nodes tr[data-node="${node}"] td.records`);
    await until(records(agg), /^9000$/);
    assert.equal(await records("KSTREAM-SOURCE-0000000000").textContent(), "3000");
    assert.match((await section.locator('tr[data-node="KSTREAM-KEY-SELECT-0000000002"]').textContent()) ?? "", /fused into KSTREAM-FLATMAPVALUES-0000000001/);
    // Tasks: 2 partitions x 2 sub-topologies, caught up; the store's 7 words.
    assert.equal(await section.locator("table.tasks tbody tr").count(), 4);
    await until(section.locator("table.tasks td.lag"), /^0$/);
    await until(svg.locator('text.ps-stat[data-store="word-store"]'), /^7 entries$/);
    assert.match((await section.locator(".restore-text").textContent()) ?? "", /2 \/ 2 store partitions|nothing to restore/);

    // Live rates: more records arrive, and the source's label shows them per second.
    const more = produce(engine.broker, "lines", Array.from({ length: 30000 }, (_, i) => ({ key: `k${i}`, value: `a b c${i % 5}` })));
    await until(svg.locator('text.ps-stat[data-node="KSTREAM-SOURCE-0000000000"]'), /^[1-9][\d.]*k? rec\/s$/);
    await page.screenshot({ path: join(ARTIFACTS, "running.png"), fullPage: true });
    await more;
    assert.equal(runner.error, undefined);
  });

  test("shows a failed application's error, naming the node, and the recent errors", async () => {
    await createTopics(engine.broker, { bad: 1 });
    const app = await open();
    app
      .stream("bad", { value: "string" })
      .mapValues((): string => {
        throw new Error("boom on purpose");
      })
      .to("nowhere");
    const runner = new Runner(app);
    await produce(engine.broker, "bad", [{ value: "x" }]);
    await page.goto(`${engine.url}/ui/`);
    const section = page.locator(`section.app[data-app="${app.applicationId}"]`);
    await section.locator(".state", { hasText: "error" }).waitFor({ timeout: 30_000 });
    const error = (await section.locator(".app-error").textContent()) ?? "";
    assert.match(error, /boom on purpose/);
    assert.match(error, /KSTREAM-MAPVALUES-0000000001/);
    await section.locator(".app-errors li", { hasText: "application failed" }).first().waitFor();
    assert.equal(await section.locator(".failed").textContent(), "1");
    await page.screenshot({ path: join(ARTIFACTS, "failed.png"), fullPage: true });
    await runner.done;
    assert.ok(runner.error !== undefined, "run() rejects on the failure");
  });
});
