import cluster from "node:cluster";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createMailer } from "./accounts/mailer.js";
import { createApp } from "./app.js";
import { ConfigError, loadConfig, type Config } from "./config.js";
import {
  developmentAccount,
  developmentAdminKey,
  developmentBanner,
  resolveSecretKeys,
} from "./development.js";
import type { Foundation, Services } from "./services.js";
import type { Payments } from "./payments/payments.js";
import { deepFreeze } from "./lib/deep-freeze.js";
import { createStore } from "./store/index.js";
import { startBooks } from "./books/index.js";
import { createProcessLogger, type ProcessLogger } from "./lib/logger.js";
import { startBundledWorkers } from "./tools/bundled-workers.js";
import { WorkerPools } from "./tools/worker-pools.js";
import { UpstreamTools } from "./tools/custom/registry.js";
import { createDeliveryAgent } from "./webhooks/deliver.js";
import { createBullQueue, createInProcessQueue } from "./webhooks/queue.js";
import { startRelay } from "./webhooks/relay.js";
import { Metrics } from "./http/metrics.js";
import { createStatusService } from "./status/index.js";
import { RequestGuard, guardProcess } from "./http/request-guard.js";
import { answerClientError } from "./http/client-errors.js";
import { runPrimary } from "./cluster.js";

/** Secrets never reach the log, wherever they appear in a logged object. */
const REDACT = [
  "*.apiKey",
  "*.api_key",
  "*.secret",
  "*.password",
  "req.headers['x-api-key']",
  "headers['x-api-key']",
];

/** After the grace period for in-flight requests, how long closing everything else may take. */
const CLEANUP_BOUND_MS = 5000;

/** A start-up failure the operator can act on: printed as one line, without a stack. */
export class StartupError extends Error {}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * Binds the port before anything else starts, so a busy port fails at once, alone, with one
 * clear line — and no child process is left behind. Requests that arrive before the app is
 * ready wait for it.
 */
async function bindServer(config: Config): Promise<{ server: Server; serve(app: Handler): void }> {
  let app: Handler | null = null;
  const waiting: [IncomingMessage, ServerResponse][] = [];
  // A slow client cannot hold a connection by trickling its request: the timeouts are checked
  // every second, not every 30 s (Node's default).
  const server = createServer(
    {
      headersTimeout: config.headersTimeoutMs,
      requestTimeout: config.requestTimeoutMs,
      connectionsCheckingInterval: 1000,
      keepAliveTimeout: 65_000,
    },
    (req, res) => (app ? app(req, res) : waiting.push([req, res])),
  ).on("clientError", answerClientError);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(config.port, config.host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EADDRINUSE") throw new StartupError(`port ${config.port} is in use; set PORT`);
    if (code === "EACCES")
      throw new StartupError(
        `port ${config.port} needs privileges this process does not have; set PORT`,
      );
    if (code === "EADDRNOTAVAIL")
      throw new StartupError(`HOST ${config.host} is not an address of this machine; set HOST`);
    throw err;
  }
  return {
    server,
    serve(handler) {
      app = handler;
      for (const [req, res] of waiting.splice(0)) handler(req, res);
    },
  };
}

/** A part of the running gateway, and how to stop it. */
interface Part {
  name: string;
  stop: () => unknown;
}

/** Waits for `promise`, at most `ms`: every wait at start-up failure and shutdown is bounded. */
const bounded = (promise: Promise<unknown>, ms: number) =>
  Promise.race([promise, new Promise((r) => setTimeout(r, ms).unref())]);

