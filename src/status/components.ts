import { STATUS_PROBE_HEADER } from "../http/metrics.js";
import type { Services } from "../services.js";
import { TOOLS } from "../tools/catalogue/index.js";
import type { WorkerPool } from "../tools/definition.js";
import type { ComponentState } from "./store.js";

/**
 * The status page's components and how each is checked. Every check is a real probe of the
 * running system (an HTTP request to this gateway's own doors, the workers' health endpoint,
 * the chain's RPC), or, for tool providers, what the gateway's own calls of them saw since the
 * last round (provider-health.ts). A check that throws or times out reads "degraded".
 */
export interface ComponentCheck {
  id: string;
  name: string;
  group: "API" | "Books" | "Payments" | "Webhooks" | "Workers" | "Providers";
  check(signal: AbortSignal): Promise<{ state: ComponentState; detail: string | null }>;
}

const OK = { state: "operational", detail: null } as const;
const degraded = (detail: string) => ({ state: "degraded" as const, detail });

/**
 * A provider is degraded when, in one interval, the accounts whose calls it failed (each counted
 * once) are at least this share of those and the calls it served.
 */
const PROVIDER_FAILURE_RATIO = 0.5;

async function expectStatus(
  url: string,
  init: RequestInit,
  expected: number[],
  signal: AbortSignal,
  probeToken: string,
) {
  const res = await fetch(url, {
    ...init,
    headers: { ...(init.headers as Record<string, string>), [STATUS_PROBE_HEADER]: probeToken },
    signal,
  });
  await res.arrayBuffer();
  return expected.includes(res.status) ? OK : degraded(`answered ${res.status}`);
}

export function componentChecks(
  services: Omit<Services, "status">,
  selfUrl: string,
): ComponentCheck[] {
  const probeToken = services.metrics.statusProbeToken;
  const checks: ComponentCheck[] = [
    {
      id: "rest-api",
      name: "REST API",
      group: "API",
      // /readyz goes through the HTTP stack and asks the store: what every keyed call needs. (A
      // process shutting down answers it 503 on purpose, but its checks stop as its shutdown
      // begins — main.ts — so that is never recorded as an outage.)
      check: (signal) => expectStatus(`${selfUrl}/readyz`, {}, [200], signal, probeToken),
    },
    {
      id: "mcp",
      name: "MCP",
      group: "API",
      // The MCP door answers an unauthenticated message with its 401 (or 403 when MCP_ALLOWED_HOSTS
      // leaves out loopback): it is mounted and serving. With x402 on it serves callers without a
      // key (wallets pay per call), so a ping is answered 200. A 429 is the door serving too: its
      // limit for callers without a key is per address, and the probe shares loopback's with
      // any such caller on this host (a proxy in front without TRUST_PROXY).
      check: (signal) =>
        expectStatus(
          `${selfUrl}/mcp`,
          {
            method: "POST",
            headers: {
              "content-type": "application/json",
              accept: "application/json, text/event-stream",
            },
            body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
          },
          [services.payments ? 200 : 401, 403, 429],
          signal,
          probeToken,
        ),
    },
  ];
  const books = services.books;
  if (books) {
    checks.push({
      id: "books-export",
      name: "Books export (usage records)",
      group: "Books",
      // Degraded while the export lags or fails (PostgreSQL down): calls are still served and
      // charged, the usage API is behind or unavailable until the export catches up.
      check: async () => books.health(),
    });
  }
  const networks = new Set<string>();
  for (const clients of services.payments?.clients.values() ?? []) {
    if (networks.has(clients.network.name)) continue;
    networks.add(clients.network.name);
    checks.push({
      id: `x402-${clients.network.name}`,
      name: `x402 payments on ${clients.network.name}`,
      group: "Payments",
      async check() {
        await clients.public.getBlockNumber({ cacheTime: 0 });
        return OK;
      },
    });
  }
  checks.push({
    id: "webhook-delivery",
    name: "Webhook delivery",
    group: "Webhooks",
    // Deliveries wait in the store's Redis (BullMQ); the receivers' own failures are theirs.
    async check() {
      await services.store.ping();
      return OK;
    },
  });
  for (const pool of Object.keys(services.pools.settings.urls) as WorkerPool[]) {
    checks.push({
      id: `worker-pool-${pool}`,
      name: `Worker pool: ${pool}`,
      group: "Workers",
      check: (signal) =>
        expectStatus(`${services.pools.url(pool)}/healthz`, {}, [200], signal, probeToken),
    });
  }
  for (const tool of TOOLS.filter((t) => t.pool === "provider")) {
    checks.push({
      id: `provider-${tool.name}`,
      name: `Provider of ${tool.name}`,
      group: "Providers",
      async check() {
        const reason = services.pools.unavailableReason(tool.name);
        if (reason) return { state: "not_configured", detail: reason };
        // Only failures that are the provider's, each account's weighing one (provider-health.ts):
        // a caller's own failed calls, refunded, cost nothing and would make the page say so.
        const { served, failedAccounts } = services.providerHealth.take(tool.name);
        if (
          failedAccounts > 0 &&
          failedAccounts / (served + failedAccounts) >= PROVIDER_FAILURE_RATIO
        ) {
          return degraded(
            `the provider failed calls of ${failedAccounts} account${failedAccounts === 1 ? "" : "s"} since the last check (${served} served)`,
          );
        }
        return OK;
      },
    });
  }
  return checks;
}
