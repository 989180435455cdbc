import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { connect, createServer } from "node:net";

/**
 * vitest global setup: the tests need a real Redis. When `TEST_REDIS_URL` is unset and nothing
 * answers at 127.0.0.1:6379, start a private `redis-server` from the PATH on a free port (stopped
 * after the run) and hand its address to every test worker through `TEST_REDIS_URL`. Without a
 * `redis-server` binary the run stops at once with one line saying how to get one.
 */
export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  if (process.env.TEST_REDIS_URL) return undefined;
  if (await answers(6379)) return undefined;
  if (spawnSync("redis-server", ["--version"], { stdio: "ignore" }).error) {
    throw new Error(
      "No Redis at 127.0.0.1:6379 and no redis-server on the PATH: install it (Debian: apt-get install -y redis-server) or set TEST_REDIS_URL.",
    );
  }
  const port = await freePort();
  const child = spawn(
    "redis-server",
    ["--bind", "127.0.0.1", "--port", String(port), "--save", "", "--appendonly", "no"],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  await ready(child);
  process.env.TEST_REDIS_URL = `redis://127.0.0.1:${port}`;
  process.stdout.write(`tests: started a private redis-server at ${process.env.TEST_REDIS_URL}\n`);
  return async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  };
}

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

function freePort(): Promise<number> {
  return new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

function ready(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error("redis-server did not start within 10 s")),
      10_000,
    );
    child.stdout!.on("data", (d: Buffer) => {
      if (d.toString().includes("Ready to accept connections")) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited ${code}`));
    });
  });
}
