import type { RequestHandler } from "express";
import ipaddr from "ipaddr.js";
import type { Services } from "../services.js";
import { healthz } from "../operations/healthz.js";
import { metrics } from "../operations/metrics.js";
import { readyz } from "../operations/readyz.js";
import { clientAddress, countedAddress } from "./client-address.js";
import { endpointLimitRefusal, endpointWindowHeaders, showWindow } from "./endpoint-limits.js";

/** The paths an orchestrator and a scraper poll: counted by `probes`, never by `anonymous`. */
export const PROBE_PATHS: ReadonlySet<string> = new Set([healthz.path, readyz.path, metrics.path]);

/**
 * Distinct public addresses counted at once in one window; past it, new ones share one count. An
 * address the internet cannot send from (loopback, private, link-local, unique local: the
 * container's own HEALTHCHECK, a kubelet, a load balancer on the private network) always has its
 * own count, or 10,000 addresses, cheap to have (the /64s of one IPv6 /48), would spend the
 * orchestrator's probes with everyone else's and have a healthy gateway restarted.
 */
const MAX_ADDRESSES = 10_000;
const OTHERS = "(others)";
const INSIDE = new Set(["loopback", "private", "linkLocal", "uniqueLocal"]);
const fromInside = (address: string) =>
  ipaddr.isValid(address) && INSIDE.has(ipaddr.process(address).range());

/**
 * `/healthz`, `/readyz` and `/metrics` are counted by their own limit (`probes` in
 * ENDPOINT_LIMITS), in this process's memory. Under the store's `anonymous` limit they shared an
 * address's budget with its page views (a busy address, or a NAT's, had its liveness probe
 * answered 429, and an orchestrator restarted a healthy gateway), and each waited on Redis to be
 * counted: 4 s while it was paused, past a 3 s health-check timeout. A probe is answered by the
 * process it reaches, so that process's count is the one that matters. Fixed windows, all
 * addresses forgotten when one ends.
 */
export function probeLimit(services: Services): RequestHandler {
  let windowEnds = 0;
  const counts = new Map<string, number>();
  return (req, res, next) => {
    if (!PROBE_PATHS.has(req.path)) return next();
    const { count: limit, windowSeconds } = services.config.endpointLimits.probes;
    const now = Date.now();
    if (now >= windowEnds) {
      counts.clear();
      windowEnds = (Math.floor(now / (windowSeconds * 1000)) + 1) * windowSeconds * 1000;
    }
    const client = clientAddress(req, services.refusedCredentials.trust);
    let address = countedAddress(client);
    if (!counts.has(address) && counts.size >= MAX_ADDRESSES && !fromInside(client))
      address = OTHERS;
    const used = (counts.get(address) ?? 0) + 1;
    const resetMs = windowEnds - now;
    if (used > limit)
      return next(endpointLimitRefusal(services, "probes", "client address", resetMs));
    counts.set(address, used);
    showWindow(
      res,
      endpointWindowHeaders(services, "probes", { limit, remaining: limit - used, resetMs }),
    );
    next();
  };
}
