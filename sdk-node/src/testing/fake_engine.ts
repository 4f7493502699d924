/**
 * Test support: a fake engine, an in-process Connect server of EngineService
 * (HTTP/1.1, as the SDK calls the real one), whose handlers a test replaces. Used where the real
 * engine cannot be made to answer what a test needs (a state it does not
 * report yet, a page boundary, a slow Exchange).
 */

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import {
  EngineService,
  type ExchangeResponse,
  ExchangeResponseSchema,
  State,
} from "../gen/polystreams/v1alpha1/engine_pb.js";

type Impl = ServiceImpl<typeof EngineService>;

/** A fake engine; `handlers` override the defaults per method. */
export class FakeEngine {
  readonly url: string;
  /** Answers of Exchange, in order; when empty, Exchange answers STATE_RUNNING after a short wait. */
  readonly exchanges: ExchangeResponse[] = [];
  readonly handlers: Partial<Impl> = {};
  /** Methods called, in order. */
  readonly calls: string[] = [];
  readonly #server: Server;

  private constructor(server: Server, url: string) {
    this.#server = server;
    this.url = url;
  }

  static async start(): Promise<FakeEngine> {
    let engine: FakeEngine | undefined;
    const handle = <M extends keyof Impl>(method: M, fallback: Impl[M]): Impl[M] =>
      ((req: never, ctx: never) => {
        engine!.calls.push(method);
        const h = (engine!.handlers[method] ?? fallback) as (req: never, ctx: never) => unknown;
        return h(req, ctx);
      }) as Impl[M];
    const impl: Impl = {
      openSession: handle("openSession", () => ({ sessionId: "sess-1", config: {} })),
      registerFunction: handle("registerFunction", () => ({ token: 1 })),
      build: handle("build", () => {
        throw new ConnectError("Build: not in this fake", Code.Unimplemented);
      }),
      describe: handle("describe", () => ({ text: "" })),
      start: handle("start", () => ({})),
      exchange: handle("exchange", async () => {
        const next = engine!.exchanges.shift();
        if (next !== undefined) {
          return next;
        }
        await new Promise((r) => setTimeout(r, 20));
        return create(ExchangeResponseSchema, { state: State.RUNNING });
      }),
      getState: handle("getState", () => ({ state: State.CREATED })),
      stop: handle("stop", () => ({})),
      query: handle("query", () => {
        throw new ConnectError("Query: not in this fake", Code.Unimplemented);
      }),
      getMetrics: handle("getMetrics", () => ({ state: State.CREATED, metricsEnabled: true })),
      pipeInput: handle("pipeInput", () => {
        throw new ConnectError("PipeInput: not in this fake", Code.Unimplemented);
      }),
      readOutput: handle("readOutput", () => {
        throw new ConnectError("ReadOutput: not in this fake", Code.Unimplemented);
      }),
      advanceWallClock: handle("advanceWallClock", () => {
        throw new ConnectError("AdvanceWallClock: not in this fake", Code.Unimplemented);
      }),
      queryMetadataForKey: handle("queryMetadataForKey", () => {
        throw new ConnectError("QueryMetadataForKey: not in this fake", Code.Unimplemented);
      }),
      streamsMetadata: handle("streamsMetadata", () => {
        throw new ConnectError("StreamsMetadata: not in this fake", Code.Unimplemented);
      }),
      read: handle("read", () => {
        throw new ConnectError("Read: not in this fake", Code.Unimplemented);
      }),
      pauseProcessing: handle("pauseProcessing", () => ({})),
      resumeProcessing: handle("resumeProcessing", () => ({})),
      cleanUpState: handle("cleanUpState", () => ({ deleted: "" })),
    };
    const server = createServer(connectNodeAdapter({ routes: (router) => void router.service(EngineService, impl) }));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    engine = new FakeEngine(server, `http://127.0.0.1:${port}`);
    return engine;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
