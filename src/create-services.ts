import { startOpenCharges } from "./credits/open-charges.js";
import { StartupError } from "./lib/startup-error.js";
import { createMailer } from "./accounts/mailer.js";
import { secretValues, type Config } from "./config.js";
import {
  developmentAccount,
  developmentAdminKey,
  developmentBanner,
  resolveSecretKeys,
} from "./development.js";
import { Metrics } from "./http/metrics.js";
import { RefusedCredentials } from "./http/refused-credentials.js";
import { RequestGuard } from "./http/request-guard.js";
import { deepFreeze } from "./lib/deep-freeze.js";
import type { ProcessLogger } from "./lib/logger.js";
import type { Payments } from "./payments/payments.js";
import type { Foundation, Services } from "./services.js";
import { createStatusService } from "./status/index.js";
import { Readiness } from "./operations/readiness.js";
import { ProviderHealth } from "./status/provider-health.js";
import { createStore } from "./store/index.js";
import { needsBundledWorkers, startBundledWorkers } from "./tools/bundled-workers.js";
import { UpstreamTools } from "./tools/custom/registry.js";
import { WorkerPools } from "./tools/worker-pools.js";
import { createDeliveryAgent } from "./webhooks/deliver.js";
import { createBullQueue, createInProcessQueue } from "./webhooks/queue.js";
import { startRelay } from "./webhooks/relay.js";
/**
 * Builds the whole services object of a gateway process, in layers, each from what exists before
 * it: the child processes (dev chain, bundled workers), the store and the configuration start-up
 * settles (frozen), the foundation, then the books, the webhook deliveries, the payments and the
 * status checks. Nothing is cast or filled in later. Each part is entered in `started` as soon as
 * it runs, so a failed start stops exactly what had started.
 */

/** A part of the running gateway, and how to stop it. */
export interface Part {
  name: string;
  stop: () => unknown;
}

