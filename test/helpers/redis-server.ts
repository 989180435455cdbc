import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";

/**
 * A Redis of the test's own (AOF, fsync always), that the test can kill and bring back on the
 * same port with its data; `durable: false` keeps nothing on disk (a measurement's Redis).
 */
export async function startPrivateRedis({ durable = true }: { durable?: boolean } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "toolgate-redis-"));
  const port = await freePort();
  let child: ChildProcess;
  const start = async () => {
    child = await spawnRedis([
      "--port",
      String(port),
      "--dir",
      dir,
      ...(durable ? ["--appendonly", "yes", "--appendfsync", "always"] : ["--appendonly", "no"]),
    ]);
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
    /** Freezes the server (SIGSTOP): connections stay open and nothing answers, as with a hung host. */
    pause: () => child.kill("SIGSTOP"),
    resume: () => child.kill("SIGCONT"),
    async stop() {
      child.kill("SIGCONT");
      if (child.exitCode === null && child.signalCode === null) {
        const exited = once(child, "exit");
        child.kill("SIGTERM");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A real Redis Cluster of three masters on free ports, its 16,384 slots split between them
 * (formed with CLUSTER ADDSLOTSRANGE and MEET, so no redis-cli is needed). `url` is one node.
 */
export async function startRedisCluster({ durable = false }: { durable?: boolean } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "toolgate-cluster-"));
  // Six distinct ports, held open together while picked: one at a time, a port just closed could
  // be handed out again, a node's bus port then another's (a CI run's redis-server exited 1). The
  // bus ports would default to port + 10,000, which may be taken or above 65,535.
  const picked = await freePorts(6);
  const ports = picked.slice(0, 3);
  const busPorts = picked.slice(3);
  const argsOf = (i: number) => [
    ...["--port", String(ports[i]), "--dir", dir],
    // Durable: a master killed and restarted comes back with its data, as a real one would.
    ...(durable
      ? [
          ...["--appendonly", "yes", "--appendfsync", "always"],
          ...["--appenddirname", `appendonly-${ports[i]}`],
        ]
      : ["--appendonly", "no"]),
    ...[
      "--cluster-enabled",
      "yes",
      "--cluster-config-file",
      `nodes-${ports[i]}.conf`,
      "--cluster-port",
      String(busPorts[i]),
    ],
  ];
  const started = await Promise.allSettled(ports.map((_, i) => spawnRedis(argsOf(i))));
  const children = started.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
  const stop = async () => {
    await Promise.all(
      children.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = once(child, "exit");
        child.kill("SIGKILL");
        await exited;
      }),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  const failedStart = started.find((s) => s.status === "rejected");
  if (failedStart) {
    await stop();
    throw (failedStart as PromiseRejectedResult).reason;
  }
  const nodes = ports.map((port) => new Redis({ port, host: "127.0.0.1" }));
  try {
    const share = Math.ceil(16384 / nodes.length);
    await Promise.all(
      nodes.map((node, i) =>
        node.call(
          "CLUSTER",
          "ADDSLOTSRANGE",
          String(i * share),
          String(Math.min(16383, (i + 1) * share - 1)),
        ),
      ),
    );
    for (let i = 1; i < ports.length; i++)
      await nodes[0]!.call("CLUSTER", "MEET", "127.0.0.1", String(ports[i]), String(busPorts[i]));
    const deadline = Date.now() + 15_000;
    for (;;) {
      const infos = await Promise.all(
        nodes.map((node) => node.call("CLUSTER", "INFO") as Promise<string>),
      );
      if (
        infos.every(
          (info) =>
            info.includes("cluster_state:ok") &&
            info.includes(`cluster_known_nodes:${nodes.length}`),
        )
      )
        break;
      if (Date.now() > deadline) throw new Error(`the cluster did not form: ${infos.join(" | ")}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } catch (err) {
    await stop();
    throw err;
  } finally {
    for (const node of nodes) node.disconnect();
  }
  return {
    url: `redis://127.0.0.1:${ports[0]}`,
    /** Kills master `i` (its slots go unserved: there are no replicas). */
    async kill(i: number) {
      const exited = once(children[i]!, "exit");
      children[i]!.kill("SIGKILL");
      await exited;
    },
    /** Starts master `i` again, on its port with its node file: it takes its slots back. */
    async restart(i: number) {
      children[i] = await spawnRedis(argsOf(i));
    },
    stop,
  };
}

/** `n` distinct loopback ports free a moment ago: all held open at once while they are picked. */
async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<Server>((resolve) => {
          const s = createServer().listen(0, "127.0.0.1", () => resolve(s));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

/** A loopback port free a moment ago (for a server whose URL must be known before it starts). */
export function freePort(): Promise<number> {
  return new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Starts redis-server on loopback (no RDB snapshots) and waits until it accepts connections. */
async function spawnRedis(args: string[]): Promise<ChildProcess> {
  const child = spawn("redis-server", ["--bind", "127.0.0.1", "--save", "", ...args], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on(
      "data",
      (d: Buffer) => d.toString().includes("Ready to accept connections") && resolve(),
    );
    child.once("exit", (code) => reject(new Error(`redis-server exited ${code}`)));
  });
  return child;
}
