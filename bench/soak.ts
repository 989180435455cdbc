/**
 * Soak: mixed traffic through two gateway processes on one Redis and a local chain, then the books.
 *
 *   npm run soak                    (SOAK_SECONDS=120, at most 600; loopback only; Redis at 127.0.0.1:6379)
 *
 * Traffic, for SOAK_SECONDS and at most SOAK_MAX_REQUESTS: keyed tool calls (some with bad input,
 * some to an AI provider that fails one call in three, so refunds and tool.error happen), credit
 * packs and single calls paid with x402 from many wallets, and webhook deliveries to a real HTTPS
 * receiver that fails one answer in ten (so retries happen). Then it checks, and prints:
 *   - every account: the sum of its ledger entries equals its balance;
 *   - the chain: USDC received by payTo equals the payments credited;
 *   - every event of an account with a webhook was delivered, or is in the delivery log as failed.
 * Any discrepancy is printed and the exit code is 1.
 */
import { randomWallet } from "../chain-fixtures/chain.js";
import { PERIOD_MS } from "../src/accounts/tiers.js";
import { tierLimits } from "../src/store/index.js";
import { createRedisStore } from "../src/store/redis.js";
import { ledgerOf } from "../test/helpers/books.js";
import {
  call,
  callTool,
  fundedAccount,
  spawnGateway,
  type GatewayProcess,
} from "../test/helpers/gateway.js";
import { startFakeLlm } from "../test/helpers/fake-providers.js";
import { startReceiver } from "../test/helpers/receiver.js";
import { REDIS_URL, dropPrefix, uniquePrefix } from "../test/helpers/redis.js";
import setupTls from "../test/helpers/tls-setup.js";
import {
  PAY_TO,
  balanceOf,
  signAuthorization,
  startChains,
  v1Header,
} from "../test/helpers/x402.js";

const SECONDS = Math.min(600, Number(process.env.SOAK_SECONDS ?? 120));
const MAX_REQUESTS = Number(process.env.SOAK_MAX_REQUESTS ?? 50_000);
const ACCOUNTS = 8;
const WALLETS = 40;
const PRICE = 2000n;

