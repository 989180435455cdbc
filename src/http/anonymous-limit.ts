import type { Request, RequestHandler } from "express";
import type { Services } from "../services.js";
import { countEndpointUse, endpointLimitRefusal } from "./endpoint-limits.js";

/**
 * One limit per client address for every request that carries no credentials: no API key or
 * bearer token, no dashboard session, no x402 payment (`anonymous` in ENDPOINT_LIMITS). The
 * catalogue, the pages and documents, the probes, a keyless call's 402 offer and /mcp without a
 * key are each cheap, but no account's tier limit counts them, so one address could send them
 * without end (`/readyz` pings the store each time). A keyed request is counted by its tier, a
 * payment by `x402-refused`, refused credentials by `refused-credentials`; this adds nothing to
 * their way. When the store cannot count, the request goes through: `/healthz` and the status
 * page must answer in a store outage.
 */
export function anonymousLimit(services: Services): RequestHandler {
  return (req, res, next) => {
    if (services.refusedCredentials.presentsCredentials(req) || carriesPayment(req)) return next();
    countEndpointUse(services, "anonymous", `ip:${req.ip ?? "unknown"}`, res.locals.requestId).then(
      (hit) =>
        next(
          hit.allowed
            ? undefined
            : endpointLimitRefusal(services, "anonymous", "client address", hit.resetMs),
        ),
      () => next(),
    );
  };
}

function carriesPayment(req: Request): boolean {
  return Boolean(req.headers["x-payment"] || req.headers["payment-signature"]);
}
