import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anvilAccount, randomWallet } from "../../chain-fixtures/chain.js";
import { PERIOD_MS } from "../../src/accounts/tiers.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { tierLimits } from "../../src/store/index.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis.js";
import {
  call,
  dropPrefix,
  spawnGatewayPair,
  uniquePrefix,
  type GatewayProcess,
} from "../helpers/gateway.js";
import { REDIS_URL } from "../helpers/redis.js";
import {
  PAY_TO,
  authorizationUsed,
  balanceOf,
  signAuthorization,
  startChains,
  v1Header,
  v2Header,
} from "../helpers/x402.js";

/** Two gateway processes, one Redis, one relayer key, a real chain. */
const PRICE = 2000n;
const PAYER = anvilAccount(7);
const WALLETS = Array.from({ length: 50 }, (_, i) => randomWallet(10_000 + i));
const prefix = uniquePrefix("x402multi");
let chains: Awaited<ReturnType<typeof startChains>>;
let a: GatewayProcess;
let b: GatewayProcess;
let store: RedisStore;
beforeAll(async () => {
  chains = await startChains([PAYER.address]);
  for (const w of WALLETS) await chains.base.fund(w.address, 100_000n);
  // Each payment its own transaction: the relayers' nonces are what is under test here (batch
  // settlement has its own tests: x402-batch-settlement, x402-relayer-pool).
  const env = { ...chains.env, X402_BATCH_WINDOW_MS: "0" };
  [a, b] = await spawnGatewayPair(prefix, env);
  store = createRedisStore({
    url: REDIS_URL,
    keyPrefix: prefix,
    tiers: tierLimits(),
    periodMs: PERIOD_MS,
  });
}, 90_000);
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await store?.close();
  await chains?.stop();
  await dropPrefix(prefix);
});

const pay = (gw: GatewayProcess, header: string, text = "x") =>
  call(`${gw.url}/v1/tools/hash`, {
    method: "POST",
    body: { text },
    headers: { "x-payment": header },
  });
const purchases = async (accountId: string) =>
  (await store.ledger(accountId, { limit: 1000 })).items.filter((e) => e.kind === "purchase")
    .length;
const debits = async (accountId: string) =>
  (await store.ledger(accountId, { limit: 1000 })).items.filter((e) => e.kind === "debit").length;

describe("one authorization, settled and credited at most once", () => {
  it("a paid call whose answer was lost: the same payment and body, retried on the other process, replays the answer; another body is 409", async () => {
    const header = v1Header(
      "base-sepolia",
      await signAuthorization({ account: PAYER, chain: chains.base, value: PRICE }),
    );
    const first = await pay(a, header, "lost answer");
    expect(first.status).toBe(200);
    const before = await balanceOf(chains.base, PAY_TO);
    const debitsBefore = await debits(walletAccountId(PAYER.address));
    const replay = await pay(b, header, "lost answer");
    expect([replay.status, replay.headers.get("idempotent-replayed"), replay.body]).toEqual([
      200,
      "true",
      first.body,
    ]);
    expect(replay.headers.get("x-payment-response")).toBe(first.headers.get("x-payment-response"));
    const other = await pay(b, header, "another body");
    expect([other.status, other.body.error.code]).toEqual([409, "idempotency_conflict"]);
    expect(await balanceOf(chains.base, PAY_TO)).toBe(before);
    expect(await debits(walletAccountId(PAYER.address))).toBe(debitsBefore);
  });

  it("5 duplicates of one payment and body sent at once to two processes: one settlement, one run, identical answers", async () => {
    const header = v1Header(
      "base-sepolia",
      await signAuthorization({ account: PAYER, chain: chains.base, value: PRICE }),
    );
    const accountId = walletAccountId(PAYER.address);
    const [before, purchasedBefore, debitsBefore] = [
      await balanceOf(chains.base, PAY_TO),
      await purchases(accountId),
      await debits(accountId),
    ];
    const results = await Promise.all(
      Array.from({ length: 5 }, (_, i) => pay(i % 2 ? a : b, header, "duplicated")),
    );
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(new Set(results.map((r) => JSON.stringify(r.body))).size).toBe(1);
    expect(new Set(results.map((r) => r.headers.get("payment-response"))).size).toBe(1);
    expect(results.filter((r) => r.headers.get("idempotent-replayed") === "true")).toHaveLength(4);
    expect(await balanceOf(chains.base, PAY_TO)).toBe(before + PRICE);
    expect([await purchases(accountId), await debits(accountId)]).toEqual([
      purchasedBefore + 1,
      debitsBefore + 1,
    ]);
  }, 30_000);

  it("the same payment sent 20 times at once to two processes with different bodies: one settlement, one call, the others 409", async () => {
    const header = v1Header(
      "base-sepolia",
      await signAuthorization({ account: PAYER, chain: chains.base, value: PRICE }),
    );
    const before = await balanceOf(chains.base, PAY_TO);
    const purchasedBefore = await purchases(walletAccountId(PAYER.address));
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => pay(i % 2 ? a : b, header, `r${i}`)),
    );
    const outcomes: Record<string, number> = {};
    for (const r of results) {
      const outcome = r.status === 200 ? "200" : `${r.status} ${r.body.error?.code}`;
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
    }
    expect(outcomes).toEqual({ "200": 1, "409 idempotency_conflict": 19 });
    expect(await balanceOf(chains.base, PAY_TO)).toBe(before + PRICE);
    expect(await purchases(walletAccountId(PAYER.address))).toBe(purchasedBefore + 1);
  }, 30_000);
});

