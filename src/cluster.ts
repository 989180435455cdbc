import cluster, { type Worker } from "node:cluster";
import { createServer } from "node:net";
import type { Config } from "./config.js";
import { listen } from "./http/listen.js";
import type { ProcessLogger } from "./lib/logger.js";
import { CONFIG_ERROR_EXIT } from "./lib/settings.js";
import { envPrefix } from "./payments/networks.js";
import { needsBundledWorkers, startBundledWorkers } from "./tools/bundled-workers.js";

/**
 * `WEB_CONCURRENCY=N` (N > 1): this primary process serves nothing itself. It starts what must exist
 * once per machine — the bundled tool workers and, in development, the local chain — then forks N
 * gateway processes that share its port (node:cluster hands connections out round robin), restarts
 * one that dies, and on SIGTERM/SIGINT tells each to drain (they run the usual graceful shutdown)
 * before stopping the shared children. The gateway processes share all state through Redis, as
 * separate replicas do. It logs through the same redacting sink as a gateway process (`logger`):
 * the bundled workers' and the local chain's failures it reports can carry configured secrets.
 */
/** What a gateway process sends its primary once it has started (main.ts). */
export const STARTED = "toolgate:started";

export async function runPrimary(config: Config, logger: ProcessLogger): Promise<void> {
  const log = logger.log.child({ role: "primary" });
  // Installed before anything starts, as in a single process (main.ts): a signal during start-up
  // ends this process at once (its children go with it: their IPC channel or watchdog pipe
  // closes); once started, it drains (`shutdown`). The bundled workers' supervisor reads these
  // handlers as "this process shuts down on a signal" (tools/bundled-workers.ts).
  let started = false;
  for (const signal of ["SIGTERM", "SIGINT"] as const)
    process.on(signal, () => (started ? shutdown(0) : process.exit(1)));
  // The port is tried before anything starts, as a single process does: a busy port is one line
  // and exit 1, not N processes failing and a bundled worker left behind.
  const probe = createServer();
  await listen(probe, config.port, config.host);
  await new Promise((resolve) => probe.close(resolve));
  const [devChain, bundled] = await Promise.all([
    config.devChain && !config.x402
      ? import("./payments/dev-chain.js")
          .then(({ startDevChain }) => startDevChain(config.x402Tuning))
          .catch((err: Error) => {
            log.warn({ err: err.message }, "no local chain could be started: running without x402");
            return null;
          })
      : null,
    // Once for all the gateway processes, which are handed its URL for the pools it serves.
    needsBundledWorkers(config.workers) ? startBundledWorkers(log) : null,
  ]);
  // What every gateway process must share is started here once and handed down as settings. (The
  // development secret and admin key need nothing: they are kept in Redis, which they share.)
  const shared: Record<string, string> = {
    ...(bundled ? { WORKERS_URL: bundled.url } : {}),
    ...(devChain ? chainSettings(devChain.x402) : {}),
  };

  let stopping = false;
  /** Drains every gateway process, stops the shared children, and exits with `code`; once. */
  const shutdown = (code: number) => {
    if (stopping) return; // a repeated signal (one sent to the whole group) changes nothing
    stopping = true;
    const workers = Object.values(cluster.workers ?? {}).filter(
      (w): w is Worker => !!w && !w.isDead(),
    );
    log.info({ processes: workers.length }, "shutting down: draining the gateway processes");
    const exited = workers.map(
      (w) =>
        new Promise<void>((resolve) => (w.isDead() ? resolve() : w.once("exit", () => resolve()))),
    );
    for (const w of workers) w.process.kill("SIGTERM");
    void Promise.all(exited)
      .then(async () => {
        await bundled?.stop();
        await devChain?.stop();
        log.info("stopped");
        await logger.flush(1000);
      })
      .then(
        () => process.exit(code),
        () => process.exit(1),
      );
  };
  /** A process that dies within this long of its start is restarted after a pause, so a crash cannot spin. */
  const QUICK_DEATH_MS = 5_000;
  /** The longest pause before the next try after starts that failed in a row. */
  const RESTART_BACKOFF_MAX_MS = 30_000;
  /** Replacements that may fail in a row while no process serves before the primary gives up. */
  const FAILED_STARTS_WITH_NONE_SERVING = 3;
  let forked = 0;
  /** Starts that failed in a row (a process that died before it served); 0 once one serves. */
  let failedStarts = 0;
  /** Processes that said they serve and have not exited. */
  let serving = 0;
  /** Forks again after `delayMs`, unless the shutdown began meanwhile. */
  const replace = (delayMs: number) =>
    setTimeout(() => {
      if (!stopping) fork(true);
    }, delayMs);
  /** `replacement`: forked for a process that died, not one of the first N. */
  const fork = (replacement: boolean): Worker => {
    const started = Date.now();
    let served = false;
    // The development banner (account, keys) is printed by the first process only.
    const worker = cluster.fork(forked++ === 0 ? shared : { ...shared, DEV_SEED: "0" });
    worker.on("message", (message) => {
      if (message !== STARTED || served) return;
      served = true;
      serving++;
      failedStarts = 0;
    });
    worker.once("exit", (code, signal) => {
      if (served) serving--;
      if (stopping) return;
      if (!served) {
        // One of the first N that died before it served, or any start refused for its
        // configuration (exit 78: a TOOLS_FILE edited since, say): a failed start every other
        // fork would repeat with these settings. So is a replacement that keeps failing while no
        // process serves: the operator's supervisor is told (the primary exits), not a log alone.
        failedStarts++;
        const stop =
          !replacement ||
          code === CONFIG_ERROR_EXIT ||
          (serving === 0 && failedStarts >= FAILED_STARTS_WITH_NONE_SERVING);
        if (stop) {
          log.error(
            { worker: worker.process.pid, code, signal, failed_starts: failedStarts },
            "a gateway process could not start: stopping",
          );
          return shutdown(code || 1);
        }
        // A replacement killed by a signal (the OOM killer) or failed where the same settings had
        // started before: the processes still serving keep serving, and another is tried, later
        // each time.
        const delayMs = Math.min(1_000 * 2 ** (failedStarts - 1), RESTART_BACKOFF_MAX_MS);
        log.error(
          { worker: worker.process.pid, code, signal, retry_in_ms: delayMs },
          "a gateway process died during its start; starting another",
        );
        replace(delayMs);
        return;
      }
      const quick = Date.now() - started < QUICK_DEATH_MS;
      log.error(
        { worker: worker.process.pid, code, signal },
        "a gateway process exited; starting another",
      );
      replace(quick ? 1_000 : 0);
    });
    return worker;
  };
  for (let i = 0; i < config.webConcurrency; i++) fork(false);
  started = true;
  log.info({ processes: config.webConcurrency, port: config.port }, "primary started");
}

/**
 * The dev chain's x402 settings as the environment variables config.ts reads. (Its tuning came from
 * this process's environment, which the forked processes inherit.)
 */
function chainSettings(x402: NonNullable<Config["x402"]>): Record<string, string> {
  const network = x402.networks[0]!;
  const prefix = envPrefix(network.name);
  return {
    X402_NETWORKS: network.name,
    [`${prefix}_RPC_URL`]: network.rpcUrls.join(","),
    [`${prefix}_USDC_ADDRESS`]: network.usdc.address,
    [`${prefix}_USDC_NAME`]: network.usdc.name,
    [`${prefix}_USDC_VERSION`]: network.usdc.version,
    X402_PAY_TO: x402.payTo,
    X402_RELAYER_PRIVATE_KEYS: x402.relayerKeys.join(","),
  };
}
