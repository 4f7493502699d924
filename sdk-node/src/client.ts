/**
 * The Connect client of one engine: EngineService over HTTP/2 (h2c), one
 * connection multiplexing every call, unary calls only. Every failure is
 * turned into a PolystreamsError naming the method and the engine's message.
 *
 * Calls speak the Connect protocol's unary POST themselves, on connect-node's
 * Http2SessionManager (the connection, its keep-alive and reconnects), as
 * the Python SDK does over HTTP/1.1: connect-es's own transport (abort
 * signals, a ConnectError and a DOMException per completed call, web-stream
 * adapters) was most of a Node host's CPU when records come a few dozen per
 * bundle: 17.8 µs of host CPU per record at 10% load, 9.2 since
 * (docs/performance.md, "The Node host's calls").
 */

import { readFileSync } from "node:fs";
import { type ClientHttp2Stream, constants as h2 } from "node:http2";
import { type Client as ConnectClient, Code, ConnectError } from "@connectrpc/connect";
import { Http2SessionManager } from "@connectrpc/connect-node";
import { codeFromHttpStatus, codeFromString } from "@connectrpc/connect/protocol-connect";
import { type DescMessage, create, fromBinary, toBinary } from "@bufbuild/protobuf";
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
 * A client of one engine's EngineService. Safe for concurrent calls: they
 * share one HTTP/2 connection, which does not keep the process alive while
 * no call is in progress.
 */
export class Client {
  readonly url: string;
  private readonly sessions: Http2SessionManager;
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
    this.sessions = new WideWindowSessions(this.url, undefined, { settings: { initialWindowSize: WINDOW }, ...ca });
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
      const path = `/${EngineService.typeName}/${desc.name}`;
      return (await this.#unary(path, body, desc.output, options.timeoutMs ?? this.timeoutMs)) as Output<M>;
    } catch (e) {
      throw fromCallError(desc.name, this.url, e);
    }
  }

  // One Connect unary call: the request's bytes POSTed, the response's bytes
  // parsed, or a ConnectError (the engine's JSON error, the HTTP status, the
  // connection's failure, or the deadline).
  async #unary(path: string, body: Uint8Array, output: DescMessage, timeoutMs: number): Promise<unknown> {
    const stream = await this.sessions.request("POST", path, { ...this.headers, "connect-timeout-ms": String(timeoutMs) }, {});
    return new Promise((resolve, reject) => {
      let status = 0;
      let contentType = "";
      const chunks: Buffer[] = [];
      const timer = setTimeout(() => {
        fail(new ConnectError(`the engine did not answer within ${timeoutMs} ms`, Code.DeadlineExceeded));
        stream.close(h2.NGHTTP2_CANCEL);
      }, timeoutMs);
      let settled = false;
      const fail = (e: ConnectError): void => {
        if (!settled) {
          settled = true;
          clearTimeout(timer);
          reject(e);
        }
      };
      stream.on("response", (headers) => {
        status = Number(headers[":status"] ?? 0);
        contentType = String(headers["content-type"] ?? "");
      });
      stream.on("data", (chunk: Buffer) => {
        chunks.push(chunk);
        this.sessions.notifyResponseByteRead(stream); // the connection is alive: no keep-alive PING needed
      });
      stream.on("error", (e: Error) => fail(new ConnectError(e.message, Code.Unavailable, undefined, undefined, e)));
      stream.on("close", () => {
        if (!settled) {
          fail(closedEarly(stream)); // made only when needed: one per call was 3.5% of the host loop's CPU
        }
      });
      stream.on("end", () => {
        if (settled) {
          return;
        }
        const buf = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
        // A plain Uint8Array view: the message's bytes fields are views of
        // what fromBinary reads, and users get Uint8Array, not Buffer.
        const data = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
        if (status === 200 && contentType.startsWith("application/proto")) {
          settled = true;
          clearTimeout(timer);
          try {
            resolve(fromBinary(output, data));
          } catch (e) {
            reject(new ConnectError(`the engine's response does not parse: ${(e as Error).message}`, Code.Internal));
          }
          return;
        }
        fail(errorOf(status, buf));
      });
      stream.end(body);
    });
  }

  /** Closes the connection; calls in progress fail. */
  close(): void {
    this.sessions.abort();
  }
}

// HTTP/2 flow-control window of each stream and of the connection. Node's
// default is 64 KiB, so a response of eight 200 KiB bundles waited for a
// WINDOW_UPDATE round trip every 64 KiB; measured, a Node-hosted map_values
// then ran at under half of Python's rate over HTTP/1.1.
const WINDOW = 16 << 20;

/** An Http2SessionManager whose connections have a WINDOW-sized connection window. */
class WideWindowSessions extends Http2SessionManager {
  readonly #widened = new WeakSet<object>();

  override async request(...args: Parameters<Http2SessionManager["request"]>): ReturnType<Http2SessionManager["request"]> {
    const stream = await super.request(...args);
    const session = stream.session;
    if (session !== undefined && !this.#widened.has(session)) {
      this.#widened.add(session);
      session.setLocalWindowSize(WINDOW);
    }
    return stream;
  }
}

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

// The error of a stream that closed before its response ended: the engine
// reset it (RST_STREAM) or the connection went away.
function closedEarly(stream: ClientHttp2Stream): ConnectError {
  const rst = stream.rstCode ?? 0;
  return new ConnectError(rst ? `the call was reset (HTTP/2 error ${rst})` : "the connection closed mid-call", Code.Unavailable);
}
