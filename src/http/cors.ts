import type { ServerResponse } from "node:http";
import type { RequestHandler, Response } from "express";
import type { Services } from "../services.js";
import { memoryLimit } from "./memory-limit.js";

/**
 * The API is called with a header credential (x-api-key, or Authorization: Bearer) or a payment, never cookies, so any
 * origin may call it. The x402 headers must be readable by browser clients. Applied to every
 * request by `requestContext` (src/http/request-context.ts).
 */
const ALLOWED_HEADERS =
  "content-type, x-api-key, authorization, idempotency-key, x-payment, payment-signature, accept, mcp-protocol-version, mcp-session-id, mcp-method, mcp-name";
/** What a browser client may read: the x402 and rate-limit headers, and a version's deprecation notice (http/versioning.ts). */
const EXPOSED_HEADERS =
  "x-request-id, payment-required, payment-response, x-payment-response, ratelimit-limit, ratelimit-remaining, ratelimit-reset, ratelimit-policy, retry-after, x-credits-charged, x-credits-remaining, idempotent-replayed, server-timing, deprecation, sunset, link";

/** The CORS headers of every answer. */
export function setCorsHeaders(res: ServerResponse): void {
  res.setHeader("Access-Control-Allow-Origin", "*");
  res.setHeader("Access-Control-Expose-Headers", EXPOSED_HEADERS);
}

/**
 * Answers a preflight (OPTIONS) request, on any path, counted by its own limit (`preflights` in
 * ENDPOINT_LIMITS) in this process's memory: no store work for a request that costs none.
 */
export function preflights(services: Services): RequestHandler {
  const count = memoryLimit(services, "preflights");
  return (req, res, next) => {
    if (req.method !== "OPTIONS") return next();
    const refused = count(req, res);
    if (refused) return next(refused);
    answerPreflight(res);
  };
}

/** The answer to a preflight (OPTIONS) request. */
function answerPreflight(res: Response): void {
  res.setHeader("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS");
  res.setHeader("Access-Control-Allow-Headers", ALLOWED_HEADERS);
  res.setHeader("Access-Control-Max-Age", "600");
  res.status(204).end();
}
