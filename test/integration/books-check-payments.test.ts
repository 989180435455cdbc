import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, expect, it } from "vitest";
import { anvilAccount } from "../../chain-fixtures/chain.js";
import { call, signUp, startGateway, type TestGateway } from "../helpers/gateway.js";
import { paymentOf } from "../../src/books/events.js";
import { parseEventRecord } from "../../src/events/types.js";
import { freshDatabase, sql } from "../helpers/postgres.js";
import { REDIS_URL } from "../helpers/redis.js";
import { PAY_TO, signAuthorization, startChains, v1Header } from "../helpers/x402.js";

/**
 * `npm run books:check` (a real child process) proves the money too: on two anvil chains with the
 * project's EIP-3009 token, the books' payments and the authorized transfers to pay-to agree — a
 * plain transfer to pay-to (a mint, no authorization) is not a payment — and one payment
 * forged away from the books is reported, with exit code 1.
 */
const PAYER = anvilAccount(3);
let chains: Awaited<ReturnType<typeof startChains>>;
let database: string;
let gw: TestGateway;
beforeAll(async () => {
  [chains, database] = await Promise.all([startChains([PAYER.address]), freshDatabase()]);
  gw = await startGateway({
    env: { ...chains.env, DATABASE_URL: database, BOOKS_EXPORT_INTERVAL_MS: "100" },
  });
}, 90_000);
afterAll(async () => {
  await gw?.stop();
  await chains?.stop();
});

async function buyPack(key: string, network: "base-sepolia" | "polygon-amoy") {
  const path = `${gw.url}/api/v1/credits/purchase`;
  const body = { pack: "1k" };
  const challenge = await call(path, { key, body });
  const offer = challenge.body.accepts.find((a: { network: string }) => a.network === network);
  const chain = network === "base-sepolia" ? chains.base : chains.polygon;
  const authorization = await signAuthorization({
    account: PAYER,
    chain,
    value: BigInt(offer.maxAmountRequired),
  });
  const res = await call(path, {
    key,
    body,
    headers: { "x-payment": v1Header(network, authorization) },
  });
  expect(res.status).toBe(201);
}

function booksCheck() {
  return spawnSync(process.execPath, ["scripts/books-check.mjs"], {
    cwd: new URL("../..", import.meta.url).pathname,
    env: {
      PATH: process.env.PATH,
      REDIS_URL,
      REDIS_KEY_PREFIX: gw.prefix,
      DATABASE_URL: database,
      ...chains.env,
    },
    encoding: "utf8",
  });
}

it("proves on-chain transfers to pay-to equal the credited payments, and reports one forged away", async () => {
  const { key } = await signUp(gw.url);
  await buyPack(key, "base-sepolia");
  await buyPack(key, "base-sepolia");
  await buyPack(key, "polygon-amoy");
  await chains.base.fund(PAY_TO, 5n); // a plain transfer to pay-to: not a payment
  // The gateway makes the books' tables at its first export: on a quick run the purchases can
  // come first ("relation … does not exist"), which is not there yet either.
  for (let i = 0; ; i++) {
    const [row] = await sql<{ n: number }>(
      database,
      "SELECT count(*)::int AS n FROM payments",
    ).catch(() => [{ n: 0 }]);
    if (row!.n === 3) break;
    if (i > 100) throw new Error(`payments in the books: ${row!.n}`);
    await new Promise((r) => setTimeout(r, 100));
  }

  // Each payment's payment.received event is in the books too, once, naming the payment.
  for (let i = 0; ; i++) {
    const events = await sql<{ payment: string; n: number }>(
      database,
      `SELECT data->>'payment_session_id' AS payment, count(*)::int AS n FROM events
        WHERE type = 'payment.received' GROUP BY 1 ORDER BY 1`,
    );
    const payments = await sql<{ id: string }>(database, "SELECT id FROM payments ORDER BY id");
    if (events.length === 3) {
      expect(events).toEqual(payments.map((p) => ({ payment: p.id, n: 1 })));
      break;
    }
    if (i > 100) throw new Error(`payment events in the books: ${events.length}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  // The row a payment.received event describes (what the export writes, should the crediting
  // process die before its own row is flushed) is the payment as it was credited.
  const rows = await sql<Record<string, unknown>>(
    database,
    `SELECT id, account_id AS "accountId", network, lower(payer) AS payer, value_atomic::text AS "valueAtomic",
            credits::int AS credits, type, plan, tx_hash AS "txHash" FROM payments ORDER BY id`,
  );
  const described = (
    await sql<{
      id: string;
      type: string;
      at: Date;
      account_id: string;
      data: object;
    }>(
      database,
      "SELECT id, type, at, account_id, data FROM events WHERE type = 'payment.received'",
    )
  )
    .map((e) =>
      paymentOf(
        parseEventRecord({
          id: e.id,
          event: e.type,
          timestamp: e.at.toISOString(),
          account_id: e.account_id,
          data: e.data,
        }),
      ),
    )
    .map((p) => ({
      ...p,
      txHash: p!.txHash?.toLowerCase(),
      settledAt: undefined,
    }))
    .sort((a, b) => (a.id! < b.id! ? -1 : 1));
  expect(described).toEqual(
    rows.map((r) => ({
      ...r,
      txHash: String(r.txHash).toLowerCase(),
      settledAt: undefined,
    })),
  );

  const clean = booksCheck();
  expect(clean.stdout).toMatch(/books:check: \d+ events, 0 held more than once/);
  expect(clean.stdout).toContain(
    "books:check: 3 payments, 3 authorized transfers to pay-to on base-sepolia, polygon-amoy, 0 mismatches",
  );
  expect(clean.status).toBe(0);

  // Forged: a payment the chain shows vanishes from the books.
  const [gone] = await sql<{ id: string; tx_hash: string }>(
    database,
    "DELETE FROM payments WHERE id = (SELECT id FROM payments WHERE network = 'polygon-amoy') RETURNING id, tx_hash",
  );
  const forged = booksCheck();
  const mismatches = forged.stdout.split("\n").filter((l) => l.startsWith("PAYMENT MISMATCH"));
  expect(mismatches).toEqual([
    expect.stringMatching(
      new RegExp(
        `^PAYMENT MISMATCH polygon-amoy ${gone!.tx_hash} -: transfer of \\d+ from 0x[0-9a-fA-F]{40} to pay-to is not a credited payment$`,
        "i",
      ),
    ),
  ]);
  expect(forged.stdout).toContain("2 payments, 3 authorized transfers");
  expect(forged.status).toBe(1);
}, 120_000);
