import { createPublicClient, http, type Address, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TOKEN_ABI } from "../../chain-fixtures/chain.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import type { RedisStore } from "../../src/store/redis.js";
import { call, eventsOf, type GatewayProcess } from "../helpers/gateway.js";
import { startRpcProxy } from "../helpers/rpc-proxy.js";
import {
  PAY_TO,
  balanceOf,
  fundedWallet,
  ledgerKinds,
  signAuthorization,
  spawnPaidGateway,
  startChains,
  v1Header,
} from "../helpers/x402.js";

/**
 * What a payment buys, and only that: a real gateway process, a real chain (behind an RPC proxy
 * that can fall silent), the project's EIP-3009 token and real Redis. The hash tool costs
 * 1 credit = 2,000 atomic units.
 */
const PRICE = 2000n;
let chains: Awaited<ReturnType<typeof startChains>>;
let proxy: Awaited<ReturnType<typeof startRpcProxy>>;
let paid: Awaited<ReturnType<typeof spawnPaidGateway>>;
let gw: GatewayProcess;
let store: RedisStore;
beforeAll(async () => {
  chains = await startChains([]);
  proxy = await startRpcProxy(chains.base.rpcUrl);
  paid = await spawnPaidGateway("x402integrity", chains.env, {
    BASE_SEPOLIA_RPC_URL: proxy.url,
    X402_RPC_TIMEOUT_MS: "1500",
    X402_RECEIPT_TIMEOUT_MS: "1500",
  });
  ({ gw, store } = paid);
}, 90_000);
afterAll(async () => {
  await paid?.stop();
  await proxy?.stop();
  await chains?.stop();
});

const hashCall = (headers: Record<string, string>, text = "x", tool = "hash") =>
  call(`${gw.url}/v1/tools/${tool}`, { method: "POST", body: { text }, headers });
const upperHex = (hex: string) => `0x${hex.slice(2).toUpperCase()}`;
const ledgerOf = (accountId: string) => ledgerKinds(store, accountId);
const chain = () => createPublicClient({ transport: http(chains.base.rpcUrl) });
const authorizationUsed = (from: Address, nonce: string) =>
  chain().readContract({
    address: chains.base.usdc,
    abi: TOKEN_ABI,
    functionName: "authorizationState",
    args: [from, nonce as Hex],
  }) as Promise<boolean>;
const funded = (seed: number) => fundedWallet(chains.base, seed);

describe("hex is compared as bytes", () => {
  it("an authorization whose nonce, addresses and signature are upper-case hex is settled, credited and served", async () => {
    const payer = await funded(31_001);
    const { authorization, signature } = await signAuthorization({
      account: payer,
      chain: chains.base,
      value: PRICE,
    });
    const shouted = {
      authorization: {
        ...authorization,
        from: upperHex(authorization.from),
        to: upperHex(authorization.to),
        nonce: upperHex(authorization.nonce),
      },
      signature: upperHex(signature),
    };
    const before = await balanceOf(chains.base, PAY_TO);
    const res = await hashCall({ "x-payment": v1Header("base-sepolia", shouted) }, "upper");
    expect(res.status).toBe(200);
    expect(await balanceOf(chains.base, PAY_TO)).toBe(before + PRICE);
    expect(await ledgerOf(walletAccountId(payer.address))).toEqual([
      ["debit", -1],
      ["purchase", 1],
      ["grant", 0],
    ]);
  }, 30_000);
});

describe("numbers are compared as numbers", () => {
  it("the same authorization with its amounts spelled with leading zeros is one payment: the retry replays the answer", async () => {
    const payer = await funded(31_007);
    const { authorization, signature } = await signAuthorization({
      account: payer,
      chain: chains.base,
      value: PRICE,
    });
    const padded = {
      authorization: {
        ...authorization,
        value: `000${authorization.value}`,
        validAfter: `0${authorization.validAfter}`,
        validBefore: `00${authorization.validBefore}`,
      },
      signature,
    };
    const before = await balanceOf(chains.base, PAY_TO);
    const first = await hashCall({ "x-payment": v1Header("base-sepolia", padded) }, "zeros");
    expect(first.status).toBe(200);
    const retry = await hashCall(
      { "x-payment": v1Header("base-sepolia", { authorization, signature }) },
      "zeros",
    );
    expect([retry.status, retry.headers.get("idempotent-replayed"), retry.body]).toEqual([
      200,
      "true",
      first.body,
    ]);
    expect(await balanceOf(chains.base, PAY_TO)).toBe(before + PRICE);
    expect(await ledgerOf(walletAccountId(payer.address))).toEqual([
      ["debit", -1],
      ["purchase", 1],
      ["grant", 0],
    ]);
  }, 30_000);
});

