import { fork, type ChildProcess } from "node:child_process";
import type { Logger } from "pino";

/**
 * With no WORKERS_URL, the gateway runs the bundled tool workers as a child process on a free
 * loopback port (so several gateways can run side by side), and restarts them if they die.
 *
 * Readiness travels over the IPC channel (`{type: "ready", port}`), never through log output,
 * so any LOG_LEVEL works; the wait is bounded. The same channel ties the workers to this
 * process: when it closes — this process stops them, or ended, SIGKILL included — they exit.
 * They ignore SIGTERM and SIGINT: one sent to the whole process group (systemd, `timeout`,
 * Ctrl-C) must not take them away from the drain of the calls this process is finishing.
 */
export const WORKERS_READY_TIMEOUT_MS = 30_000;
/**
 * How long the workers get to finish after being told to stop (their IPC channel closed) before
 * SIGKILL (within the gateway's 5 s bound on each part's stop, main.ts): their handlers are
 * JavaScript, which cannot run while a call keeps their event loop busy, and they must not
 * outlive the gateway. Whatever way this process exits (but SIGKILL, which closes their IPC
 * channel instead), it kills them on its way out too.
 */
export const WORKERS_STOP_GRACE_MS = 3_000;
/**
 * How long the workers' event loop may go without a heartbeat (one a second, over IPC) before
 * they are taken as stuck, killed and restarted. No tool's synchronous work comes near it (the
 * slow ones run in threads, the markup converters stop at 2 s): a loop silent this long is held
 * by a call the gateway gave up on at its deadline (refunded), and serves no one until killed.
 */
export const WORKERS_STALL_MS = 30_000;
const STALL_CHECK_MS = 1_000;

/** Where a gateway's tool pools are served, when a setting names a URL for them (config.ts `workers`). */
export type PoolUrls = Record<"general" | "provider" | "heavy", string | undefined>;

/**
 * Whether any pool is left to the bundled workers (no URL names its workers): the one question
 * both a single gateway process (create-services.ts) and a WEB_CONCURRENCY primary (cluster.ts,
 * which starts them once for all its processes) ask before starting them.
 */
export const needsBundledWorkers = (urls: PoolUrls): boolean =>
  !urls.general || !urls.provider || !urls.heavy;

/**
 * The signals on which a gateway process (main.ts) and a WEB_CONCURRENCY primary (cluster.ts)
 * begin to shut down. Received by a process that handles them so, workers that exit from then on
 * are not restarted: the shutdown stops them anyway.
 */
const SHUTDOWN_SIGNALS = ["SIGTERM", "SIGINT"] as const;

export async function startBundledWorkers(
  log: Logger,
  { readyTimeoutMs = WORKERS_READY_TIMEOUT_MS, stallMs = WORKERS_STALL_MS } = {},
): Promise<{ url: string; stop(): Promise<void>; pid(): number | undefined }> {
  const entry = new URL(
    `../workers/main${import.meta.url.endsWith(".ts") ? ".ts" : ".js"}`,
    import.meta.url,
  ).pathname;
  const execArgv = import.meta.url.endsWith(".ts") ? ["--import", "tsx"] : [];
  let child: ChildProcess;
  let stopping = false;
  /** The port the workers bound on first start: a restart must come back on it (the gateway knows no other). */
  let boundPort = 0;
  /** When the running workers' event loop last ran (their heartbeat); 0 until they are ready. */
  let lastBeat = 0;

  const launch = (port: number) =>
    new Promise<number>((resolve, reject) => {
      // Their log lines go straight to this process's stdout.
      child = fork(entry, [], {
        execArgv,
        env: { ...process.env, PORT: String(port), HOST: "127.0.0.1" },
        stdio: ["ignore", "inherit", "inherit", "ipc"],
      });
      let ready = false;
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        reject(
          new Error(`the bundled workers did not report ready within ${readyTimeoutMs / 1000} s`),
        );
      }, readyTimeoutMs);
      child.on("message", (message: { type?: string; port?: number }) => {
        if (ready && message?.type === "alive") lastBeat = Date.now();
        if (ready || message?.type !== "ready" || typeof message.port !== "number") return;
        ready = true;
        clearTimeout(timer);
        boundPort = message.port;
        lastBeat = Date.now();
        resolve(boundPort);
      });
      child.once("exit", (code, signal) => {
        clearTimeout(timer);
        lastBeat = 0;
        if (!ready)
          return reject(new Error(`the bundled workers exited at start (${code ?? signal})`));
        if (stopping) return;
        log.error({ code, signal }, "the bundled workers exited; restarting them");
        setTimeout(() => {
          if (stopping) return; // the shutdown began meanwhile
          launch(boundPort).catch((err: Error) =>
            log.error({ err: err.message }, "could not restart the bundled workers"),
          );
        }, 200);
      });
    });

  const port = await launch(0);
  // Only in a process that shuts down on these signals (its handlers are installed before
  // anything starts): elsewhere (a test starting workers in its own process) nothing is added
  // that would keep a signal from ending the process.
  const shuttingDown = () => {
    stopping = true;
  };
  const watched = SHUTDOWN_SIGNALS.filter((signal) => process.listenerCount(signal) > 0);
  for (const signal of watched) process.once(signal, shuttingDown);
  const stallCheck = setInterval(() => {
    const silentMs = Date.now() - lastBeat;
    if (stopping || lastBeat === 0 || silentMs < stallMs) return;
    lastBeat = 0; // once: the exit restarts them
    log.error(
      { silent_ms: silentMs, pid: child.pid },
      "the bundled workers' event loop is stuck; killing them to restart them",
    );
    child.kill("SIGKILL");
  }, STALL_CHECK_MS);
  stallCheck.unref();
  const killOnExit = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  };
  process.once("exit", killOnExit);
  return {
    url: `http://127.0.0.1:${port}`,
    pid: () => child.pid,
    async stop() {
      stopping = true;
      clearInterval(stallCheck);
      process.off("exit", killOnExit);
      for (const signal of watched) process.off(signal, shuttingDown);
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      // Closing the channel is what tells them to leave (they ignore SIGTERM, see above).
      if (child.connected) child.disconnect();
      const killer = setTimeout(() => {
        log.warn("the bundled workers did not stop when told to; killing them");
        child.kill("SIGKILL");
      }, WORKERS_STOP_GRACE_MS);
      await exited.finally(() => clearTimeout(killer));
    },
  };
}
