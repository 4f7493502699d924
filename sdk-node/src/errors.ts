/**
 * The errors of polystreams: one base class, one subclass per error family.
 *
 * Every error carries `code` (a Connect code in snake case, such as
 * `"invalid_argument"`) and `message` (the engine's text, which names the
 * offending method, handle, kind, token, node, or topic/partition/offset).
 */

import { Code, ConnectError } from "@connectrpc/connect";

/**
 * Base class of every error polystreams throws or rejects with.
 *
 * `code` is the Connect error code (`invalid_argument`, `not_found`,
 * `failed_precondition`, `unavailable`, `internal`, ...); `message` is the
 * engine's (or the SDK's) description of what failed.
 */
export class PolystreamsError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }

  override toString(): string {
    return `${this.name}: ${this.message} [${this.code}]`;
  }
}

/**
 * The engine refused a call's arguments: a wrong kind of handle, a missing
 * topic, an unknown serde, bad configuration. The session stays usable.
 */
export class InvalidArgumentError extends PolystreamsError {}

/** A call named something that does not exist: a session, handle or token. */
export class NotFoundError extends PolystreamsError {}

/** A call came at the wrong time, e.g. a builder call after start. */
export class FailedPreconditionError extends PolystreamsError {}

/** The engine could not be reached (or stopped answering). */
export class UnavailableError extends PolystreamsError {}

/**
 * The engine binary could not be found or did not start. The message carries
 * the tail of the engine's standard error.
 */
export class EngineStartError extends UnavailableError {}

const PROCESSING_CONTEXT = /record at (.+?)\/(-?\d+)@(-?\d+) failed in node (\S+?):/;

/** Where a failed record came from, as the engine names it. */
export interface RecordContext {
  topic?: string | undefined;
  partition?: number | undefined;
  offset?: bigint | undefined;
  node?: string | undefined;
}

/**
 * The running topology failed (state `error`), e.g. because a user function
 * threw for a record. `message` is the engine's text; `topic`, `partition`,
 * `offset` and `node` name the failed record when the failure was a record's
 * (else undefined). The engine sends them as fields; for older engines they
 * are parsed out of the message.
 */
export class ProcessingError extends PolystreamsError {
  readonly topic: string | undefined;
  readonly partition: number | undefined;
  readonly offset: bigint | undefined;
  readonly node: string | undefined;

  constructor(message: string, context: RecordContext = {}, code = "aborted") {
    super(code, message);
    let { topic, partition, offset, node } = context;
    if (node === undefined) {
      const m = PROCESSING_CONTEXT.exec(message);
      if (m) {
        topic = m[1];
        partition = Number(m[2]);
        offset = BigInt(m[3] ?? "0");
        node = m[4];
      }
    }
    this.topic = topic;
    this.partition = partition;
    this.offset = offset;
    this.node = node;
  }
}

const BY_CODE: Record<string, new (code: string, message: string) => PolystreamsError> = {
  invalid_argument: InvalidArgumentError,
  out_of_range: InvalidArgumentError,
  not_found: NotFoundError,
  failed_precondition: FailedPreconditionError,
  unavailable: UnavailableError,
  deadline_exceeded: UnavailableError,
};

/**
 * The error for a Connect error code (PolystreamsError itself for a code with
 * no family of its own).
 */
export function errorForCode(code: string, message: string): PolystreamsError {
  const cls = BY_CODE[code] ?? PolystreamsError;
  return new cls(code, message);
}

/**
 * `Code.InvalidArgument` -> `"invalid_argument"`, as the Connect protocol spells codes.
 * @internal
 */
export function codeName(code: Code): string {
  const name = Code[code] ?? "unknown";
  return name.replace(/[A-Z]/g, (c, i: number) => (i === 0 ? "" : "_") + c.toLowerCase());
}

/**
 * The PolystreamsError for anything a call to the engine threw: a
 * ConnectError keeps its code and the engine's message; anything else is
 * `unavailable` (the engine could not be reached).
 */
export function fromCallError(method: string, url: string, err: unknown): PolystreamsError {
  if (err instanceof PolystreamsError) {
    return err;
  }
  if (err instanceof ConnectError) {
    const code = codeName(err.code);
    if (err.code === Code.Unavailable || err.code === Code.DeadlineExceeded || err.code === Code.Canceled) {
      const cause = err.cause instanceof Error ? `: ${err.cause.message}` : "";
      const text = err.rawMessage || code;
      return errorForCode(code === "canceled" ? "unavailable" : code, `${method}: engine at ${url}: ${text}${cause}`);
    }
    return errorForCode(code, err.rawMessage || `${method}: ${code}`);
  }
  const text = err instanceof Error ? err.message : String(err);
  return new UnavailableError("unavailable", `${method}: engine at ${url} is unreachable: ${text}`);
}

/** The name of a value's type for error messages: `string`, `number`, `null`, `Array`, `Map`, ... */
export function typeName(v: unknown): string {
  if (v === null) {
    return "null";
  }
  if (typeof v === "object") {
    const ctor = (v as { constructor?: { name?: unknown } }).constructor?.name;
    return typeof ctor === "string" && ctor ? ctor : "object";
  }
  return typeof v;
}
