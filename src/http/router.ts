import { Router } from "express";

/**
 * Every router of the gateway: paths match case-sensitively, as the app's own routes do (app.ts).
 * A path has one spelling: `/V1/tools` is not `/v1/tools` (RFC 3986 §6.2.2.1: the path is
 * case-sensitive), so whatever reads the path — API versioning (versioning.ts), the keyed lane,
 * the endpoint limits, logs and metrics — sees the spelling the route matched, and an upper-case
 * path cannot reach a route while escaping a rule written for its lower-case spelling.
 */
export function caseSensitiveRouter(): Router {
  return Router({ caseSensitive: true });
}
