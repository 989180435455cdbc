import type { Server } from "node:http";
import { pino } from "pino";
import { loadWorkerConfig, type WorkerConfig } from "./config.js";
import { HeavyPool } from "./heavy/pool.js";
import { createWorkerApp } from "./server.js";

/** The tool workers as a process of their own. Prints `{"msg":"workers listening","port":…}` when ready. */
export async function startWorkers(config: WorkerConfig): Promise<{ server: Server; port: number; stop(): Promise<void> }> {
  const log = pino({ level: config.logLevel, base: { service: "toolgate-workers" } });
  const heavy = new HeavyPool(config, log);
  const app = createWorkerApp(config, log, heavy);
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(config.port, config.host, () => resolve(s));
  });
  server.keepAliveTimeout = 65_000;
  const port = (server.address() as { port: number }).port;
  log.info({ port, ai: Boolean(config.ai), search: config.search?.provider ?? null }, "workers listening");
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

if (import.meta.url === `file://${process.argv[1]}`) {
  startWorkers(loadWorkerConfig()).then(({ stop }) => {
    for (const signal of ["SIGTERM", "SIGINT"] as const) process.once(signal, () => stop().then(() => process.exit(0)));
    // Started by a gateway (bundled): leave with it, however it ended.
    if (process.send) process.once("disconnect", () => stop().then(() => process.exit(0)));
  });
}
