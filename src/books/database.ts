import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { PGlite } from "@electric-sql/pglite";
import { BooksUnavailableError } from "./errors.js";

/**
 * The books' database: a real PostgreSQL (`pg`'s pool) or PGlite (PostgreSQL compiled to
 * WebAssembly, in this process) behind the one small interface the books need, so the schema,
 * the migrations and every query are the same on both.
 */
export interface BooksDatabase {
  readonly kind: "postgres" | "pglite";
  /** Without `params`, `sql` may hold several statements (a migration file). */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Runs `work` in one transaction (committed when it resolves, rolled back when it throws). */
  transaction<T>(work: (query: BooksDatabase["query"]) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * `DATABASE_URL`: `postgres://…` (or `postgresql://…`) a real server; `pglite://memory` PGlite
 * in memory; `pglite:///absolute/dir` PGlite keeping its files in that directory.
 */
export async function openBooksDatabase(
  url: string,
  options: { timeoutMs?: number } = {},
): Promise<BooksDatabase> {
  // Each driver is loaded when it is used (this module is also read by code that only queries).
  if (url.startsWith("pglite:"))
    return openPglite(
      (await import("@electric-sql/pglite")).PGlite,
      url === "pglite://memory" ? undefined : decodeURIComponent(new URL(url).pathname),
    );
  return openPostgres((await import("pg")).default, url, options.timeoutMs ?? 5000);
}

function openPostgres(
  pg: typeof import("pg")["default"],
  url: string,
  timeoutMs: number,
): BooksDatabase {
  const pool = new pg.Pool({
    connectionString: url,
    max: 4,
    // A database that stopped answering fails the books' work quickly; the hot path never waits on it.
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs * 6,
    idleTimeoutMillis: 30_000,
  });
  // An idle connection that the server closed (a restart) is reported here; without a listener it would end the process.
  pool.on("error", () => undefined);
  const unavailable = (err: unknown): never => {
    const e = err as { code?: string; message?: string };
    // Connection failures (no SQLSTATE, or class 08 / 57P0x: the server is going away) are an outage, not a bug.
    if (
      !e.code ||
      /^08|^57P0/.test(e.code) ||
      /ECONNREFUSED|ECONNRESET|timeout|terminat/i.test(e.message ?? "")
    )
      throw new BooksUnavailableError(e.message ?? String(err));
    throw err;
  };
  return {
    kind: "postgres",
    async query<T>(sql: string, params?: unknown[]) {
      try {
        return (await pool.query(sql, params)).rows as T[];
      } catch (err) {
        return unavailable(err);
      }
    },
    async transaction(work) {
      const client = await pool.connect().catch(unavailable);
      try {
        await client.query("BEGIN");
        const result = await work(async (sql, params) => (await client.query(sql, params)).rows);
        await client.query("COMMIT");
        return result;
      } catch (err) {
        await client.query("ROLLBACK").catch(() => undefined);
        return unavailable(err);
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}

async function openPglite(
  pglite: typeof PGlite,
  dataDir: string | undefined,
): Promise<BooksDatabase> {
  const db = dataDir ? await pglite.create({ dataDir }) : await createInMemory(pglite);
  // Without parameters a text may hold several statements (a migration): PGlite runs those with `exec`.
  type Runner = Pick<PGlite, "query" | "exec">;
  const run = async <T>(on: Runner, sql: string, params: unknown[] | undefined): Promise<T[]> =>
    params === undefined
      ? (((await on.exec(sql)).at(-1)?.rows as T[] | undefined) ?? [])
      : (await on.query<T>(sql, params)).rows;
  return {
    kind: "pglite",
    query: (sql, params) => run(db, sql, params),
    transaction: (work) => db.transaction((tx) => work((sql, params) => run(tx, sql, params))),
    close: () => db.close(),
  };
}

/**
 * Inserts rows, skipping those whose `conflict` key is already there (the books are written
 * idempotently); returns how many were new.
 */
export async function insertRows(
  query: BooksDatabase["query"],
  table: string,
  columns: readonly string[],
  rows: unknown[][],
  conflict: string,
): Promise<number> {
  if (rows.length === 0) return 0;
  const params: unknown[] = [];
  const values = rows.map((row) => `(${row.map((value) => `$${params.push(value)}`).join(", ")})`);
  return (
    await query(
      `INSERT INTO ${table} (${columns.join(", ")}) VALUES ${values.join(", ")} ON CONFLICT ${conflict} DO NOTHING RETURNING 1`,
      params,
    )
  ).length;
}

/**
 * PGlite in memory, started from a freshly initialised cluster saved in the temporary directory
 * by an earlier start (per PGlite version): `initdb` in WebAssembly takes several times longer
 * than loading its result, and runs on the gateway's thread before it listens. Without a usable
 * template, initialise and save one (written aside, then renamed: processes may race).
 */
async function createInMemory(pglite: typeof PGlite): Promise<PGlite> {
  const version = pgliteVersion();
  const template = join(tmpdir(), `toolgate-pglite-${version}.tgz`);
  if (existsSync(template)) {
    try {
      return await pglite.create({ loadDataDir: new Blob([readFileSync(template)]) });
    } catch {
      rmSync(template, { force: true }); // unreadable: made again below
    }
  }
  const db = await pglite.create();
  try {
    const dump = await db.dumpDataDir("gzip");
    const aside = `${template}.${process.pid}`;
    writeFileSync(aside, Buffer.from(await dump.arrayBuffer()));
    renameSync(aside, template);
  } catch {
    /* no template this time: the next start initialises again */
  }
  return db;
}

/** The installed PGlite's version (its package.json does not export itself: found beside its entry). */
function pgliteVersion(): string {
  for (
    let dir = dirname(fileURLToPath(import.meta.resolve("@electric-sql/pglite")));
    dir !== dirname(dir);
    dir = dirname(dir)
  ) {
    const manifest = join(dir, "package.json");
    if (!existsSync(manifest)) continue;
    const { name, version } = JSON.parse(readFileSync(manifest, "utf8")) as {
      name?: string;
      version: string;
    };
    if (name === "@electric-sql/pglite") return version;
  }
  return "unknown";
}
