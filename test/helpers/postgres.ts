import { execFile, spawnSync } from "node:child_process";
import { promisify } from "node:util";
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { randomId } from "../../src/lib/ids.js";

/**
 * A private PostgreSQL cluster for the tests, as test/helpers/redis-setup.ts starts a private
 * Redis: `initdb` into a temporary directory, `pg_ctl` on a free loopback port, trust
 * authentication, no fsync. PostgreSQL refuses to run as root: as root, the cluster belongs to
 * (and runs as) the `postgres` user Debian's package creates, or `nobody`.
 */
export interface PostgresCluster {
  url: string;
  port: number;
  /** Settles once the first start is over (initdb, then the server). */
  booted: Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
  destroy(): Promise<void>;
}

/** Debian puts the server binaries under /usr/lib/postgresql/<version>/bin, outside the PATH. */
export function postgresBin(name: string): string | null {
  if (spawnSync(name, ["--version"], { stdio: "ignore" }).status === 0) return name;
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return null;
  for (const version of readdirSync(root).sort().reverse()) {
    const path = join(root, version, "bin", name);
    if (existsSync(path)) return path;
  }
  return null;
}

function freePort(): Promise<number> {
  return new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Picks the port at once and boots the cluster in the background (`booted`): the address is known before the server answers. */
export async function startPostgresCluster(): Promise<PostgresCluster> {
  const initdb = postgresBin("initdb");
  const pgCtl = postgresBin("pg_ctl");
  if (!initdb || !pgCtl)
    throw new Error(
      "No PostgreSQL server binaries (initdb, pg_ctl): install them (Debian: apt-get install -y postgresql) or set TEST_DATABASE_URL.",
    );
  const root = mkdtempSync(join(tmpdir(), "toolgate-pg-"));
  const dataDir = join(root, "data");
  const asRoot = process.getuid?.() === 0;
  const user = asRoot
    ? spawnSync("id", ["-u", "postgres"]).status === 0
      ? "postgres"
      : "nobody"
    : null;
  if (user) chmodSync(root, 0o777);
  const run = async (command: string, args: string[]) => {
    try {
      await promisify(execFile)(
        user ? "runuser" : command,
        user ? ["-u", user, "--", command, ...args] : args,
        { encoding: "utf8" },
      );
    } catch (err) {
      const e = err as { stderr?: string; stdout?: string; message: string };
      throw new Error(`${command} ${args.join(" ")} failed: ${e.stderr || e.stdout || e.message}`);
    }
  };
  const port = await freePort();
  const options = `-c listen_addresses=127.0.0.1 -p ${port} -k ${root} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200`;
  const start = () =>
    run(pgCtl, [
      "-D",
      dataDir,
      "-o",
      options,
      "-l",
      join(root, "server.log"),
      "-w",
      "-t",
      "60",
      "start",
    ]);
  const booted = run(initdb, [
    "-D",
    dataDir,
    "-U",
    "toolgate",
    "--auth=trust",
    "--no-sync",
    "-E",
    "UTF8",
  ]).then(start);
  booted.catch(() => undefined);
  return {
    url: `postgres://toolgate@127.0.0.1:${port}/postgres`,
    port,
    booted,
    start,
    stop: () => run(pgCtl, ["-D", dataDir, "-m", "fast", "-w", "stop"]),
    async destroy() {
      await booted.catch(() => undefined);
      await run(pgCtl, ["-D", dataDir, "-m", "immediate", "-w", "stop"]).catch(() => undefined);
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** A new, empty database on the tests' PostgreSQL (each test file its own: the books have no key prefix). */
export async function freshDatabase(serverUrl = process.env.TEST_DATABASE_URL): Promise<string> {
  if (!serverUrl)
    throw new Error("TEST_DATABASE_URL is not set (test/helpers/postgres-setup.ts sets it)");
  const name = `books_${randomId(10).toLowerCase()}`;
  // The run's cluster boots in the background (postgres-setup.ts): wait for it to answer.
  const client = await connectWithin(serverUrl, 60_000);
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Runs one query against a database (the test's own view of the books). */
export async function sql<T = Record<string, unknown>>(
  url: string,
  text: string,
  params: unknown[] = [],
): Promise<T[]> {
  const client = new pg.Client(url);
  await client.connect();
  try {
    return (await client.query(text, params)).rows as T[];
  } finally {
    await client.end();
  }
}

async function connectWithin(url: string, ms: number): Promise<pg.Client> {
  const deadline = Date.now() + ms;
  for (;;) {
    const client = new pg.Client(url);
    try {
      await client.connect();
      return client;
    } catch (err) {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
