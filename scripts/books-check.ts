/**
 * `npm run books:check`: proves Σ ledger = balance for every account, reading the books
 * (DATABASE_URL) and, for entries not yet exported, the store (REDIS_URL, REDIS_KEY_PREFIX).
 * Prints one line per mismatch and a summary; exits 1 when any account does not reconcile.
 */
import { checkBooks } from "../src/books/check.js";
import { openBooksDatabase } from "../src/books/database.js";
import { migrate } from "../src/books/migrations.js";
import { loadConfig } from "../src/config.js";
import { createStore } from "../src/store/index.js";

// Only the store and books settings are read: production's other required settings (SMTP, keys) are not this command's business.
const config = loadConfig({
  ...process.env,
  NODE_ENV:
    process.env.NODE_ENV === "production" ? "test" : (process.env.NODE_ENV ?? "development"),
});
if (!config.redisUrl || !config.books || config.books.url === "pglite://memory") {
  process.stderr.write(
    "books:check needs REDIS_URL and DATABASE_URL (a PostgreSQL server, or a PGlite directory no gateway has open).\n",
  );
  process.exit(2);
}
const store = createStore(config);
const db = await openBooksDatabase(config.books.url);
try {
  await migrate(db);
  const result = await checkBooks(store, db);
  for (const m of result.mismatches)
    process.stdout.write(
      `MISMATCH ${m.accountId}: balance ${m.balance}, ledger sums to ${m.ledgerSum}\n`,
    );
  process.stdout.write(
    `books:check: ${result.accounts} accounts, ${result.entries} ledger entries, ${result.mismatches.length} mismatches\n`,
  );
  process.exitCode = result.mismatches.length > 0 ? 1 : 0;
} finally {
  await db.close();
  await store.close();
}
