import type { RequestHandler } from "express";
import type { Logger } from "pino";
import { newRequestId } from "../lib/ids.js";
import { ApiError } from "./errors.js";

/**
 * Every response carries a server-made request id. A client-sent id is never reused: request
 * ids also key idempotent debits, so letting a client choose one could replay a charge.
 */
export const requestId: RequestHandler = (_req, res, next) => {
  const id = newRequestId();
  res.locals.requestId = id;
  res.setHeader("X-Request-Id", id);
  // Answers carry keys, balances and secrets: never let a cache keep them.
  res.setHeader("Cache-Control", "no-store");
  next();
};

/** One structured line per request: no query string (it can hold tokens), no headers, no bodies. */
export function requestLog(log: Logger): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    res.on("finish", () => {
      log.info(
        {
          request_id: res.locals.requestId,
          method: req.method,
          path: req.originalUrl.split("?")[0],
          status: res.statusCode,
          duration_ms: Number(process.hrtime.bigint() - started) / 1e6,
          account_id: res.locals.accountId,
        },
        "request",
      );
    });
    next();
  };
}

/** A body that is not JSON is refused up front rather than silently ignored. */
export const requireJsonBody: RequestHandler = (req, _res, next) => {
  const hasBody = Number(req.get("content-length") ?? 0) > 0 || req.get("transfer-encoding") !== undefined;
  if (hasBody && !req.is("application/json")) {
    return next(new ApiError("unsupported_media_type", "Send the request body as JSON with Content-Type: application/json."));
  }
  next();
};
