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
import { accessSync, constants, statSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { EngineStartError } from "./errors.js";

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

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * The engine binary: `$POLYSTREAMS_ENGINE`, else `polystreams` on PATH, else
 * `bin/polystreams` in a directory above this package (a checkout of the
 * repository, after `make build`). Throws EngineStartError when none is found.
 */
export function findEngine(env: NodeJS.ProcessEnv = process.env, from: string = dirname(fileURLToPath(import.meta.url))): string {
  const explicit = env["POLYSTREAMS_ENGINE"];
  if (explicit) {
    if (!executable(explicit)) {
      throw new EngineStartError("unavailable", `POLYSTREAMS_ENGINE=${explicit} is not an executable file`);
    }
    return explicit;
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
