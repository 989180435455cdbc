import cluster from "node:cluster";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { createApp } from "./app.js";
import { loadConfig, secretValues, TIMER_MAX_MS, type Config } from "./config.js";
import { settingsOrExit } from "./lib/settings.js";
import { createServices, type Part } from "./create-services.js";
import { StartupError } from "./lib/startup-error.js";
import type { Services } from "./services.js";
import { createProcessLogger, type ProcessLogger } from "./lib/logger.js";
import { NOTHING_TO_REDACT, type Redactor, secretRedactor } from "./lib/redact.js";
import { guardProcess } from "./http/request-guard.js";
import {
  answerClientError,
  answerConnect,
  markUnmetExpectation,
  recordRefusals,
  type RecordRefusal,
} from "./http/client-errors.js";
import { cutStalledReader, recordCuts, type RecordCut } from "./http/stalled-readers.js";
import { runPrimary, STARTED } from "./cluster.js";
import { listen } from "./http/listen.js";
import { markAwaitsContinue } from "./http/expect-continue.js";
import { isMainModule } from "./lib/main-module.js";

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
/** How long the answers of calls interrupted by the shutdown get to reach their callers. */
const INTERRUPTED_ANSWERS_MS = 1000;

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
/** What is recorded of connections ended below the routes: refused by Node's parser, cut for not reading. */
type Recorders = { refusal: RecordRefusal; cut: RecordCut };

/**
 * Binds the port before anything else starts, so a busy port fails at once, alone, with one
 * clear line — and no child process is left behind. Requests that arrive before the app is
 * ready wait for it.
 */
async function bindServer(
  config: Config,
): Promise<{ server: Server; serve(app: Handler, record: Recorders): void }> {
  let app: Handler | null = null;
  let recordRefusal: RecordRefusal | undefined;
  let recordCut: RecordCut | undefined;
  const waiting: [IncomingMessage, ServerResponse][] = [];
  // A slow client cannot hold a connection by trickling its request: the timeouts are checked
  // every second, not every 30 s (Node's default). Nor by not reading its answer: see stalled-readers.ts.
  const handle: Handler = (req, res) => (app ? app(req, res) : waiting.push([req, res]));
  const server = createServer(
    {
      headersTimeout: config.headersTimeoutMs,
      requestTimeout: config.requestTimeoutMs,
      connectionsCheckingInterval: 1000,
      keepAliveTimeout: 65_000,
      // Node's own answers to these are bare (no body, no request id): the routes answer them in
      // the one shape instead (http/client-errors.ts `refuseUnservable`), CONNECT below.
      requireHostHeader: false,
    },
    handle,
  )
    .on("checkExpectation", (req, res) => handle(markUnmetExpectation(req), res))
    .on("checkContinue", (req, res) => handle(markAwaitsContinue(req), res))
    .on("connect", (_req, socket) => answerConnect(socket, recordRefusal))
    .on("clientError", (err, socket) => answerClientError(err, socket, recordRefusal))
    .on("timeout", (socket: Socket) => cutStalledReader(socket, recordCut));
  server.timeout = config.sendTimeoutMs;
  await listen(server, config.port, config.host);
  return {
    server,
    serve(handler, record) {
      app = handler;
      recordRefusal = record.refusal;
      recordCut = record.cut;
      for (const [req, res] of waiting.splice(0)) handler(req, res);
    },
  };
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
  // From the first line on: a failure to start can name a URL setting (or hold a library's error that does).
  logger.protect(secretValues(config));
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
    services = await createServices(config, logger, started);
  } catch (err) {
    await stopAll();
    throw err;
  }
  serve(createApp(services), {
    refusal: recordRefusals(services.requestLog, services.metrics),
    cut: recordCuts(services.requestLog, services.metrics),
  });
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
      // A load balancer is told first (/readyz 503) and given the time to take this process out
      // while it still serves everything: closing the listener at once would refuse the requests
      // it keeps sending until its health checks notice.
      services.readiness.drain();
      // The status checks probe this process's own listener, which is about to close: their
      // rounds from now on would record this process leaving as a REST API and MCP outage in the
      // uptime every process shares. The other processes go on checking. Not awaited: a round
      // running now is dropped, not waited for.
      void services.status.stopChecks();
      if (config.shutdownDelayMs > 0) {
        log.info(
          { delay_ms: config.shutdownDelayMs },
          "shutting down: answering /readyz 503 before closing the listener",
        );
        await new Promise((resolve) => setTimeout(resolve, config.shutdownDelayMs));
      }
      log.info("shutting down: finishing in-flight requests");
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Keep-alive connections go idle as their last response is sent: close each as it does.
      const sweep = setInterval(() => server.closeIdleConnections(), 50);
      server.closeIdleConnections();
      await bounded(closed, config.shutdownGraceMs);
      // Calls still charged are refunded and answered before anything closes, then given a
      // moment to reach their callers.
      await bounded(services.requestGuard.interruptHeld(), CLEANUP_BOUND_MS);
      await bounded(closed, INTERRUPTED_ANSWERS_MS);
      clearInterval(sweep);
      server.closeAllConnections();
      await stopAll();
      log.info("stopped");
      await logger.flush(1000);
    })());
  return { server, services, stop };
}