describe("one payment identifier, many authorizations", () => {
  it("5 authorizations under one payment identifier sent at once to two processes: one settlement, one run, identical answers, 4 left unused", async () => {
    const payer = randomWallet(20_001);
    await chains.base.fund(payer.address, 100_000n);
    const accountId = walletAccountId(payer.address);
    const [accepted] = JSON.parse(
      Buffer.from(
        (await call(`${a.url}/v1/tools/hash`, { method: "POST", body: { text: "x" } })).headers.get(
          "payment-required",
        )!,
        "base64",
      ).toString(),
    ).accepts;
    const payloads = await Promise.all(
      Array.from({ length: 5 }, () =>
        signAuthorization({ account: payer, chain: chains.base, value: PRICE }),
      ),
    );
    const [payerBefore, payToBefore] = [
      await balanceOf(chains.base, payer.address),
      await balanceOf(chains.base, PAY_TO),
    ];
    const results = await Promise.all(
      payloads.map((p, i) =>
        call(`${(i % 2 ? a : b).url}/v1/tools/hash`, {
          method: "POST",
          body: { text: "named once" },
          headers: { "payment-signature": v2Header(accepted, p, "pay_across_processes_01") },
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(new Set(results.map((r) => JSON.stringify(r.body))).size).toBe(1);
    expect(results.filter((r) => r.headers.get("idempotent-replayed") === "true")).toHaveLength(4);
    const used = await Promise.all(
      payloads.map((p) => authorizationUsed(chains.base, payer.address, p.authorization.nonce)),
    );
    expect(used.filter(Boolean)).toHaveLength(1);
    expect(await balanceOf(chains.base, payer.address)).toBe(payerBefore - PRICE);
    expect(await balanceOf(chains.base, PAY_TO)).toBe(payToBefore + PRICE);
    expect([await purchases(accountId), await debits(accountId)]).toEqual([1, 1]);
  }, 30_000);
});

describe("many payers at once", () => {
  it("50 concurrent paid calls from 50 wallets all settle, with no relayer nonce error", async () => {
    const before = await balanceOf(chains.base, PAY_TO);
    const headers = await Promise.all(
      WALLETS.map(async (w) =>
        v1Header(
          "base-sepolia",
          await signAuthorization({ account: w, chain: chains.base, value: PRICE }),
        ),
      ),
    );
    const results = await Promise.all(headers.map((h, i) => pay(i % 2 ? a : b, h, `w${i}`)));
    expect(results.filter((r) => r.status !== 200).map((r) => [r.status, r.body])).toEqual([]);
    expect(await balanceOf(chains.base, PAY_TO)).toBe(before + 50n * PRICE);
    for (const w of WALLETS.slice(0, 5))
      expect(await balanceOf(chains.base, w.address)).toBe(100_000n - PRICE);
    const txs = new Set(
      results.map(
        (r) =>
          JSON.parse(Buffer.from(r.headers.get("x-payment-response")!, "base64").toString())
            .transaction,
      ),
    );
    expect(txs.size).toBe(50);
  }, 60_000);
});
