import { createServer, type Server } from "node:http";
import { listen } from "../http/listen.js";
import { createProcessLogger } from "../lib/logger.js";
import { loadWorkerConfig, type WorkerConfig } from "./config.js";
import { watchEventLoop } from "../lib/loop-watchdog.js";
import { HeavyPool } from "./heavy/pool.js";
import { createWorkerApp } from "./server.js";
import { isMainModule } from "../lib/main-module.js";
import { settingsOrExit } from "../lib/settings.js";

/**
 * The tool workers as a process of their own. Logs `{"msg":"workers listening","port":…}` when
 * ready; started by a gateway (bundled), they also tell it over IPC (`{type:"ready", port}`),
 * since readiness must not depend on the log level.
 */
export async function startWorkers(
  config: WorkerConfig,
): Promise<{ server: Server; port: number; stop(): Promise<void> }> {
  const { log, flush, protect } = createProcessLogger({
    level: config.logLevel,
    base: { service: "toolgate-workers" },
  });
  // A provider's error text, logged for the operator (providers/provider-refusal.ts), may quote
  // the key it was sent: cut out of every line, as the gateway cuts out its own secrets.
  protect(
    [
      config.ai?.apiKey,
      config.search?.provider === "brave" ? config.search.apiKey : undefined,
    ].filter((key): key is string => Boolean(key)),
  );
  const heavy = new HeavyPool(config, log);
  const app = createWorkerApp(config, log, heavy);
  // The gateway's own listen: a busy port is one line an operator can act on, where express's
  // listen called back with its error as if it had bound, and the port was read off no address.
  const server = createServer(app);
  try {
    await listen(server, config.port, config.host);
  } catch (err) {
    await heavy.destroy();
    throw err;
  }
  server.keepAliveTimeout = 65_000;
  const port = (server.address() as { port: number }).port;
  log.info(
    { port, ai: Boolean(config.ai), search: config.search?.provider ?? null },
    "workers listening",
  );
  void flush(1000); // at once, not with the next batch: a supervisor may be waiting for this line
  return {
    server,
    port,
    stop: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await heavy.destroy();
    },
  };
}

/** How often a bundled worker process tells the gateway its event loop runs (tools/bundled-workers.ts). */
const HEARTBEAT_MS = 1000;

/** Leaves within 5 s whatever open connections do. */
const STOP_BOUND_MS = 5000;

if (isMainModule(import.meta.url)) {
  const config = settingsOrExit(() => loadWorkerConfig());
  // A loop held by one call serves no one: the process ends and its supervisor restarts it.
  if (config.eventLoopStallMs > 0)
    watchEventLoop({ stallMs: config.eventLoopStallMs, service: "toolgate-workers" });
  // Started by a gateway (bundled), there is an IPC channel to it: the gateway alone decides when
  // these workers leave, by closing that channel (tools/bundled-workers.ts), or by ending, which
  // closes it too (SIGKILL included), so they never outlive it. A SIGTERM or SIGINT sent to the
  // whole process group (systemd, `timeout`, Ctrl-C) reaches them as well as the gateway: they stay
  // for its drain, which may still need them, and are stopped after it. Run on their own, they
  // leave on those signals.
  const bundled = typeof process.send === "function";
  let stopWorkers: (() => Promise<void>) | null = null;
  let leaving = false;
  const leave = () => {
    if (leaving) return;
    leaving = true;
    setTimeout(() => process.exit(0), STOP_BOUND_MS).unref();
    void (stopWorkers?.() ?? Promise.resolve()).then(() => process.exit(0));
  };
  for (const signal of ["SIGTERM", "SIGINT"] as const)
    if (bundled) process.on(signal, () => {});
    else process.once(signal, leave);
  if (bundled) process.once("disconnect", leave);
  startWorkers(config).then(
    ({ port, stop }) => {
      stopWorkers = stop;
      if (!bundled) return;
      // The gateway may be gone already (stopped during start-up): then nothing is told, and
      // this process leaves quietly. A send that fails (the channel closed meanwhile) does too.
      if (!process.connected) return leave();
      process.send!({ type: "ready", port }, (err: Error | null) => err && leave());
      // The heartbeat the gateway watches: silent for long, this loop is stuck and gets restarted.
      setInterval(() => {
        if (process.connected) process.send!({ type: "alive" }, () => {});
      }, HEARTBEAT_MS).unref();
    },
    (err: Error) => {
      process.stderr.write(`the tool workers could not start: ${err.message}\n`);
      process.exit(1);
    },
  );
}
