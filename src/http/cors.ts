import type { RequestHandler } from "express";

/**
 * The API is called with a header credential (x-api-key) or a payment, never cookies, so any
 * origin may call it. The x402 headers must be readable by browser clients.
 */
const ALLOWED_HEADERS = "content-type, x-api-key, idempotency-key, x-payment, payment-signature, accept, mcp-protocol-version, mcp-session-id";
const EXPOSED_HEADERS =
  "x-request-id, payment-required, payment-response, x-payment-response, ratelimit-limit, ratelimit-remaining, ratelimit-reset, ratelimit-policy, retry-after, x-credits-charged, x-credits-remaining, idempotent-replayed";

export const cors: RequestHandler = (req, res, next) => {
  res.setHeader("Access-Control-Allow-Origin", "*");
  res.setHeader("Access-Control-Expose-Headers", EXPOSED_HEADERS);
  if (req.method !== "OPTIONS") return next();
  res.setHeader("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS");
  res.setHeader("Access-Control-Allow-Headers", ALLOWED_HEADERS);
  res.setHeader("Access-Control-Max-Age", "600");
  res.status(204).end();
};
