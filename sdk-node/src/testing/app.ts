/**
 * Test support for the integration tests: Apps on the real engine binary,
 * each with its own application.id and state directory, and run() in the
 * background.
 */

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";
import { App, type AppOptions } from "../index.js";
import { engineBinary } from "./kafka.js";

let dir = "";
let seq = 0;
let missingEngine: unknown;

/**
 * Registers the hooks of a test file that opens Apps: the engine binary is
 * found (or every test fails with the reason, never a skip) and a state
 * directory made and removed. Returns that directory.
 */
export function useEngine(): () => string {
  before(() => {
    try {
      process.env["POLYSTREAMS_ENGINE"] = engineBinary();
    } catch (e) {
      missingEngine = e; // every test fails with it: never a skip
    }
    delete process.env["POLYSTREAMS_URL"];
    dir = mkdtempSync(join(tmpdir(), "polystreams-node-"));
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  return () => dir;
}

/** Throws the reason the engine binary is missing, if it is. */
export function requireEngine(): void {
  if (missingEngine !== undefined) {
    throw missingEngine;
  }
}

/** A fresh application.id. */
export function appId(): string {
  return `it-node-${process.pid}-${++seq}`;
}

/** An App on a spawned dev engine, with its own state directory and a 100 ms commit interval. */
export function open(options: AppOptions = {}): Promise<App> {
  requireEngine();
  const id = appId();
  return App.create(id, { ...options, config: { stateDir: join(dir, id), commitIntervalMs: 100, ...options.config } });
}

/** app.run() in the background; `error` is what it rejected with. */
export class Runner {
  error: unknown = undefined;
  returned = false;
  readonly done: Promise<void>;
  constructor(app: App) {
    this.done = app.run({ signals: false }).then(
      () => void (this.returned = true),
      (e: unknown) => void (this.error = e),
    );
  }
  check = (): void => {
    if (this.error !== undefined) {
      assert.fail(`app.run() failed: ${String(this.error)}`);
    }
  };
}
