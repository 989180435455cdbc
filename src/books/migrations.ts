import { readdirSync, readFileSync } from "node:fs";
import type { BooksDatabase } from "./database.js";

/**
 * Versioned migrations of the books' schema, run at start-up by every process: the SQL files in
 * ./migrations (`NNN-name.sql`, applied in order, each once). One transaction under an advisory
 * lock, so processes starting together apply them once, and a failed migration leaves nothing
 * half-done. Plain SQL, the same on PostgreSQL and PGlite.
 */
const MIGRATIONS_DIR = new URL("./migrations/", import.meta.url);
/** Any constant: the advisory lock every process takes while migrating. */
const MIGRATION_LOCK = 7_402_001;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function migrations(): Migration[] {
  return readdirSync(MIGRATIONS_DIR)
    .filter((file) => /^\d{3}-[a-z0-9-]+\.sql$/.test(file))
    .sort()
    .map((file) => ({
      version: Number(file.slice(0, 3)),
      name: file.slice(4, -4),
      sql: readFileSync(new URL(file, MIGRATIONS_DIR), "utf8"),
    }));
}

/**
 * Applies the migrations not yet applied (up to version `through`, when given: a schema as an
 * older version left it, for tests and benches of later migrations); returns the versions applied.
 */
export async function migrate(
  db: BooksDatabase,
  options: { through?: number } = {},
): Promise<number[]> {
  return db.transaction(async (query) => {
    await query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    await query(
      "CREATE TABLE IF NOT EXISTS books_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
    );
    const applied = new Set(
      (await query<{ version: number }>("SELECT version FROM books_migrations")).map((row) =>
        Number(row.version),
      ),
    );
    const done: number[] = [];
    for (const migration of migrations()) {
      if (applied.has(migration.version)) continue;
      if (options.through !== undefined && migration.version > options.through) break;
      await query(migration.sql);
      await query("INSERT INTO books_migrations (version, name) VALUES ($1, $2)", [
        migration.version,
        migration.name,
      ]);
      done.push(migration.version);
    }
    return done;
  });
}
