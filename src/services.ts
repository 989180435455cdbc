import type { OpenCharges } from "./credits/open-charges.js";
import type { Logger } from "pino";
import type { Mailer } from "./accounts/mailer.js";
import type { Redactor } from "./lib/redact.js";
import type { Config } from "./config.js";
import type { Store } from "./store/types.js";
import type { WorkerPools } from "./tools/worker-pools.js";
import type { DeliveryQueue } from "./webhooks/queue.js";
import type { Payments } from "./payments/payments.js";
import type { Metrics } from "./http/metrics.js";
import type { StatusService } from "./status/index.js";
import type { RequestGuard } from "./http/request-guard.js";
import type { Readiness } from "./operations/readiness.js";
import type { ProviderHealth } from "./status/provider-health.js";
import type { RefusedCredentials } from "./http/refused-credentials.js";
import type { Books } from "./books/index.js";
import type { UpstreamTools } from "./tools/custom/registry.js";

/**
 * Everything a route or service needs, built once in main.ts (or a test) and passed in:
 * no module singletons, so tests wire real Redis, real SMTP and real processes.
 */
export interface Services {
  config: Config;
  store: Store;
  /** The books in PostgreSQL (or PGlite) and their exporter; null when the books stay in the store (DATABASE_URL=none). */
  books: Books | null;
  log: Logger;
  /**
   * The request log (one line per request): the process logger less redaction, since its lines
   * carry no secrets but in the path, which `redactSecrets` clears (a scan of the short path,
   * not of the whole line: this is the hot path).
   */
  requestLog: Logger;
  /** Cuts the configured secrets' values (config.ts `secretValues`) out of a text; built once at start-up. */
  redactSecrets: Redactor;
  mailer: Mailer;
  pools: WorkerPools;
  /** Tools at HTTP endpoints: the operator's (TOOLS_FILE) and each Business account's own. */
  upstream: UpstreamTools;
  /** Webhook deliveries waiting to be sent (BullMQ with Redis, in-process without). */
  deliveries: DeliveryQueue;
  /** x402 payments; null when no network is configured. */
  payments: Payments | null;
  metrics: Metrics;
  /** The status page: background checks, uptime and incidents. */
  status: StatusService;
  /** Traces an uncaught exception to the request that raised it and fails only that one. */
  requestGuard: RequestGuard;
  /** Whether this process has begun to shut down (/readyz then answers 503). */
  readiness: Readiness;
  /** What the calls of each provider tool saw of its provider, for the status page's checks. */
  providerHealth: ProviderHealth;
  /** The charged calls this process has open, and the refund of those a dead process left open. */
  openCharges: OpenCharges;
  /** Refused credentials per client address, and the addresses held for them (http/refused-credentials.ts). */
  refusedCredentials: RefusedCredentials;
}

/**
 * The parts every other one is built on, ready first: the books, the deliveries, the payments
 * and the status checks are then built from these (main.ts assembles them in that order, each
 * from what exists before it, so the whole object is never half-built).
 */
export type Foundation = Pick<
  Services,
  | "config"
  | "store"
  | "log"
  | "requestLog"
  | "redactSecrets"
  | "mailer"
  | "pools"
  | "upstream"
  | "metrics"
  | "requestGuard"
  | "readiness"
  | "providerHealth"
  | "openCharges"
  | "refusedCredentials"
>;
