import type { Duplex } from "node:stream";
import { type IncomingMessage, STATUS_CODES } from "node:http";
import type { RequestHandler } from "express";
import type { Logger } from "pino";
import { newRequestId } from "../lib/ids.js";
import { ApiError, errorBody, type ErrorCode } from "./errors.js";
import type { Metrics } from "./metrics.js";

/**
 * Requests Node refuses before express sees them (headers over 16 KB, a malformed request line,
 * a request that took longer than REQUEST_TIMEOUT_MS) get Node's bare answer by default. This
 * `clientError` listener answers them in the API's one error shape instead, under the same
 * rule as Node's own: only when nothing of a response has been written on that connection yet,
 * and the connection is closed afterwards (its byte stream can no longer be trusted). Each answer
 * is counted and logged (`recordRefusals`): a slowloris or a header flood must leave a trace.
 */
const ANSWERS: Record<string, { code: ErrorCode; message: string }> = {
  HPE_HEADER_OVERFLOW: {
    code: "headers_too_large",
    message: "The request's headers are larger than the limit (16 KB).",
  },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: {
    code: "body_too_large",
    message: "The request's chunk extensions are larger than the limit.",
  },
  ERR_HTTP_REQUEST_TIMEOUT: {
    code: "request_timeout",
    message: "The request was not received in time.",
  },
};
const MALFORMED = { code: "bad_request", message: "The request is not valid HTTP." } as const;

/** How an answered refusal is recorded; set once the services exist (main.ts). */
export type RecordRefusal = (refusal: {
  requestId: string;
  status: number;
  code: ErrorCode;
  reason: string;
}) => void;

type HttpSocket = Duplex & {
  /** The response in flight on this connection (Node's own fields). */
  _httpMessage?: {
    headersSent?: boolean;
    req?: { complete: boolean };
    once(event: "finish", listener: () => void): unknown;
  } | null;
  /** The request being received on this connection, once its headers are in (Node's own field). */
  parser?: { incoming?: { complete: boolean } | null } | null;
};

/** Whether something of an answer to the request being received on `socket` was already sent. */
function answered(socket: HttpSocket): boolean {
  const inFlight = socket._httpMessage;
  if (inFlight) return inFlight.headersSent === true;
  // No response in flight, yet a request still being received: it was answered before its body
  // had all arrived (Node goes on reading it). Another answer would be one nobody asked for.
  const receiving = socket.parser?.incoming;
  return receiving != null && !receiving.complete;
}

/**
 * Whether the request refused is a later one than the request whose answer is still to come on
 * this connection (pipelined): a refusal written now would be read as that earlier request's
 * answer (HTTP/1.1 answers in order), though it was served and charged.
 */
function earlierAnswerPending(socket: HttpSocket): boolean {
  const inFlight = socket._httpMessage;
  // Its request was received whole, so what failed to parse came after it (a request line, a
  // header); a request still arriving is the one refused (its chunked body, say).
  return !!inFlight && !inFlight.headersSent && inFlight.req?.complete === true;
}

/** Closes the connection once every answer still owed on it (Node sends them in order) is sent. */
function closeAfterAnswers(socket: HttpSocket): void {
  const inFlight = socket._httpMessage;
  if (!inFlight) return void socket.end();
  // Node hands the connection to the next queued answer in its own "finish" listener, which runs first.
  inFlight.once("finish", () => setImmediate(() => closeAfterAnswers(socket)));
}

export function answerClientError(
  err: Error & { code?: string },
  socket: Duplex,
  record?: RecordRefusal,
): void {
  if (err.code !== "ECONNRESET" && earlierAnswerPending(socket)) {
    // The earlier answers go out first, then the connection closes: the refused request gets no
    // answer, which is all a client reading answers in order can be told. Nothing more is read
    // from a byte stream that can no longer be trusted.
    socket.pause();
    closeAfterAnswers(socket);
    return;
  }
  if (err.code !== "ECONNRESET" && socket.writable && !answered(socket)) {
    const answer = ANSWERS[err.code ?? ""] ?? MALFORMED;
    writeRefusal(socket, new ApiError(answer.code, answer.message), err.code ?? "unknown", record);
  }
  socket.destroy();
}

