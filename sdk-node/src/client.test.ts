import assert from "node:assert/strict";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { after, describe, test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { Client } from "./client.js";
import { GetStateResponseSchema, State } from "./gen/polystreams/v1alpha1/engine_pb.js";

// The client's transport against plain HTTP servers that misbehave as an
// engine or the network can: the answers a real engine gives are covered by
// the e2e tests.

const servers: Server[] = [];
after(() => servers.forEach((s) => (s.closeAllConnections(), s.close())));

async function serve(handler: (req: IncomingMessage, res: ServerResponse, nth: number, socket: Socket) => void): Promise<string> {
  const calls = new WeakMap<Socket, number>();
  const server = createServer((req, res) => {
    const n = (calls.get(req.socket) ?? 0) + 1;
    calls.set(req.socket, n);
    req.resume();
    req.on("end", () => handler(req, res, n, req.socket));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const running = Buffer.from(toBinary(GetStateResponseSchema, create(GetStateResponseSchema, { state: State.RUNNING })));

function answer(res: ServerResponse): void {
  res.writeHead(200, { "content-type": "application/proto", "content-length": running.byteLength });
  res.end(running);
}

describe("Client", () => {
  test("posts Connect's unary protocol and parses the answer", async () => {
    let seen: IncomingMessage | undefined;
    const url = await serve((req, res) => {
      seen = req;
      answer(res);
    });
    const client = new Client(`${url}/prefix/`, { token: "s3cret" });
    const r = await client.call("getState", { sessionId: "s" });
    assert.equal(r.state, State.RUNNING);
    assert.equal(seen?.url, "/prefix/polystreams.v1alpha1.EngineService/GetState");
    assert.equal(seen?.headers["content-type"], "application/proto");
    assert.equal(seen?.headers["connect-protocol-version"], "1");
    assert.equal(seen?.headers["authorization"], "Bearer s3cret");
    assert.equal(seen?.headers["connect-timeout-ms"], "120000");
    client.close();
  });

  test("calls in turn keep to one connection", async () => {
    const sockets = new Set<Socket>();
    const url = await serve((_req, res, _n, socket) => {
      sockets.add(socket);
      answer(res);
    });
    const client = new Client(url);
    for (let i = 0; i < 5; i++) {
      await client.call("getState", { sessionId: "s" });
    }
    assert.equal(sockets.size, 1);
    client.close();
  });

  test("an idle connection the engine closed is retried once on a new one", async () => {
    const url = await serve((_req, res, n, socket) => {
      if (n === 2) {
        socket.destroy(); // the second call on a connection: closed unanswered, as an idle timeout races a call
        return;
      }
      answer(res);
    });
    const client = new Client(url);
    await client.call("getState", { sessionId: "s" });
    const r = await client.call("getState", { sessionId: "s" });
    assert.equal(r.state, State.RUNNING);
    client.close();
  });

  test("a new connection closed unanswered is not retried: unavailable, naming the method", async () => {
    let calls = 0;
    const url = await serve((_req, _res, _n, socket) => {
      calls++;
      socket.destroy();
    });
    const client = new Client(url);
    await assert.rejects(client.call("getState", { sessionId: "s" }), {
      name: "UnavailableError",
      message: new RegExp(`^GetState: engine at ${url} is unreachable: socket hang up`),
    });
    assert.equal(calls, 1);
    client.close();
  });

  test("a response cut short fails the call as unavailable", async () => {
    const url = await serve((_req, res, _n, socket) => {
      res.writeHead(200, { "content-type": "application/proto", "content-length": 100 });
      res.write(running);
      setTimeout(() => socket.destroy(), 10);
    });
    const client = new Client(url);
    await assert.rejects(client.call("getState", { sessionId: "s" }), {
      name: "UnavailableError",
      message: /^GetState: engine at .*: the connection closed mid-call/,
    });
    client.close();
  });

  test("the engine's JSON error keeps its code and message; another status maps to its code", async () => {
    const url = await serve((req, res) => {
      if (req.url?.endsWith("/GetState")) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ code: "not_found", message: 'session "s" does not exist' }));
      } else {
        res.writeHead(503);
        res.end("busy");
      }
    });
    const client = new Client(url);
    await assert.rejects(client.call("getState", { sessionId: "s" }), { name: "NotFoundError", message: /^session "s" does not exist/ });
    await assert.rejects(client.call("stop", { sessionId: "s" }), { name: "UnavailableError", message: /^Stop: engine at .*: HTTP 503/ });
    client.close();
  });

  test("a call the engine does not answer in time fails with its deadline", async () => {
    const url = await serve(() => {}); // never answers
    const client = new Client(url, { timeoutMs: 200 });
    await assert.rejects(client.call("getState", { sessionId: "s" }), {
      name: "UnavailableError",
      code: "deadline_exceeded",
      message: /^GetState: engine at .*: the engine did not answer within 200 ms/,
    });
    client.close();
  });

  test("an answer that does not parse is an internal error", async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "application/proto" });
      res.end(Buffer.from([0xff, 0xff, 0xff]));
    });
    const client = new Client(url);
    await assert.rejects(client.call("getState", { sessionId: "s" }), {
      name: "PolystreamsError",
      code: "internal",
      message: /^the engine's response does not parse: premature EOF/,
    });
    client.close();
  });
});
