import type { RequestHandler } from "express";
import type { Services } from "../services.js";
import { healthz } from "../operations/healthz.js";
import { metrics } from "../operations/metrics.js";
import { readyz } from "../operations/readyz.js";
import { memoryLimit } from "./memory-limit.js";

/** The paths an orchestrator and a scraper poll: counted by `probes`, never by `anonymous`. */
export const PROBE_PATHS: ReadonlySet<string> = new Set([healthz.path, readyz.path, metrics.path]);

/**
 * `/healthz`, `/readyz` and `/metrics` are counted by their own limit (`probes` in
 * ENDPOINT_LIMITS), in this process's memory (memory-limit.ts). Under the store's `anonymous`
 * limit they shared an address's budget with its page views (a busy address, or a NAT's, had its
 * liveness probe answered 429, and an orchestrator restarted a healthy gateway), and each waited
 * on Redis to be counted: 4 s while it was paused, past a 3 s health-check timeout.
 */
export function probeLimit(services: Services): RequestHandler {
  const count = memoryLimit(services, "probes");
  return (req, res, next) => (PROBE_PATHS.has(req.path) ? next(count(req, res)) : next());
}