/**
 * A CONNECT request (Node's server hands it to a `connect` listener, and closes the connection
 * without a word when there is none): the gateway is no proxy, so 405 in the one shape, with an
 * empty `Allow` (RFC 9110 §10.2.1: the target, a host and port, allows no method here).
 */
export function answerConnect(socket: Duplex, record?: RecordRefusal): void {
  if (socket.writable) {
    const error = new ApiError(
      "method_not_allowed",
      "CONNECT is not served here: the gateway is not a proxy.",
      { headers: { Allow: "" } },
    );
    writeRefusal(socket, error, "CONNECT", record);
  }
  socket.destroy();
}

/** An answer in the one shape written on the connection itself, recorded, before it is closed. */
function writeRefusal(socket: Duplex, error: ApiError, reason: string, record?: RecordRefusal) {
  const requestId = newRequestId();
  const body = JSON.stringify(errorBody(error, requestId));
  const extra = Object.entries(error.options.headers ?? {})
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");
  socket.write(
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\n` +
      "Content-Type: application/json; charset=utf-8\r\n" +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${requestId}\r\n` +
      "Cache-Control: no-store\r\n" +
      "X-Content-Type-Options: nosniff\r\n" +
      "Access-Control-Allow-Origin: *\r\n" +
      extra +
      "Connection: close\r\n\r\n" +
      body,
  );
  record?.({ requestId, status: error.status, code: error.code, reason });
}

/**
 * Requests Node's server would answer bare itself, brought to the routes instead (main.ts sets
 * `requireHostHeader: false` and listens for `checkExpectation`), so they are answered in the one
 * shape with a request id, logged and counted like any request: an HTTP/1.1 request without a
 * Host header (RFC 9112 §3.2: 400), and an `Expect` other than 100-continue (RFC 9110 §10.1.1:
 * 417; 100-continue itself is Node's, and the proxy's: tools/forward.ts).
 */
const UNMET_EXPECTATION = Symbol("unmet expectation");
type Marked = IncomingMessage & { [UNMET_EXPECTATION]?: true };

/** Marks a request whose `Expect` the server cannot meet (the `checkExpectation` listener). */
export function markUnmetExpectation(req: IncomingMessage): IncomingMessage {
  (req as Marked)[UNMET_EXPECTATION] = true;
  return req;
}

const missingHost = (req: IncomingMessage) =>
  req.headers.host === undefined && req.httpVersionMajor === 1 && req.httpVersionMinor === 1;

/** Whether `refuseUnservable` refuses the request (the keyed lane leaves those to express). */
export function isUnservable(req: IncomingMessage): boolean {
  return (req as Marked)[UNMET_EXPECTATION] === true || missingHost(req);
}

/** Refuses the requests `isUnservable` names; the connection is closed after, as Node does. */
export const refuseUnservable: RequestHandler = (req, _res, next) => {
  if ((req as Marked)[UNMET_EXPECTATION])
    return next(
      new ApiError(
        "expectation_failed",
        "The request's Expect header asks for what this server does not do: only 100-continue is met.",
        { headers: { Connection: "close" } },
      ),
    );
  if (missingHost(req))
    return next(
      new ApiError("bad_request", "An HTTP/1.1 request must name its host in a Host header.", {
        headers: { Connection: "close" },
      }),
    );
  next();
};

/**
 * Counts a refusal (by status and code: never anything the client sent) and writes one line to
 * the request log, as any answered request gets. Not sampled: each refusal closes its connection,
 * so a flood of them costs the sender a connection per line — more than a flood of ordinary
 * requests, pipelined on one connection, costs for theirs.
 */
export function recordRefusals(requestLog: Logger, metrics: Metrics): RecordRefusal {
  return ({ requestId, status, code, reason }) => {
    metrics.countRefused(status, code);
    // `reason` is Node's error code (HPE_INVALID_METHOD, ERR_HTTP_REQUEST_TIMEOUT…): a fixed set.
    requestLog.info({ request_id: requestId, status, code, reason }, "request refused");
  };
}
