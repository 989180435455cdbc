import type { IncomingMessage } from "node:http";
import type { RequestHandler } from "express";
import type { Logger } from "pino";
import { newRequestId } from "../lib/ids.js";
import { ApiError } from "./errors.js";
import { setCorsHeaders } from "./cors.js";
import type { Metrics } from "./metrics.js";
import type { HttpRequest, HttpResponse } from "./exchange.js";
import { pathForLog } from "./logged-path.js";
import type { Redactor } from "../lib/redact.js";

/**
 * What every request gets before any route runs, in one middleware (each middleware is a hop
 * through express's router, and this runs for every request, the keyed tool call included):
 * a server-made request id, the headers every answer carries, CORS, and when it ends one log line
 * and the request metrics, from one `close` listener. Written on Node's own API: the keyed tool
 * call runs it outside express (tools/routes/keyed-lane.ts).
 */

/** The status logged for a request whose client hung up before its answer was sent. */
export const CLIENT_CLOSED_REQUEST = 499;

/** Sets the request id and the headers every answer carries. */
function stamp(res: HttpResponse): void {
  // A client-sent id is never reused: request ids also key idempotent debits, so letting a
  // client choose one could replay a charge.
  const id = newRequestId();
  res.locals.requestId = id;
  res.setHeader("X-Request-Id", id);
  // Answers carry keys, balances and secrets: never let a cache keep them.
  res.setHeader("Cache-Control", "no-store");
  // The browser must trust the Content-Type we send, never guess another.
  res.setHeader("X-Content-Type-Options", "nosniff");
}

/** Every response carries a server-made request id (and the no-store, nosniff headers). */
export const requestId: RequestHandler = (_req, res, next) => {
  stamp(res);
  next();
};

/**
 * What every request gets first: its request id and common headers, CORS, and when it ends one
 * log line and the request metrics. `requestLog` writes one structured line per request: no query
 * string and no key in the path (logged-path.ts, and the configured secrets' values by
 * `redactSecrets`, one matcher built at start-up run over the path alone), no headers, no bodies —
 * so it is given a logger without redaction paths nor the scan of whole lines for secrets
 * (either costs more than the rest of the line, and has nothing else to find here).
 */
export function beginRequest(
  req: HttpRequest,
  res: HttpResponse,
  requestLog: Logger,
  metrics: Metrics,
  redactSecrets: Redactor,
): void {
  const started = process.hrtime.bigint();
  // A tool call's Server-Timing counts from here (tools/timing.ts).
  res.locals.startedAt = started;
  stamp(res);
  setCorsHeaders(res);
  // "close", not "finish": a client that hangs up before its answer never gets a "finish", yet
  // its call may run and be charged, so it is logged and counted too, as 499 (nginx's "client
  // closed request"), when it hung up.
  res.once("close", () => {
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const status = res.writableFinished ? res.statusCode : CLIENT_CLOSED_REQUEST;
    requestLog.info(
      {
        request_id: res.locals.requestId,
        method: req.method,
        path: pathForLog(req.originalUrl, redactSecrets),
        status,
        duration_ms: seconds * 1000,
        account_id: res.locals.accountId,
      },
      "request",
    );
    metrics.observeRequest(req, res, status, seconds);
  });
}

/** The per-request middleware of the gateway's express routes (the keyed lane calls `beginRequest` itself). */
export function requestContext(
  requestLog: Logger,
  metrics: Metrics,
  redactSecrets: Redactor,
): RequestHandler {
  return (req, res, next) => {
    beginRequest(req, res, requestLog, metrics, redactSecrets);
    next();
  };
}

/** Whether a request sends a body (a length above 0, or a chunked one). */
export const hasBody = (req: IncomingMessage): boolean =>
  Number(req.headers["content-length"] ?? 0) > 0 || req.headers["transfer-encoding"] !== undefined;

/** A body that is not JSON is refused up front rather than silently ignored. */
export const requireJsonBody: RequestHandler = (req, _res, next) => {
  // The common case is read as is; anything else (parameters, other casing, +json types) goes through type-is.
  if (
    hasBody(req) &&
    req.headers["content-type"] !== "application/json" &&
    !req.is("application/json")
  ) {
    return next(
      new ApiError(
        "unsupported_media_type",
        "Send the request body as JSON with Content-Type: application/json.",
      ),
    );
  }
  next();
};
