/**
 * Finding and spawning the engine binary.
 *
 * An App with no engine URL runs its own engine as a child process:
 * `polystreams dev` (with an embedded Kafka broker) when no brokers are given,
 * else `polystreams serve --brokers ...`. The child binds free loopback ports
 * and prints where it serves; it exits when its standard input closes, so it
 * never outlives this process (however this process ends). It runs in its
 * own process group, so a Ctrl-C at the terminal reaches this process only,
 * which then stops the application cleanly before ending the engine.
 */

import { type ChildProcessByStdio, spawn } from "node:child_process";
import { createRequire } from "node:module";
import { accessSync, constants, statSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { EngineStartError, FailedPreconditionError } from "./errors.js";

const BROKER_LINE = "polystreams: broker ";
const ENGINE_LINE = "polystreams: engine ";
const LEVEL = /\blevel=(DEBUG|INFO|WARN|ERROR)\b/;

/** The level of an engine log line. */
export type LogLevel = "debug" | "info" | "warn" | "error";

/**
 * Receives the engine's log lines (its standard error, and what it prints
 * after it starts serving). The default writes warnings and errors to this
 * process's standard error.
 */
export type EngineLogger = (level: LogLevel, line: string) => void;

/** The default EngineLogger: warnings and errors to standard error, prefixed `polystreams engine: `. */
export const defaultLogger: EngineLogger = (level, line) => {
  if (level === "warn" || level === "error") {
    process.stderr.write(`polystreams engine: ${line}\n`);
  }
};

/**
 * The line an App that spawned `polystreams dev` prints when it starts:
 * where the embedded broker is, and a way to feed it records (kcat, one
 * record per line of input).
 */
export function feedHint(broker: string, topics: readonly string[], commitIntervalMs: string): string {
  return (
    `polystreams: embedded Kafka broker at ${broker} (app.brokers; missing topics are created, results ` +
    `commit every ${commitIntervalMs} ms); feed it: printf 'to be or not to be\\n' | kcat -P -b ${broker} -t ${topics[0] ?? "<topic>"}`
  );
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * The engine bundled for this platform: the binary of the optional dependency
 * `@polystreams/<platform>-<arch>` (`@polystreams/linux-x64`,
 * `@polystreams/linux-arm64`), which npm installs beside this package on the
 * platform it is for (the esbuild pattern). Undefined when there is none.
 */
export function bundledEngine(platform: string = process.platform, arch: string = process.arch): string | undefined {
  try {
    const path = createRequire(import.meta.url).resolve(`@polystreams/${platform}-${arch}/bin/polystreams`);
    return executable(path) ? path : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The engine binary: `$POLYSTREAMS_ENGINE`, else the one bundled for this
 * platform ({@link bundledEngine}, of this package's own version), else
 * `polystreams` on PATH, else `bin/polystreams` in a directory above this
 * package (a checkout of the repository, after `make build`). Throws
 * EngineStartError when none is found.
 */
export function findEngine(env: Readonly<Record<string, string | undefined>> = process.env, from: string = dirname(fileURLToPath(import.meta.url))): string {
  const explicit = env["POLYSTREAMS_ENGINE"];
  if (explicit) {
    if (!executable(explicit)) {
      throw new EngineStartError("unavailable", `POLYSTREAMS_ENGINE=${explicit} is not an executable file`);
    }
    return explicit;
  }
  const bundled = bundledEngine();
  if (bundled) {
    return bundled;
  }
  for (const dir of (env["PATH"] ?? "").split(delimiter)) {
    if (dir && executable(join(dir, "polystreams"))) {
      return join(dir, "polystreams");
    }
  }
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, "bin", "polystreams");
    if (executable(candidate)) {
      return candidate;
    }
    if (dirname(dir) === dir) {
      break;
    }
  }
  throw new EngineStartError(
    "unavailable",
    "the polystreams engine binary was not found: set POLYSTREAMS_ENGINE to its path, put `polystreams` on PATH, " +
      "give App.create(id, { engine: 'http://host:port' }) of a running engine, or build it in the repository with `make build`",
  );
}

/** The part of a version that must match: major, and minor too before 1.0. */
function compat(version: string): string | undefined {
  const m = /^(\d+)\.(\d+)/.exec(version);
  if (!m) {
    return undefined;
  }
  return m[1] === "0" ? `0.${m[2]}` : m[1];
}

/**
 * Throws FailedPreconditionError naming both versions when the engine's
 * (OpenSessionResponse.version) is incompatible with this SDK's. Engine and
 * SDKs share one version; they are compatible when their major versions (and,
 * before 1.0, their minor versions) are equal. An engine that reports none
 * (older than the field) or `dev` (an unstamped build) is accepted.
 */
export function checkEngineVersion(engine: string, sdk: string): void {
  if (engine === "" || engine === "dev" || compat(engine) === compat(sdk)) {
    return;
  }
  const same = sdk.startsWith("0.") ? "major and minor" : "major";
  throw new FailedPreconditionError(
    "failed_precondition",
    `engine version ${engine} is incompatible with this SDK's version ${sdk}: engine, protocol and SDKs share ` +
      `one version, and an SDK needs an engine of the same ${same} version (the one bundled in the package is)`,
  );
}

/** Options of EngineProcess.start. */
export interface EngineStartOptions {
  /** `serve --brokers` these; absent: `dev`, with an embedded broker. */
  brokers?: string | undefined;
  /** How long to wait for the engine to report its address (default 30000 ms). */
  startTimeoutMs?: number | undefined;
  logger?: EngineLogger | undefined;
}

/**
 * An engine child process. `url` is where it serves the protocol, `broker`
 * the embedded broker's address (`dev` only, else undefined).
 */
export class EngineProcess {
  readonly url: string;
  readonly broker: string | undefined;
  readonly pid: number;
  readonly argv: readonly string[];
  private readonly child: ChildProcessByStdio<Writable, Readable, Readable>;
  private readonly exited: Promise<void>;

  private constructor(init: {
    url: string;
    broker: string | undefined;
    argv: string[];
    child: ChildProcessByStdio<Writable, Readable, Readable>;
    exited: Promise<void>;
  }) {
    this.url = init.url;
    this.broker = init.broker;
    this.argv = init.argv;
    this.child = init.child;
    this.pid = init.child.pid ?? 0;
    this.exited = init.exited;
  }

  /** Spawns `binary` and waits until it reports where it serves. */
  static async start(binary: string, options: EngineStartOptions = {}): Promise<EngineProcess> {
    const argv = [binary];
    if (options.brokers) {
      argv.push("serve", "--brokers", options.brokers);
    } else {
      argv.push("dev", "--broker", "127.0.0.1:0");
    }
    argv.push("--listen", "127.0.0.1:0", "--exit-on-stdin-close");
    const logger = options.logger ?? defaultLogger;
    const cmd = "engine `" + argv.join(" ") + "`";
    const tail: string[] = [];
    const tailText = (): string => (tail.length ? `; its last output:\n${tail.join("\n")}` : "");

    const child = spawn(binary, argv.slice(1), { stdio: ["pipe", "pipe", "pipe"], detached: true });
    child.stdin.on("error", () => {}); // EPIPE once the engine is gone: nothing to do
    const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));

    // Drained always (a full pipe would block the engine): kept as a tail for
    // start errors and handed to the logger.
    createInterface({ input: child.stderr, crlfDelay: Infinity }).on("line", (line) => {
      if (!line) {
        return;
      }
      tail.push(line);
      if (tail.length > 40) {
        tail.shift();
      }
      const m = LEVEL.exec(line);
      logger(m ? (m[1]!.toLowerCase() as LogLevel) : "warn", line);
    });

    const startTimeoutMs = options.startTimeoutMs ?? 30_000;
    let broker: string | undefined;
    let serving = false;
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        kill();
        reject(new EngineStartError("unavailable", `${cmd} did not report its address within ${startTimeoutMs} ms${tailText()}`));
      }, startTimeoutMs);
      const kill = (): void => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill("SIGKILL");
        }
      };
      child.once("error", (e) => {
        clearTimeout(timer);
        reject(new EngineStartError("unavailable", `cannot start the engine ${binary}: ${e.message}`));
      });
      createInterface({ input: child.stdout, crlfDelay: Infinity }).on("line", (line) => {
        if (serving) {
          logger("info", line); // after the address lines the engine prints little
        } else if (line.startsWith(BROKER_LINE)) {
          broker = line.slice(BROKER_LINE.length).trim();
        } else if (line.startsWith(ENGINE_LINE)) {
          serving = true;
          clearTimeout(timer);
          resolve(line.slice(ENGINE_LINE.length).trim());
        }
      });
      child.once("close", (code, signal) => {
        clearTimeout(timer);
        // A close after resolve() is a no-op for this promise.
        setImmediate(() =>
          reject(
            new EngineStartError(
              "unavailable",
              `${cmd} exited with ${signal ? `signal ${signal}` : `status ${code}`} before serving${tailText()}`,
            ),
          ),
        );
      });
    });
    // From now on the engine must not keep this process alive: it lives as
    // long as this process does, and the App's calls keep the process alive
    // while there is work.
    child.unref();
    for (const s of [child.stdin, child.stdout, child.stderr] as unknown as { unref?: () => void }[]) {
      s.unref?.();
    }
    return new EngineProcess({ url, broker, argv, child, exited });
  }

  /** Whether the engine is still running. */
  alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Stops the engine: closes its stdin, SIGTERM, waits up to timeoutMs, then SIGKILL. */
  async close(timeoutMs = 15_000): Promise<void> {
    const child = this.child;
    child.stdin.end();
    if (!this.alive()) {
      await this.exited;
      return;
    }
    child.kill("SIGTERM");
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      this.exited.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      process.emitWarning(`polystreams: engine ${this.pid} did not stop within ${timeoutMs} ms; killing it`);
      child.kill("SIGKILL");
      await this.exited;
    }
  }
}
