/**
 * The Connect client of one engine: EngineService over HTTP/2 (h2c), one
 * connection multiplexing every call, unary calls only. Every failure is
 * turned into a PolystreamsError naming the method and the engine's message.
 */

import { readFileSync } from "node:fs";
import { type Client as ConnectClient, type Interceptor, createClient } from "@connectrpc/connect";
import { Http2SessionManager, createConnectTransport } from "@connectrpc/connect-node";
import { fromCallError } from "./errors.js";
import { EngineService } from "./gen/polystreams/v1alpha1/engine_pb.js";

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
  private readonly client: ConnectClient<Service>;
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
    const interceptors: Interceptor[] = [];
    if (token) {
      const auth = `Bearer ${token}`;
      interceptors.push((next) => (req) => {
        req.header.set("Authorization", auth);
        return next(req);
      });
    }
    const transport = createConnectTransport({
      baseUrl: this.url,
      httpVersion: "2",
      sessionManager: this.sessions,
      // No compression: the engine is near (usually loopback), and gzip of
      // megabyte bundles cost more CPU on both sides than it saves (measured:
      // it cut a Node-hosted map_values to under half of Python's rate).
      acceptCompression: [],
      interceptors,
    });
    this.client = createClient(EngineService, transport);
  }

  /** Calls EngineService/<method>; rejects with a PolystreamsError on failure. */
  async call<M extends Method>(method: M, request: Input<M>, options: { timeoutMs?: number } = {}): Promise<Output<M>> {
    const fn = this.client[method] as unknown as (req: Input<M>, opts: { timeoutMs: number }) => Promise<Output<M>>;
    try {
      return await fn.call(this.client, request, { timeoutMs: options.timeoutMs ?? this.timeoutMs });
    } catch (e) {
      throw fromCallError(capitalize(method), this.url, e);
    }
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

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
