/**
 * Test support: the real engine binary, and an independent Kafka client
 * (kafka_tool.py, confluent-kafka) to produce input and read output.
 */

import { execFile } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const HERE = dirname(fileURLToPath(import.meta.url));
const TOOL = join(HERE, "kafka_tool.py");
/** Debian's interpreter, which sees the apt package python3-confluent-kafka. */
const PYTHON = process.env["POLYSTREAMS_TEST_PYTHON"] ?? "/usr/bin/python3";

/** The repository's root (sdk-node/src/testing -> ../../..). */
export const REPO = resolve(HERE, "..", "..", "..");

/**
 * The engine binary the integration tests run: $POLYSTREAMS_ENGINE, else
 * <repo>/bin/polystreams. Throws (the tests fail, never skip) when missing.
 */
export function engineBinary(): string {
  const path = process.env["POLYSTREAMS_ENGINE"] || join(REPO, "bin", "polystreams");
  try {
    accessSync(path, constants.X_OK);
  } catch {
    throw new Error(
      `the polystreams engine binary ${path} does not exist: build it with ` +
        `\`cd ${REPO} && go build -o bin/polystreams ./core/cmd/polystreams\` (or \`make build\`), ` +
        "or set POLYSTREAMS_ENGINE to its path",
    );
  }
  return path;
}

async function tool(args: string[], input?: string): Promise<string> {
  const child = run(PYTHON, [TOOL, ...args], { maxBuffer: 256 << 20 });
  if (input !== undefined) {
    child.child.stdin!.end(input);
  }
  try {
    return (await child).stdout;
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(`kafka_tool.py ${args[0]}: ${err.message}\n${err.stderr ?? ""}`);
  }
}

/** Creates topics: name -> partitions. */
export async function createTopics(broker: string, topics: Record<string, number>): Promise<void> {
  await tool(["create", broker, ...Object.entries(topics).map(([t, p]) => `${t}:${p}`)]);
}

/** A record to produce: strings as UTF-8, null as a Kafka null. */
export interface Produce {
  key?: string | null;
  value: string | null;
  partition?: number;
  /** The record's timestamp, epoch ms (absent: the producer's clock). */
  timestamp?: number;
}

/**
 * Produces records. `partitioner` is librdkafka's (default: its own CRC32
 * one); `murmur2_random` places keys as Kafka's Java clients and the engine
 * do, which a table joined with a repartitioned stream needs.
 */
export async function produce(broker: string, topic: string, records: readonly Produce[], options: { partitioner?: string } = {}): Promise<void> {
  await tool(["produce", broker, topic, ...(options.partitioner ? [options.partitioner] : [])], JSON.stringify(records));
}

/** The partition count of topic (0: no such topic). */
export async function partitionCount(broker: string, topic: string): Promise<number> {
  return Number((await tool(["partitions", broker, topic])).trim());
}

/** A consumed record, its key and value as raw bytes. */
export interface Consumed {
  partition: number;
  offset: number;
  key: Buffer | null;
  value: Buffer | null;
}

/** Every record of topic up to its current end, all partitions. */
export async function consume(broker: string, topic: string): Promise<Consumed[]> {
  const rows = JSON.parse(await tool(["consume", broker, topic])) as {
    partition: number;
    offset: number;
    key: string | null;
    value: string | null;
  }[];
  return rows.map((r) => ({
    partition: r.partition,
    offset: r.offset,
    key: r.key === null ? null : Buffer.from(r.key, "hex"),
    value: r.value === null ? null : Buffer.from(r.value, "hex"),
  }));
}

/**
 * Reads topic until done(records) or timeoutMs; returns the last read.
 * `check` runs before each read (e.g. to fail fast when run() failed).
 */
export async function readUntil(
  broker: string,
  topic: string,
  done: (records: Consumed[]) => boolean,
  options: { timeoutMs: number; check?: () => void },
): Promise<Consumed[]> {
  const deadline = Date.now() + options.timeoutMs;
  let records: Consumed[] = [];
  while (Date.now() < deadline) {
    options.check?.();
    records = await consume(broker, topic);
    if (done(records)) {
      return records;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return records;
}
