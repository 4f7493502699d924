/**
 * The Connect client of one engine: EngineService over HTTP/1.1 with
 * keep-alive connections (Node's http Agent), unary calls only. Every failure
 * is turned into a PolystreamsError naming the method and the engine's
 * message.
 *
 * Calls speak the Connect protocol's unary POST themselves, as the Python SDK
 * does over http.client. connect-es's own transport (abort signals, a
 * ConnectError and a DOMException per completed call, web-stream adapters)
 * was most of a Node host's CPU when records come a few dozen per bundle, and
 * a call over Node's HTTP/2 took twice the CPU of one over HTTP/1.1:
 * 165–180 µs against 83–98 (docs/performance.md, "The Node host's calls"
 * and "The Node host over HTTP/1.1").
 */

import { readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import { type Client as ConnectClient, Code, ConnectError } from "@connectrpc/connect";
import { codeFromHttpStatus, codeFromString } from "@connectrpc/connect/protocol-connect";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { fromCallError } from "./errors.js";
import { EngineService } from "./gen/polystreams/v1alpha1/engine_pb.js";
import { VERSION } from "./version.js";

type Service = typeof EngineService;
/** An RPC of EngineService, by its method name (e.g. "pipeInput"). */
export type Method = keyof Service["method"] & keyof ConnectClient<Service>;
/** The request of an RPC, as connect-es takes it. */
export type Input<M extends Method> = Parameters<ConnectClient<Service>[M]>[0];
/** The response of an RPC. */
export type Output<M extends Method> = Awaited<ReturnType<ConnectClient<Service>[M]>>;

/** Options of a Client. */
export interface ClientOptions {
  /** Bounds each call, in milliseconds (default 120000). */
  timeoutMs?: number;
  /**
   * The engine's bearer token, sent as `Authorization: Bearer <token>` on
   * every call (default `$POLYSTREAMS_TOKEN`; none: no header).
   */
  token?: string;
  /**
   * PEM CA certificates to verify an `https://` engine with (default
   * `$POLYSTREAMS_CA_FILE`, else Node's CAs).
   */
  caFile?: string;
}

/**
 * A client of one engine's EngineService. Safe for concurrent calls: each
 * takes an idle keep-alive connection or opens one; idle connections do not
 * keep the process alive.
 */
export class Client {
  readonly url: string;
  private readonly agent: http.Agent;
  private readonly request: typeof http.request;
  // What every call's request shares: the agent, the engine's address and POST.
  private readonly options: http.RequestOptions;
  private readonly prefix: string;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;

  constructor(url: string, options: ClientOptions = {}) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new TypeError(`engine URL ${JSON.stringify(url)}: want http://host:port or https://host:port`);
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      throw new TypeError(`engine URL ${JSON.stringify(url)}: want http://host:port or https://host:port`);
    }
    this.url = url.replace(/\/+$/, "");
    this.timeoutMs = options.timeoutMs ?? 120_000;
    const caFile = options.caFile ?? process.env["POLYSTREAMS_CA_FILE"];
    let ca = {};
    if (parsed.protocol === "https:" && caFile) {
      try {
        ca = { ca: readFileSync(caFile) };
      } catch (e) {
        throw new TypeError(`CA file ${JSON.stringify(caFile)}: ${(e as Error).message}`);
      }
    }
    // Keep-alive: a call takes an idle connection, the last one freed first
    // (lifo), so a host loop's calls keep to one; FREE_CONNECTIONS bounds the
    // idle ones left after a burst of concurrent calls.
    const agentOptions = { keepAlive: true, scheduling: "lifo" as const, maxFreeSockets: FREE_CONNECTIONS };
    if (parsed.protocol === "https:") {
      this.agent = new https.Agent({ ...agentOptions, ...ca });
      this.request = https.request;
    } else {
      this.agent = new http.Agent(agentOptions);
      this.request = http.request;
    }
    this.options = {
      agent: this.agent,
      protocol: parsed.protocol,
      hostname: parsed.hostname.replace(/^\[(.*)\]$/, "$1"), // an IPv6 literal without its brackets
      port: parsed.port,
      method: "POST",
    };
    this.prefix = parsed.pathname.replace(/\/+$/, "");
    const token = options.token ?? process.env["POLYSTREAMS_TOKEN"];
    this.headers = {
      "content-type": "application/proto",
      "connect-protocol-version": "1",
      "user-agent": `polystreams-node/${VERSION}`,
      // No compression: the engine is near (usually loopback), and gzip of
      // megabyte bundles cost more CPU on both sides than it saves (measured:
      // it cut a Node-hosted map_values to under half of Python's rate).
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    };
  }

  /** Calls EngineService/<method>; rejects with a PolystreamsError on failure. */
  async call<M extends Method>(method: M, request: Input<M>, options: { timeoutMs?: number } = {}): Promise<Output<M>> {
    const desc = EngineService.method[method];
    try {
      const body = toBinary(desc.input, create(desc.input, request as never));
      const path = `${this.prefix}/${EngineService.typeName}/${desc.name}`;
      const timeoutMs = options.timeoutMs ?? this.timeoutMs;
      let data: Uint8Array;
      try {
        data = await this.#post(path, body, timeoutMs, false);
      } catch (e) {
        if (!(e instanceof StaleConnection)) {
          throw e;
        }
        data = await this.#post(path, body, timeoutMs, true); // the engine had closed the idle connection: once more on a new one
      }
      try {
        return fromBinary(desc.output, data) as Output<M>;
      } catch (e) {
        throw new ConnectError(`the engine's response does not parse: ${(e as Error).message}`, Code.Internal);
      }
    } catch (e) {
      throw fromCallError(desc.name, this.url, e);
    }
  }

  // One Connect unary call: the request's bytes POSTed, the response's bytes
  // (a 200 with a protobuf body), or a ConnectError (the engine's JSON error,
  // the HTTP status, the connection's failure, or the deadline). A failure
  // before any response on a reused connection rejects with StaleConnection
  // (unless this is the retry): the engine may have closed it while idle.
  #post(path: string, body: Uint8Array, timeoutMs: number, retry: boolean): Promise<Uint8Array> {
    return new Promise((resolve, reject) => {
      let settled = false;
      const settle = (e: Error | null, data?: Uint8Array): void => {
        if (settled) {
          return;
        }
        settled = true;
        clearTimeout(timer);
        if (e === null) {
          resolve(data!);
        } else {
          reject(e);
        }
      };
      const req = this.request({
        ...this.options,
        path,
        headers: { ...this.headers, "connect-timeout-ms": String(timeoutMs), "content-length": String(body.byteLength) },
      });
      const timer = setTimeout(() => {
        settle(new ConnectError(`the engine did not answer within ${timeoutMs} ms`, Code.DeadlineExceeded));
        req.destroy();
      }, timeoutMs);
      let answered = false;
      req.on("error", (e: Error) => {
        if (!answered && req.reusedSocket && !retry) {
          settle(new StaleConnection(e.message));
        } else {
          settle(answered ? closedMidCall(e) : e); // before an answer: the engine is unreachable
        }
      });
      req.on("response", (res: http.IncomingMessage) => {
        answered = true;
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("error", (e: Error) => settle(closedMidCall(e)));
        res.on("close", () => {
          if (!res.complete) {
            settle(closedMidCall());
          }
        });
        res.on("end", () => {
          const buf = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
          if (res.statusCode === 200 && String(res.headers["content-type"] ?? "").startsWith("application/proto")) {
            // A plain Uint8Array view: the message's bytes fields are views of
            // what fromBinary reads, and users get Uint8Array, not Buffer.
            settle(null, new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength));
          } else {
            settle(errorOf(res.statusCode ?? 0, buf));
          }
        });
      });
      req.end(body);
    });
  }

  /** Closes the connections; calls in progress fail. */
  close(): void {
    this.agent.destroy();
  }
}

// Idle connections kept for reuse (more are opened while calls overlap).
const FREE_CONNECTIONS = 4;

function closedMidCall(cause?: Error): ConnectError {
  return new ConnectError("the connection closed mid-call", Code.Unavailable, undefined, undefined, cause);
}

/** A call that failed before any response on a connection used before. */
class StaleConnection extends Error {}

// The error of a call the engine answered with an HTTP status other than
// 200: Connect's JSON error ({"code": "invalid_argument", "message": ...})
// when the body is one, else the status's code.
function errorOf(status: number, body: Buffer): ConnectError {
  try {
    const j = JSON.parse(body.toString("utf8")) as { code?: unknown; message?: unknown };
    const code = typeof j.code === "string" ? codeFromString(j.code) : undefined;
    if (code !== undefined) {
      return new ConnectError(typeof j.message === "string" ? j.message : "", code);
    }
  } catch {
    // not JSON: the status tells
  }
  return new ConnectError(`HTTP ${status}`, codeFromHttpStatus(status));
}
