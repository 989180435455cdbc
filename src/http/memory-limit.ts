import type { Request } from "express";
import ipaddr from "ipaddr.js";
import type { Services } from "../services.js";
import { clientAddress, countedAddress } from "./client-address.js";
import type { ApiError } from "./errors.js";
import { endpointLimitRefusal, endpointWindowHeaders, showWindow } from "./endpoint-limits.js";
import type { HttpResponse } from "./exchange.js";

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
 * A per-address limit of ENDPOINT_LIMITS counted in this process's memory, not the store, for
 * requests that must be answered whatever the store does and cost nothing else to answer (the
 * operator's probes, CORS preflights): each is answered by the process it reaches, so that
 * process's count is the one that matters. Fixed windows, every address forgotten when one ends.
 * Returns a counter: the refusal (429) past the limit, else undefined with the window shown.
 */
export function memoryLimit(
  services: Services,
  name: "probes" | "preflights",
): (req: Request, res: HttpResponse) => ApiError | undefined {
  let windowEnds = 0;
  const counts = new Map<string, number>();
  return (req, res) => {
    const { count: limit, windowSeconds } = services.config.endpointLimits[name];
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
    if (used > limit) return endpointLimitRefusal(services, name, "client address", resetMs);
    counts.set(address, used);
    showWindow(
      res,
      endpointWindowHeaders(services, name, { limit, remaining: limit - used, resetMs }),
    );
    return undefined;
  };
}
