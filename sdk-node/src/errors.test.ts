import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import { properties, redact } from "./config.js";
import {
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  PolystreamsError,
  ProcessingError,
  UnavailableError,
  codeName,
  errorForCode,
  fromCallError,
} from "./errors.js";

describe("errors", () => {
  test("Connect codes in the protocol's spelling", () => {
    assert.equal(codeName(Code.InvalidArgument), "invalid_argument");
    assert.equal(codeName(Code.FailedPrecondition), "failed_precondition");
    assert.equal(codeName(Code.NotFound), "not_found");
    assert.equal(codeName(Code.Internal), "internal");
  });

  test("one class per family, PolystreamsError for the rest", () => {
    assert.ok(errorForCode("invalid_argument", "m") instanceof InvalidArgumentError);
    assert.ok(errorForCode("not_found", "m") instanceof NotFoundError);
    assert.ok(errorForCode("failed_precondition", "m") instanceof FailedPreconditionError);
    assert.ok(errorForCode("unavailable", "m") instanceof UnavailableError);
    const other = errorForCode("internal", "boom");
    assert.equal(other.constructor, PolystreamsError);
    assert.equal(other.name, "PolystreamsError");
    assert.equal(String(other), "PolystreamsError: boom [internal]");
  });

  test("a ConnectError keeps the engine's code and message", () => {
    const e = fromCallError("Build", "http://x", new ConnectError("topology: map_values names handle 7, which does not exist", Code.NotFound));
    assert.ok(e instanceof NotFoundError);
    assert.equal(e.code, "not_found");
    assert.equal(e.message, "topology: map_values names handle 7, which does not exist");
    assert.equal(e.name, "NotFoundError");
    const down = fromCallError("Exchange", "http://127.0.0.1:1", new Error("connect ECONNREFUSED"));
    assert.ok(down instanceof UnavailableError);
    assert.match(down.message, /^Exchange: engine at http:\/\/127\.0\.0\.1:1 is unreachable: connect ECONNREFUSED$/);
  });

  test("ProcessingError takes the record's context as fields, or from the message", () => {
    const f = new ProcessingError("boom", { topic: "t", partition: 1, offset: 5n, node: "N" });
    assert.deepEqual([f.topic, f.partition, f.offset, f.node, f.code], ["t", 1, 5n, "N", "aborted"]);
    const p = new ProcessingError("engine: record at in/0@2 failed in node KSTREAM-MAPVALUES-0000000001: RangeError: x");
    assert.deepEqual([p.topic, p.partition, p.offset, p.node], ["in", 0, 2n, "KSTREAM-MAPVALUES-0000000001"]);
    const none = new ProcessingError("the broker went away");
    assert.equal(none.node, undefined);
  });
});

describe("config", () => {
  test("camelCase fields become Kafka Streams' dotted names", () => {
    assert.deepEqual(
      properties({ processingGuarantee: "exactly_once_v2", commitIntervalMs: 100, stateDir: "/s", extra: { "polystreams.bundle.max.records": 5000, "x.y": true } }),
      {
        "polystreams.bundle.max.records": "5000",
        "x.y": "true",
        "processing.guarantee": "exactly_once_v2",
        "commit.interval.ms": "100",
        "state.dir": "/s",
      },
    );
    assert.deepEqual(properties(), {});
  });

  test("numStandbyReplicas is Kafka Streams' num.standby.replicas", () => {
    assert.deepEqual(properties({ numStandbyReplicas: 1, commitIntervalMs: 100 }), {
      "num.standby.replicas": "1",
      "commit.interval.ms": "100",
    });
    assert.equal(properties({ commitIntervalMs: 100 })["num.standby.replicas"], undefined); // unset: the engine's default, 0
  });

  test("maxTaskIdleMs is Kafka Streams' max.task.idle.ms", () => {
    assert.deepEqual(properties({ maxTaskIdleMs: -1 }), { "max.task.idle.ms": "-1" });
    assert.equal(properties({})["max.task.idle.ms"], undefined); // unset: the engine's default, 0
  });

  test("credentials are hidden", () => {
    assert.deepEqual(redact({ "sasl.password": "p", "ssl.key": "k", "sasl.username": "u" }), {
      "sasl.password": "[hidden]",
      "ssl.key": "[hidden]",
      "sasl.username": "u",
    });
  });
});
