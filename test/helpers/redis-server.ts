import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A Redis of the test's own (AOF, fsync always), that the test can kill and bring back on the same port with its data. */
export async function startPrivateRedis() {
  const dir = mkdtempSync(join(tmpdir(), "toolgate-redis-"));
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
  let child: ChildProcess;
  const start = async () => {
    child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--appendonly", "yes", "--appendfsync", "always", "--save", ""], { stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on("data", (d: Buffer) => d.toString().includes("Ready to accept connections") && resolve());
      child.once("exit", (code) => reject(new Error(`redis-server exited ${code}`)));
    });
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    async kill() {
      const exited = once(child, "exit");
      child.kill("SIGKILL");
      await exited;
    },
    restart: start,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = once(child, "exit");
        child.kill("SIGTERM");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