describe("a payment answers only the request that carries it, verified in full", () => {
  it("once a pending payment is reconciled, a request with its from and nonce but a garbage signature is refused; the payer's own retry is served", async () => {
    const payer = await funded(31_002);
    const paid = await signAuthorization({ account: payer, chain: chains.base, value: PRICE });
    const header = { "x-payment": v1Header("base-sepolia", paid) };
    proxy.silenceAfterNextSend();
    const first = await hashCall(header, "mine");
    expect([first.status, first.body.error.code]).toEqual([503, "payment_pending"]);
    proxy.resume();
    const accountId = walletAccountId(payer.address);
    const deadline = Date.now() + 20_000;
    while ((await store.getAccount(accountId))?.balance !== 1 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    expect((await store.getAccount(accountId))?.balance).toBe(1);

    // from and nonce are public on chain; the signature is the thief's garbage.
    const garbage = `0x${"11".repeat(32)}${"22".repeat(32)}1b`;
    const stolen = await hashCall(
      {
        "x-payment": v1Header("base-sepolia", {
          authorization: paid.authorization,
          signature: garbage,
        }),
      },
      "thief's input",
    );
    expect([stolen.status, stolen.body.error.code]).toEqual([402, "payment_invalid"]);
    // The payer's own signature, public too, over an authorization changed in one field: the
    // signature does not sign it (the stored payment's proof covers only what was claimed).
    const altered = await hashCall(
      {
        "x-payment": v1Header("base-sepolia", {
          authorization: {
            ...paid.authorization,
            validBefore: String(BigInt(paid.authorization.validBefore as string) - 1n),
          },
          signature: paid.signature,
        }),
      },
      "mine",
    );
    expect([altered.status, altered.body.error.code]).toEqual([402, "payment_invalid"]);
    expect(altered.body.error.reason).toMatch(/signature does not match/);
    // The right signature, but another resource than the one paid for.
    const elsewhere = await hashCall(header, "mine", "language-detect");
    expect([elsewhere.status, elsewhere.body.error.code]).toEqual([409, "payment_already_used"]);
    expect((await store.getAccount(accountId))?.balance).toBe(1);

    const retry = await hashCall(header, "mine");
    expect(retry.status).toBe(200);
    expect(await ledgerOf(accountId)).toEqual([
      ["debit", -1],
      ["purchase", 1],
      ["grant", 0],
    ]);
  }, 60_000);

  it("refuses an authorization valid for longer than maxTimeoutSeconds, with nothing moved", async () => {
    const payer = await funded(31_003);
    const now = BigInt(Math.floor(Date.now() / 1000));
    const payload = await signAuthorization({
      account: payer,
      chain: chains.base,
      value: PRICE,
      validBefore: now + 3600n,
    });
    const before = await balanceOf(chains.base, PAY_TO);
    const res = await hashCall({ "x-payment": v1Header("base-sepolia", payload) });
    expect([res.status, res.body.error.code]).toEqual([402, "payment_invalid"]);
    expect(res.body.error.reason).toMatch(/longer than maxTimeoutSeconds \(300 s\)/);
    expect(await balanceOf(chains.base, PAY_TO)).toBe(before);
    expect(await authorizationUsed(payer.address, payload.authorization.nonce)).toBe(false);
  }, 30_000);
});

describe("pay-per-call events", () => {
  it("payment.received states a $0.002 payment exactly, and paying per call raises no credit alerts", async () => {
    const payer = await funded(31_004);
    for (const text of ["a", "b", "c"]) {
      const res = await hashCall(
        {
          "x-payment": v1Header(
            "base-sepolia",
            await signAuthorization({ account: payer, chain: chains.base, value: PRICE }),
          ),
        },
        text,
      );
      expect(res.status).toBe(200);
    }
    const accountId = walletAccountId(payer.address);
    const events = (await eventsOf(store, accountId, 4)).filter(
      (e) => e.event !== "agent.registered",
    );
    expect(events.map((e) => e.event)).toEqual([
      "payment.received",
      "payment.received",
      "payment.received",
    ]);
    expect(events[0]!.data).toMatchObject({
      amount_usd: "0.002",
      amount_usdc_atomic: "2000",
      credits_added: 1,
    });
    await new Promise((r) => setTimeout(r, 600)); // a late credits.low / credits.depleted would be relayed by now
    expect(
      (await store.listEvents(accountId, 100))
        .map((e) => e.event)
        .filter((e) => e.startsWith("credits.")),
    ).toEqual([]);
  }, 30_000);
});

describe("everything that can refuse a paid call refuses it before money moves", () => {
  it("70 paid calls from one Free wallet: 60 served, 10 refused 429 with their authorizations unused on chain", async () => {
    const payer = await funded(31_005);
    const payerBefore = await balanceOf(chains.base, payer.address);
    const payToBefore = await balanceOf(chains.base, PAY_TO);
    const payloads = await Promise.all(
      Array.from({ length: 70 }, () =>
        signAuthorization({ account: payer, chain: chains.base, value: PRICE }),
      ),
    );
    const results: { status: number; code?: string; nonce: string }[] = [];
    for (let i = 0; i < payloads.length; i += 5) {
      const batch = payloads.slice(i, i + 5);
      const answers = await Promise.all(
        batch.map((p, j) => hashCall({ "x-payment": v1Header("base-sepolia", p) }, `n${i + j}`)),
      );
      for (const [j, a] of answers.entries()) {
        results.push({
          status: a.status,
          code: a.body.error?.code,
          nonce: batch[j]!.authorization.nonce,
        });
      }
    }
    const refused = results.filter((r) => r.status !== 200);
    // Counted by outcome, so a failure shows what the others got.
    const outcomes: Record<string, number> = {};
    for (const r of results) {
      const outcome = r.status === 200 ? "200" : `${r.status} ${r.code}`;
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
    }
    // On failure, the gateway's warnings say why the others were not served.
    const warnings = gw.output.filter((l) => /"level":(40|50)/.test(l)).slice(-20);
    expect(outcomes, warnings.join("\n")).toEqual({ "200": 60, "429 rate_limited": 10 });
    for (const r of refused) expect(await authorizationUsed(payer.address, r.nonce)).toBe(false);
    // Each refused payment was claimed beside its rate-limit check, then let go: none is left
    // "settling" for the reconciler to settle (and take the money for a call refused).
    const ids = refused.map((r) =>
      `${chains.base.chainId}:${chains.base.usdc}:${payer.address}:${r.nonce}`.toLowerCase(),
    );
    expect(await Promise.all(ids.map((id) => store.getPayment(id)))).toEqual(ids.map(() => null));
    expect((await store.openPayments()).filter((p) => ids.includes(p.id))).toEqual([]);
    expect(await balanceOf(chains.base, payer.address)).toBe(payerBefore - 60n * PRICE);
    expect(await balanceOf(chains.base, PAY_TO)).toBe(payToBefore + 60n * PRICE);
    const kinds = (await ledgerOf(walletAccountId(payer.address))).map(([kind]) => kind);
    expect([
      kinds.filter((k) => k === "purchase").length,
      kinds.filter((k) => k === "debit").length,
    ]).toEqual([60, 60]);
  }, 120_000);

  it("an invalid body is refused before the payment is looked at", async () => {
    const payer = await funded(31_006);
    const payload = await signAuthorization({ account: payer, chain: chains.base, value: PRICE });
    const header = { "x-payment": v1Header("base-sepolia", payload) };
    const invalid = await call(`${gw.url}/v1/tools/hash`, {
      method: "POST",
      body: { text: 5 },
      headers: header,
    });
    expect([invalid.status, invalid.body.error.code]).toEqual([422, "validation_failed"]);
    expect(await authorizationUsed(payer.address, payload.authorization.nonce)).toBe(false);
    expect(await balanceOf(chains.base, payer.address)).toBe(1_000_000n);
  }, 30_000);
});
