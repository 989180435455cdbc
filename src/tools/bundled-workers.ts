import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import type { Logger } from "pino";

/**
 * With no WORKERS_URL, the gateway runs the bundled tool workers as a child process on a free
 * loopback port (so several gateways can run side by side), and restarts them if they die.
 */
export async function startBundledWorkers(log: Logger): Promise<{ url: string; stop(): Promise<void> }> {
  const entry = new URL(`../workers/main${import.meta.url.endsWith(".ts") ? ".ts" : ".js"}`, import.meta.url).pathname;
  const args = import.meta.url.endsWith(".ts") ? ["--import", "tsx", entry] : [entry];
  let child: ChildProcess;
  let stopping = false;
  /** The port the workers bound on first start: a restart must come back on it (the gateway knows no other). */
  let boundPort = 0;

  const launch = (port: number) =>
    new Promise<number>((resolve, reject) => {
      // The IPC channel is how the workers learn that this process died, even by SIGKILL.
      child = spawn(process.execPath, args, { env: { ...process.env, PORT: String(port), HOST: "127.0.0.1" }, stdio: ["ignore", "pipe", "inherit", "ipc"] });
      let ready = false;
      createInterface({ input: child.stdout! }).on("line", (line) => {
        if (!ready && line.includes('"msg":"workers listening"')) {
          ready = true;
          boundPort = (JSON.parse(line) as { port: number }).port;
          resolve(boundPort);
        }
        process.stdout.write(`${line}\n`);
      });
      child.once("exit", (code, signal) => {
        if (!ready) return reject(new Error(`the bundled workers exited at start (${code ?? signal})`));
        if (stopping) return;
        log.error({ code, signal }, "the bundled workers exited; restarting them");
        setTimeout(() => launch(boundPort).catch((err) => log.error({ err }, "could not restart the bundled workers")), 200);
      });
    });

  const port = await launch(0);
  return {
    url: `http://127.0.0.1:${port}`,
    async stop() {
      stopping = true;
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    },
  };
}
