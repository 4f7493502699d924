/**
 * The Connect client of one engine: EngineService over HTTP/2 (h2c), one
 * connection multiplexing every call, unary calls only. Every failure is
 * turned into a PolystreamsError naming the method and the engine's message.
 */

import { type Client as ConnectClient, createClient } from "@connectrpc/connect";
import { Http2SessionManager, createConnectTransport } from "@connectrpc/connect-node";
import { fromCallError } from "./errors.js";
import { EngineService } from "./gen/polystreams/v1alpha1/engine_pb.js";

type Service = typeof EngineService;
type Method = keyof Service["method"] & keyof ConnectClient<Service>;
type Input<M extends Method> = Parameters<ConnectClient<Service>[M]>[0];
type Output<M extends Method> = Awaited<ReturnType<ConnectClient<Service>[M]>>;

/** Options of a Client. */
export interface ClientOptions {
  /** Bounds each call, in milliseconds (default 120000). */
  timeoutMs?: number;
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
      throw new TypeError(`engine URL ${JSON.stringify(url)}: want http://host:port`);
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      throw new TypeError(`engine URL ${JSON.stringify(url)}: want http://host:port`);
    }
    this.url = url.replace(/\/+$/, "");
    this.timeoutMs = options.timeoutMs ?? 120_000;
    this.sessions = new Http2SessionManager(this.url);
    const transport = createConnectTransport({
      baseUrl: this.url,
      httpVersion: "2",
      sessionManager: this.sessions,
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

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
