/**
 * `npm run books:check` (scripts/books-check.mjs: with NODE_ENV=production this module compiled,
 * `node dist/src/books/check-command.js`, as the production image runs it; otherwise this source
 * through tsx): proves Σ ledger = balance for every account, reading the books
 * (DATABASE_URL) and, for entries not yet exported, the store (REDIS_URL, REDIS_KEY_PREFIX); that
 * every account event is in the books once; and,
 * with x402 configured (X402_NETWORKS and their RPC URLs, X402_PAY_TO), that the chain's
 * authorized transfers to pay-to and the books' payments are the same (from block
 * BOOKS_CHECK_FROM_BLOCK, default 0, read BOOKS_CHECK_BLOCK_RANGE blocks at a time, default 10,000).
 * Prints one line per mismatch and a summary; exits 1 when anything does not reconcile, 3 (one
 * line, no stack) when the books or the store cannot be reached: nothing was checked.
 */
import { checkBooks, checkEvents } from "./check.js";
import { openBooksDatabase } from "./database.js";
import { migrate } from "./migrations.js";
import { checkPayments, type ChainToCheck } from "./payments-check.js";
import { createChainClients } from "../payments/chain.js";
import { loadConfig } from "../config.js";
import { isMainModule } from "../lib/main-module.js";
import { createStore } from "../store/index.js";
import { StoreUnavailableError } from "../store/errors.js";
import { BooksUnavailableError } from "./errors.js";

/**
 * Runs the check; its outcome is the process's exit code (0 reconciled, 1 a mismatch, 2 not
 * configured, 3 the books or the store unreachable).
 */
export async function run(): Promise<void> {
  try {
    await check();
  } catch (err) {
    // Not a mismatch (1): nothing was compared. One line, as the other outcomes; no stack.
    const unreachable =
      err instanceof BooksUnavailableError
        ? "the books (DATABASE_URL)"
        : err instanceof StoreUnavailableError
          ? "the store (REDIS_URL)"
          : null;
    if (!unreachable) throw err;
    process.stderr.write(
      `books:check: could not reach ${unreachable}: ${(err as Error).message}\n`,
    );
    process.exitCode = 3;
  }
}

async function check(): Promise<void> {
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
    const events = await checkEvents(db);
    for (const d of events.duplicates)
      process.stdout.write(`EVENT DUPLICATE ${d.id}: ${d.rows} rows\n`);
    process.stdout.write(
      `books:check: ${events.events} events, ${events.duplicates.length} held more than once\n`,
    );
    let paymentMismatches = 0;
    if (config.x402) {
      const x402 = config.x402;
      const chains: ChainToCheck[] = [...new Set(createChainClients(x402).values())].map((c) => ({
        network: c.network.name,
        client: c.public,
        usdc: c.network.usdc.address,
        payTo: x402.payTo,
      }));
      const payments = await checkPayments(db, chains, {
        fromBlock: BigInt(process.env.BOOKS_CHECK_FROM_BLOCK ?? 0),
        blockRange: BigInt(process.env.BOOKS_CHECK_BLOCK_RANGE ?? 10_000),
      });
      for (const m of payments.mismatches)
        process.stdout.write(
          `PAYMENT MISMATCH ${m.network} ${m.txHash ?? "-"} ${m.paymentId ?? "-"}: ${m.problem}\n`,
        );
      for (const network of payments.unchecked)
        process.stdout.write(
          `books:check: payments on ${network} not checked (network not configured)\n`,
        );
      process.stdout.write(
        `books:check: ${payments.payments} payments, ${payments.transfers} authorized transfers to pay-to on ${chains.map((c) => c.network).join(", ")}, ${payments.mismatches.length} mismatches\n`,
      );
      paymentMismatches = payments.mismatches.length;
    } else
      process.stderr.write("books:check: x402 not configured: on-chain payments not checked\n");
    process.exitCode =
      result.mismatches.length + events.duplicates.length + paymentMismatches > 0 ? 1 : 0;
  } finally {
    await db.close();
    await store.close();
  }
}

if (isMainModule(import.meta.url)) await run();