export async function start(
  config: Config,
  logger: ProcessLogger = createProcessLogger({
    level: config.logLevel,
    redact: { paths: REDACT, censor: "[redacted]" },
  }),
): Promise<{ server: Server; services: Services; stop: () => Promise<void> }> {
  const { log } = logger;
  const { server, serve } = await bindServer(config);
  /** What has been started so far, stopped in reverse order on a failed start or at shutdown. */
  const started: Part[] = [];
  const stopAll = async () => {
    for (const { name, stop } of started.splice(0).reverse()) {
      await bounded(Promise.resolve().then(stop), CLEANUP_BOUND_MS).catch((err: Error) =>
        log.warn({ err: err.message, part: name }, "could not stop cleanly"),
      );
    }
  };
  started.push({
    name: "server",
    stop: () =>
      new Promise((resolve) => server.close(resolve)).finally(() => server.closeAllConnections()),
  });

  let services: Services;
  try {
    services = await startServices(config, logger, started);
  } catch (err) {
    await stopAll();
    throw err;
  }
  serve(createApp(services));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  // The status checks probe this process's own doors, on the loopback address it listens on.
  services.status.start(
    `http://${config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host.includes(":") ? `[${config.host}]` : config.host}:${port}`,
  );
  log.info(
    {
      port,
      store: config.redisUrl ? "redis" : "memory",
      books: config.books
        ? config.books.url.startsWith("pglite:")
          ? "pglite"
          : "postgres"
        : "store",
      env: config.env,
    },
    "listening",
  );
  void logger.flush(1000);

  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      log.info("shutting down: finishing in-flight requests");
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Keep-alive connections go idle as their last response is sent: close each as it does.
      const sweep = setInterval(() => server.closeIdleConnections(), 50);
      server.closeIdleConnections();
      await bounded(closed, config.shutdownGraceMs);
      clearInterval(sweep);
      server.closeAllConnections();
      await stopAll();
      log.info("stopped");
      await logger.flush(1000);
    })());
  return { server, services, stop };
}

/** Everything behind the HTTP server, each part entered in `started` as soon as it runs. */
async function startServices(
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
      ? import("./payments/dev-chain.js").then(({ startDevChain }) => startDevChain())
      : null,
    loaded.workers.general && loaded.workers.provider && loaded.workers.heavy
      ? null
      : startBundledWorkers(log),
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
      dedicatedAllowPrivate: config.dedicatedWorkersAllowPrivateTargets,
    },
    log,
  );
  await pools.start();
  started.push({ name: "worker pools", stop: () => pools.stop() });
  const upstream = new UpstreamTools(store, config.upstream, config.upstream.tools);
  started.push({ name: "upstream tools", stop: () => upstream.close() });
  const metrics = new Metrics();
  metrics.onScrape(() => {
    for (const pool of ["general", "provider", "heavy"] as const) {
      metrics.inFlight.set({ pool }, pools.gate(pool).inFlight);
      metrics.queueDepth.set({ queue: `worker-pool-${pool}` }, pools.gate(pool).queued);
    }
  });
  const mailer = createMailer({ smtpUrl: config.smtpUrl, from: config.mailFrom, log });
  started.push({ name: "mailer", stop: () => mailer.close() });
  // Built in layers, each from what exists before it: the object is never half-made.
  const foundation: Foundation = {
    config,
    store,
    log,
    requestLog: log.child({}, { redact: [] }),
    pools,
    upstream,
    metrics,
    requestGuard: new RequestGuard(log),
    mailer,
  };

  const books = config.books
    ? await startBooks(foundation, config.books).catch((err: Error) => {
        throw new StartupError(`the books database (DATABASE_URL) cannot be used: ${err.message}`);
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
  const relay = startRelay(foundation, deliveries);
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

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw err;
  }
  // WEB_CONCURRENCY > 1: this process only supervises; the forked processes serve.
  if (config.webConcurrency > 1 && cluster.isPrimary) return runPrimary(config);
  const logger = createProcessLogger({
    level: config.logLevel,
    redact: { paths: REDACT, censor: "[redacted]" },
  });
  // Installed before anything starts: a signal during start-up ends the process at once (its
  // children go with it), rather than by the default action half-way through.
  let stop: (() => Promise<void>) | null = null;
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.once(signal, () => {
      if (!stop) process.exit(1);
      // Whatever a part or the log sink does, the process is gone once the grace period and
      // the bounded clean-up are over. Unref'd: it never keeps a finished process alive.
      setTimeout(() => process.exit(1), config.shutdownGraceMs + CLEANUP_BOUND_MS * 2).unref();
      stop().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    });
  }
  const started = await start(config, logger);
  guardProcess(process, started.services.requestGuard);
  stop = started.stop;
}

/** The process entry: run directly (`node dist/src/main.js`) or by `npm start` (scripts/start.mjs). */
export function run(): void {
  main().catch((err) => {
    process.stderr.write(
      err instanceof StartupError
        ? `Toolgate could not start: ${err.message}\n`
        : `Toolgate failed to start: ${err instanceof Error ? err.stack : String(err)}\n`,
    );
    process.exit(1);
  });
}

if (import.meta.url === `file://${process.argv[1]}`) run();