async function main() {
  const cleanupTls = setupTls(); // a test CA the gateways trust through NODE_EXTRA_CA_CERTS
  const wallets = Array.from({ length: WALLETS }, (_, i) => randomWallet(90_000 + i));
  const chains = await startChains([]);
  for (const w of wallets) await chains.base.fund(w.address, 10_000_000n);
  const rx = await startReceiver();
  const llm = await startFakeLlm();
  let llmCalls = 0;
  const flaky = setInterval(() => (llm.state.status = ++llmCalls % 3 === 0 ? 500 : 200), 150);
  const prefix = uniquePrefix("soak");
  const env = {
    ...chains.env,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "1",
    NODE_EXTRA_CA_CERTS: process.env.NODE_EXTRA_CA_CERTS!,
    AI_BASE_URL: `${llm.url}/v1`,
    AI_MODEL: "soak",
  };
  const gateways: GatewayProcess[] = [];
  const store = createRedisStore({
    url: REDIS_URL,
    keyPrefix: prefix,
    tiers: tierLimits(),
    periodMs: PERIOD_MS,
  });
  const discrepancies: string[] = [];
  try {
    for (let i = 0; i < 2; i++) {
      const gw = await spawnGateway(prefix, env);
      gw.child.stdout!.resume();
      gateways.push(gw);
    }
    const pick = (i: number) => gateways[i % 2]!;

    const accounts: { key: string; accountId: string; path: string; webhookId: string }[] = [];
    for (let i = 0; i < ACCOUNTS; i++) {
      const account = await fundedAccount(pick(i).url, 300, "pro");
      const path = `/soak-${i}`;
      // One answer in ten is a 500, for the whole run (the last answer of a script repeats: end on 200).
      rx.script(path, [...Array.from({ length: 5000 }, (_, j) => (j % 10 === 9 ? 500 : 200)), 200]);
      const hook = await call(`${pick(i).url}/api/v1/webhooks/register`, {
        key: account.key,
        body: {
          url: rx.url(path),
          events: ["credits.low", "credits.depleted", "tool.error", "payment.received"],
        },
      });
      accounts.push({ ...account, path, webhookId: hook.body.id as string });
    }

    const statuses = new Map<string, number>();
    const count = (what: string) => statuses.set(what, (statuses.get(what) ?? 0) + 1);
    // Each keyed account buys a 1k credit pack, paid from a wallet: payment.received reaches its webhook.
    for (const [i, a] of accounts.entries()) {
      const header = v1Header(
        "base-sepolia",
        await signAuthorization({
          account: wallets[i]!,
          chain: chains.base,
          value: 1_000n * PRICE,
        }),
      );
      const res = await call(`${pick(i).url}/api/v1/credits/purchase`, {
        key: a.key,
        body: { pack: "1k" },
        headers: { "x-payment": header },
      });
      count(`pack ${res.status}`);
    }
    const deadline = Date.now() + SECONDS * 1000;
    let requests = 0;
    let paid = 0;
    let walletTurn = 0;
    await Promise.all(
      Array.from({ length: 12 }, async (_, worker) => {
        while (Date.now() < deadline && requests < MAX_REQUESTS) {
          const n = requests++;
          const a = accounts[n % ACCOUNTS]!;
          if (worker < 2) {
            // Paid calls: a fresh authorization from the next wallet.
            const w = wallets[walletTurn++ % WALLETS]!;
            const header = v1Header(
              "base-sepolia",
              await signAuthorization({ account: w, chain: chains.base, value: PRICE }),
            );
            const res = await call(`${pick(n).url}/v1/tools/hash`, {
              method: "POST",
              body: { text: `paid-${n}` },
              headers: { "x-payment": header },
            });
            count(`paid ${res.status}`);
            if (res.status === 200) paid++;
          } else {
            const body = n % 13 === 0 ? { text: 42 } : { text: `call-${n}` };
            const res = await callTool(
              pick(n).url,
              a.key,
              n % 7 === 0 ? "ai-generate" : "hash",
              n % 7 === 0 ? { prompt: "x" } : body,
            );
            count(`keyed ${res.status}${res.body?.error ? ` ${res.body.error.code}` : ""}`);
            // Stay inside the Pro tier's 300 requests a minute per account (10 callers over 8 accounts).
            await new Promise((r) => setTimeout(r, 250));
          }
        }
      }),
    );
    clearInterval(flaky);

    // Let retries and the relay finish (the last retry comes 14 s after a first failure).
    await new Promise((r) => setTimeout(r, 20_000));

    // 1. Every account's ledger adds up.
    const allAccounts = (await store.listAccounts({ limit: 1000 })).items;
    let debited = 0;
    let refunded = 0;
    let purchased = 0;
    for (const account of allAccounts) {
      const entries = await ledgerOf(store, account.id);
      const sum = entries.reduce((s, e) => s + e.amount, 0);
      if (sum !== account.balance)
        discrepancies.push(`${account.id}: ledger sums to ${sum}, balance is ${account.balance}`);
      debited -= entries.filter((e) => e.kind === "debit").reduce((s, e) => s + e.amount, 0);
      refunded += entries.filter((e) => e.kind === "refund").reduce((s, e) => s + e.amount, 0);
      purchased += entries.filter((e) => e.kind === "purchase").reduce((s, e) => s + e.amount, 0);
    }

    // 2. The chain: what payTo received equals what was credited for payments.
    const received = await balanceOf(chains.base, PAY_TO);
    const credited = BigInt(purchased) * PRICE;
    if (received !== credited)
      discrepancies.push(
        `chain: payTo received ${received} atomic units, payments credited ${credited}`,
      );

    // 3. Every event of an account with a webhook: delivered, or logged as failed.
    let events = 0;
    let delivered = 0;
    let failed = 0;
    for (const a of accounts) {
      const log = await store.listDeliveries(a.accountId, a.webhookId, 500);
      for (const event of await store.listEvents(a.accountId, 1000)) {
        if (
          !["credits.low", "credits.depleted", "tool.error", "payment.received"].includes(
            event.event,
          )
        )
          continue;
        events++;
        const ok = rx.received.some(
          (r) => r.path === a.path && r.headers["x-webhook-id"] === event.id,
        );
        if (ok) delivered++;
        else if (log.some((d) => d.eventId === event.id && d.outcome === "failed")) failed++;
        else
          discrepancies.push(
            `${a.accountId}: event ${event.id} (${event.event}) neither delivered nor logged as failed`,
          );
      }
    }

    const outboxLeft = (await store.outboxAccounts()).length;
    if (outboxLeft)
      discrepancies.push(`${outboxLeft} account(s) still have undelivered events in their outbox`);
    console.log(
      `\nToolgate soak — ${SECONDS} s, ${requests} requests through 2 gateway processes, ${ACCOUNTS} keyed accounts, ${WALLETS} paying wallets`,
    );
    for (const [what, n] of [...statuses].sort()) console.log(`  ${what.padEnd(40)} ${n}`);
    console.log(
      `  credits debited ${debited}, refunded ${refunded}, bought with payments ${purchased} (paid calls served: ${paid})`,
    );
    console.log(
      `  on chain: payTo received ${received} atomic units; credited payments ${credited}`,
    );
    console.log(
      `  webhook events ${events}: delivered ${delivered}, logged as failed ${failed}; receiver got ${rx.received.length} requests (retries included)`,
    );
    console.log(
      discrepancies.length
        ? `\nDISCREPANCIES (${discrepancies.length}):\n  ${discrepancies.join("\n  ")}`
        : "\nbooks balance: no discrepancy",
    );
    if (discrepancies.length) process.exitCode = 1;
  } finally {
    await Promise.all(gateways.map((g) => g.stop()));
    await store.close();
    await rx.stop();
    await llm.stop();
    await chains.stop();
    await dropPrefix(prefix);
    cleanupTls();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
