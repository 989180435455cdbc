import cluster from "node:cluster";
import { createServer, type Server } from "node:http";
import { pino } from "pino";
import { createAccount } from "./accounts/accounts.js";
import { createMailer } from "./accounts/mailer.js";
import { createApp } from "./app.js";
import { ConfigError, loadConfig, type Config } from "./config.js";
import type { Services } from "./services.js";
import { createStore } from "./store/index.js";
import { randomId } from "./lib/ids.js";
import { startBundledWorkers } from "./tools/bundled-workers.js";
import { WorkerPools } from "./tools/worker-pools.js";
import { createDeliveryAgent } from "./webhooks/deliver.js";
import { createBullQueue, createInProcessQueue } from "./webhooks/queue.js";
import { startRelay } from "./webhooks/relay.js";
import { Payments } from "./payments/payments.js";
import { startReconciler } from "./payments/reconciler.js";
import { startDevChain } from "./payments/dev-chain.js";
import { Metrics } from "./http/metrics.js";
import { createStatusService } from "./status/index.js";
import { RequestGuard, guardProcess } from "./http/request-guard.js";
import { answerClientError } from "./http/client-errors.js";
import { runPrimary } from "./cluster.js";

/** Secrets never reach the log, wherever they appear in a logged object. */
const REDACT = ["*.apiKey", "*.api_key", "*.secret", "*.password", "req.headers['x-api-key']", "headers['x-api-key']"];

async function seedDevelopmentAccount(services: Services, chainRpcUrl: string | null): Promise<void> {
  const { account, apiKey } = await createAccount(services, { email: "dev@localhost", tier: "pro", credits: 1000, reason: "development seed" });
  const base = services.config.publicBaseUrl;
  const pay = chainRpcUrl
    ? `  x402: a local chain standing in for base-sepolia runs at ${chainRpcUrl}; anvil's standard test accounts\n` +
      `    hold 1,000 test USDC each. Pay for a call from one (no API key):\n` +
      `    CHAIN_RPC_URL=${chainRpcUrl} TOOLGATE_URL=${base} npm run pay -- hash '{"text":"hello"}'\n`
    : "";
  process.stdout.write(
    `\nToolgate is running in development mode at ${base} (in-memory state: nothing is kept).\n` +
      `  Development account ${account.id} (Pro tier, 1000 credits):\n    x-api-key: ${apiKey}\n` +
      `  Admin key: ${services.config.adminApiKey}\n` +
      `  Try: curl -s ${base}/api/v1/account -H 'x-api-key: ${apiKey}'\n` +
      pay +
      "\n",
  );
}

export async function start(config: Config): Promise<{ server: Server; services: Services; stop: () => Promise<void> }> {
  // Buffered, not one write(2) per line: request logs are on the hot path. Flushed every
  // second, once listening, and on shutdown.
  const destination = pino.destination({ dest: 1, sync: false, minLength: 4096 });
  const flusher = setInterval(() => destination.flush(), 1000).unref();
  const log = pino({ level: config.logLevel, redact: { paths: REDACT, censor: "[redacted]" } }, destination);
  // Both child processes start at once. The dev chain is a development nicety, never a reason
  // not to start: without anvil, run without x402.
  const [devChain, bundled] = await Promise.all([
    config.devChain && !config.x402
      ? startDevChain().catch((err: Error) => {
          log.warn({ err: err.message }, "no local chain could be started (install Foundry's anvil or set ANVIL_BINARY): running without x402");
          return null;
        })
      : null,
    config.workers.general && config.workers.provider ? null : startBundledWorkers(log),
  ]);
  if (devChain) config.x402 = devChain.x402;
  const store = createStore(config);
  const pools = new WorkerPools(
    {
      urls: { general: config.workers.general ?? bundled!.url, provider: config.workers.provider ?? bundled!.url },
      concurrency: config.poolConcurrency,
      queueTimeoutMs: config.poolQueueTimeoutMs,
    },
    log,
  );
  await pools.start();
  const metrics = new Metrics();
  const services = { config, store, log, pools, metrics, requestGuard: new RequestGuard(log), mailer: createMailer({ smtpUrl: config.smtpUrl, from: config.mailFrom, log }) } as Services;
  metrics.onScrape(() => {
    for (const pool of ["general", "provider"] as const) {
      metrics.inFlight.set({ pool }, pools.gate(pool).inFlight);
      metrics.queueDepth.set({ queue: `worker-pool-${pool}` }, pools.gate(pool).queued);
    }
  });
  const deliveryAgent = createDeliveryAgent(config.webhookAllowPrivateTargets);
  services.deliveries = config.redisUrl ? createBullQueue(services, deliveryAgent, config.redisUrl) : createInProcessQueue(services, deliveryAgent);
  const relay = startRelay(services, services.deliveries);
  services.payments = config.x402 ? new Payments(services, config.x402) : null;
  const reconciler = services.payments ? startReconciler(services, services.payments) : null;
  services.status = createStatusService(services);
  if (config.devSeed) await seedDevelopmentAccount(services, devChain?.rpcUrl ?? null);

  const app = createApp(services);
  // A slow client cannot hold a connection by trickling its request: the timeouts are checked
  // every second, not every 30 s (Node's default).
  const server = createServer(
    { headersTimeout: config.headersTimeoutMs, requestTimeout: config.requestTimeoutMs, connectionsCheckingInterval: 1000, keepAliveTimeout: 65_000 },
    app,
  ).on("clientError", answerClientError);
  await new Promise<void>((resolve) => server.listen(config.port, config.host, () => resolve()));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  // The status checks probe this process's own doors, on the loopback address it listens on.
  services.status.start(`http://${config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host.includes(":") ? `[${config.host}]` : config.host}:${port}`);
  log.info({ port, store: config.redisUrl ? "redis" : "memory", env: config.env }, "listening");
  destination.flush();

  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      log.info("shutting down: finishing in-flight requests");
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Keep-alive connections go idle as their last response is sent: close each as it does.
      const sweep = setInterval(() => server.closeIdleConnections(), 50);
      server.closeIdleConnections();
      const deadline = new Promise<void>((resolve) => setTimeout(resolve, config.shutdownGraceMs).unref());
      await Promise.race([closed, deadline]);
      clearInterval(sweep);
      server.closeAllConnections();
      services.mailer.close();
      await services.status.stop();
      await relay.stop();
      await reconciler?.stop();
      await services.deliveries.close();
      deliveryAgent.destroy();
      pools.stop();
      await bundled?.stop();
      await store.close();
      await devChain?.stop();
      log.info("stopped");
      clearInterval(flusher);
      destination.flushSync();
    })());
  return { server, services, stop };
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
  if (config.env !== "production" && !config.adminApiKey) config.adminApiKey = `tg_admin_${randomId(32)}`;
  // WEB_CONCURRENCY > 1: this process only supervises; the forked processes below serve.
  if (config.webConcurrency > 1 && cluster.isPrimary) return runPrimary(config);
  const { stop, services } = await start(config);
  guardProcess(process, services.requestGuard);
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.once(signal, () => {
      stop().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    });
  }
}

/** The process entry: run directly (`node dist/src/main.js`) or by `npm start` (scripts/start.mjs). */
export function run(): void {
  main().catch((err) => {
    process.stderr.write(`Toolgate failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}

if (import.meta.url === `file://${process.argv[1]}`) run();