async function main(): Promise<void> {
  // Its problems name settings, never their values (a secret's is not known yet to redact).
  const config = settingsOrExit(() => loadConfig());
  // From here on a failure to start is written without the configured secrets: its message
  // (a library's error) can name a URL setting. The logger's redactor, once there is one, also
  // knows the secrets start-up learned (a development admin key, the keys kept in the store).
  let redact: Redactor = secretRedactor(secretValues(config));
  try {
    const logger = createProcessLogger({
      level: config.logLevel,
      redact: { paths: REDACT, censor: "[redacted]" },
    });
    redact = (text) => logger.redact(text);
    // WEB_CONCURRENCY > 1: this process only supervises; the forked processes serve.
    if (config.webConcurrency > 1 && cluster.isPrimary) {
      logger.protect(secretValues(config));
      return await runPrimary(config, logger);
    }
    // Installed before anything starts: a signal during start-up ends the process at once (its
    // children go with it), rather than by the default action half-way through.
    // A signal repeated during the drain is ignored: a SIGTERM sent to the whole process group
    // (systemd's default, `timeout`, `kill -- -PGID`) reaches this process twice when npm forwards
    // it too, and Node's default action would cut every call the drain is finishing. The grace
    // period's timer already bounds the shutdown.
    let stop: (() => Promise<void>) | null = null;
    let stopping = false;
    for (const signal of ["SIGTERM", "SIGINT"] as const) {
      process.on(signal, () => {
        if (stopping) return;
        stopping = true;
        if (!stop) process.exit(1);
        // Whatever a part or the log sink does, the process is gone once the delay, the grace
        // period and the bounded clean-up are over. Unref'd: it never keeps a finished process alive.
        // Capped at a Node timer's longest: past it Node fires the timer at once, which would cut
        // the drain short for the largest settings.
        setTimeout(
          () => process.exit(1),
          Math.min(
            TIMER_MAX_MS,
            config.shutdownDelayMs + config.shutdownGraceMs + CLEANUP_BOUND_MS * 2,
          ),
        ).unref();
        stop().then(
          () => process.exit(0),
          () => process.exit(1),
        );
      });
    }
    const started = await start(config, logger);
    guardProcess(process, started.services.requestGuard);
    stop = started.stop;
    // A forked gateway process tells its primary it started (cluster.ts): one that ends before
    // saying so failed to start, and the primary stops rather than fork it again and again.
    if (cluster.isWorker) process.send?.(STARTED);
  } catch (err) {
    failedToStart(err, redact);
  }
}

/** What a failed start writes to stderr: one line for a failure the operator can act on, the stack otherwise; `redact`ed. */
export function startupFailureText(err: unknown, redact: Redactor): string {
  return redact(
    err instanceof StartupError
      ? `Toolgate could not start: ${err.message}\n`
      : `Toolgate failed to start: ${err instanceof Error ? err.stack : String(err)}\n`,
  );
}

function failedToStart(err: unknown, redact: Redactor): never {
  process.stderr.write(startupFailureText(err, redact));
  process.exit(1);
}

/** The process entry: run directly (`node dist/src/main.js`) or by `npm start` (scripts/start.mjs). */
export function run(): void {
  main().catch((err) => failedToStart(err, NOTHING_TO_REDACT));
}

if (isMainModule(import.meta.url)) run();