/** Everything behind the HTTP server, each part entered in `started` as soon as it runs. */
export async function createServices(
  loaded: Config,
  logger: ProcessLogger,
  started: Part[],
): Promise<Services> {
  const { log } = logger;
  // Both child processes start at once, and both are stopped if either start fails. The dev
  // chain is a development nicety, never a reason not to start: without anvil, run without x402.
  const [chainResult, workersResult] = await Promise.allSettled([
    // The x402 modules (viem) are loaded only when x402 is on: they are a large share of start-up time.
    loaded.devChain && !loaded.x402
      ? import("./payments/dev-chain.js").then(({ startDevChain }) =>
          startDevChain(loaded.x402Tuning),
        )
      : null,
    needsBundledWorkers(loaded.workers) ? startBundledWorkers(log) : null,
  ]);
  const devChain = chainResult.status === "fulfilled" ? chainResult.value : null;
  if (devChain) started.push({ name: "dev chain", stop: devChain.stop });
  if (chainResult.status === "rejected") {
    log.warn(
      { err: (chainResult.reason as Error).message },
      "no local chain could be started (install Foundry's anvil or set ANVIL_BINARY): running without x402",
    );
  }
  if (workersResult.status === "rejected")
    throw new StartupError(
      `the bundled tool workers could not start: ${(workersResult.reason as Error).message}`,
    );
  const bundled = workersResult.value;
  if (bundled) started.push({ name: "bundled workers", stop: bundled.stop });

  const store = createStore(loaded);
  started.push({ name: "store", stop: () => store.close() });
  const secretKeys = await resolveSecretKeys(loaded, store).catch((err: Error) => {
    throw new StartupError(`the store at REDIS_URL cannot be used: ${err.message}`);
  });
  const adminKeyDerived = !loaded.adminApiKey && loaded.env !== "production";
  // What start-up learned (the dev chain, the keys kept in the store) makes a new, frozen
  // configuration: the loaded one is never edited.
  const config: Config = deepFreeze({
    ...loaded,
    x402: devChain?.x402 ?? loaded.x402,
    secretKeys,
    adminApiKey: adminKeyDerived ? developmentAdminKey(secretKeys[0]!) : loaded.adminApiKey,
  });
  // The secrets start-up learned (a development admin key, keys kept in the store) are redacted too.
  logger.protect(secretValues(config));

  const pools = new WorkerPools(
    {
      urls: {
        general: config.workers.general ?? bundled!.url,
        provider: config.workers.provider ?? bundled!.url,
        heavy: config.workers.heavy ?? bundled!.url,
      },
      concurrency: {
        general: config.poolConcurrency,
        provider: config.poolConcurrency,
        heavy: config.heavyPoolConcurrency,
      },
      queueTimeoutMs: config.poolQueueTimeoutMs,
      maxResponseBytes: config.workerMaxResponseBytes,
      dedicatedAllowPrivate: config.dedicatedWorkersAllowPrivateTargets,
      dedicatedMaxDepth: config.bodyMaxDepth,
    },
    log,
  );
  await pools.start();
  started.push({ name: "worker pools", stop: () => pools.stop() });
  const upstream = new UpstreamTools(
    store,
    { ...config.upstream, maxDepth: config.bodyMaxDepth },
    config.upstream.tools,
    config.secretKeys,
    log,
  );
  started.push({ name: "upstream tools", stop: () => upstream.close() });
  const metrics = new Metrics();
  metrics.watchStore(store);
  metrics.onScrape(() => {
    for (const pool of ["general", "provider", "heavy"] as const) {
      metrics.inFlight.set({ pool }, pools.gate(pool).inFlight);
      metrics.queueDepth.set({ queue: `worker-pool-${pool}` }, pools.gate(pool).queued);
    }
  });
  const openCharges = startOpenCharges({ store, log, metrics });
  started.push({ name: "open charges", stop: () => openCharges.stop() });
  const mailer = createMailer({ smtpUrl: config.smtpUrl, from: config.mailFrom, log });
  started.push({ name: "mailer", stop: () => mailer.close() });
  // Built in layers, each from what exists before it: the object is never half-made.
  const foundation: Foundation = {
    config,
    store,
    log,
    requestLog: logger.requestLog,
    redactSecrets: logger.redact,
    pools,
    upstream,
    metrics,
    requestGuard: new RequestGuard(log, logger.redact),
    readiness: new Readiness(),
    providerHealth: new ProviderHealth(),
    openCharges,
    mailer,
    refusedCredentials: new RefusedCredentials({ config, store }),
  };

  // The database drivers (pg, PGlite) are loaded only when there are books to keep.
  const booksConfig = config.books;
  const books = booksConfig
    ? await import("./books/index.js")
        .then(({ startBooks }) => startBooks(foundation, booksConfig))
        .catch((err: Error) => {
          throw new StartupError(
            `the books database (DATABASE_URL) cannot be used: ${err.message}`,
          );
        })
    : null;
  if (books) started.push({ name: "books", stop: () => books.stop() });
  else if (config.env === "production")
    log.warn(
      "no books database (DATABASE_URL unset or none): the ledger stays in Redis, unexported and untrimmed; set DATABASE_URL to a PostgreSQL server",
    );
  const deliveryAgent = createDeliveryAgent(config.webhookAllowPrivateTargets);
  started.push({ name: "delivery agent", stop: () => deliveryAgent.destroy() });
  const deliveries = config.redisUrl
    ? createBullQueue(foundation, deliveryAgent, config.redisUrl)
    : createInProcessQueue(foundation, deliveryAgent);
  started.push({ name: "delivery queue", stop: () => deliveries.close() });
  // With the books on, the event log holds each event until the exporter has moved it to SQL.
  const relay = startRelay(foundation, deliveries, {
    exportsEvents: books !== null,
  });
  started.push({ name: "relay", stop: () => relay.stop() });
  let payments: Payments | null = null;
  if (config.x402) {
    const [{ Payments }, { startReconciler }] = await Promise.all([
      import("./payments/payments.js"),
      import("./payments/reconciler.js"),
    ]);
    payments = new Payments({ ...foundation, books }, config.x402);
    const reconciler = startReconciler({ ...foundation, books }, payments);
    started.push({ name: "reconciler", stop: () => reconciler.stop() });
  }
  const withoutStatus = { ...foundation, books, deliveries, payments };
  const status = createStatusService(withoutStatus);
  started.push({ name: "status checks", stop: () => status.stop() });
  const services: Services = { ...withoutStatus, status };
  if (config.devSeed) {
    const dev = await developmentAccount(services);
    // The banner goes through the log sink: it never blocks on a stalled terminal or pipe.
    log.info({ account_id: dev.account.id, created: dev.created }, "development account ready");
    logger.print(developmentBanner(config, dev, adminKeyDerived, devChain?.rpcUrl ?? null));
  }
  return services;
}
