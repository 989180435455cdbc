import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anvilAccount } from "../../chain-fixtures/chain.js";
import { PERIOD_MS } from "../../src/accounts/tiers.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { tierLimits } from "../../src/store/index.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis.js";
import {
  call,
  dropPrefix,
  spawnGateway,
  uniquePrefix,
  type GatewayProcess,
} from "../helpers/gateway.js";
import { REDIS_URL } from "../helpers/redis.js";
import { startRpcProxy } from "../helpers/rpc-proxy.js";
import { PAY_TO, balanceOf, signAuthorization, startChains, v1Header } from "../helpers/x402.js";

/**
 * A gateway process SIGKILLed after it sent a settlement and before it saw the receipt: the
 * money moved on chain and nobody was there to credit it. Another process finishes the job.
 */
const PRICE = 2000n;
const PAYER = anvilAccount(5);
const prefix = uniquePrefix("x402crash");
let chains: Awaited<ReturnType<typeof startChains>>;
let proxy: Awaited<ReturnType<typeof startRpcProxy>>;
let store: RedisStore;
const processes: GatewayProcess[] = [];
beforeAll(async () => {
  chains = await startChains([PAYER.address]);
  proxy = await startRpcProxy(chains.base.rpcUrl);
  store = createRedisStore({
    url: REDIS_URL,
    keyPrefix: prefix,
    tiers: tierLimits(),
    periodMs: PERIOD_MS,
  });
}, 60_000);
afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop("SIGKILL")));
  await proxy?.stop();
  await store?.close();
  await chains?.stop();
  await dropPrefix(prefix);
});

describe("a gateway that dies while settling", () => {
  it("leaves a payment that another process credits once, and the payer's retry is served", async () => {
    const dying = await spawnGateway(prefix, {
      ...chains.env,
      BASE_SEPOLIA_RPC_URL: proxy.url,
      X402_RECEIPT_TIMEOUT_MS: "60000",
    });
    processes.push(dying);
    const header = {
      "x-payment": v1Header(
        "base-sepolia",
        await signAuthorization({ account: PAYER, chain: chains.base, value: PRICE }),
      ),
    };
    const payToBefore = await balanceOf(chains.base, PAY_TO);
    proxy.silenceAfterNextSend();
    const lost = call(`${dying.url}/v1/tools/hash`, {
      method: "POST",
      body: { text: "crash" },
      headers: header,
    }).catch((err: Error) => err);
    await proxy.sent;
    await dying.stop("SIGKILL");
    expect(await lost).toBeInstanceOf(Error); // the caller never got an answer
    expect(await balanceOf(chains.base, PAY_TO)).toBe(payToBefore + PRICE);
    const accountId = walletAccountId(PAYER.address);
    expect((await store.getAccount(accountId))?.balance ?? 0).toBe(0);

    // A surviving process (short timeouts, so the dead one's claim goes stale quickly) reconciles it.
    const survivor = await spawnGateway(prefix, {
      ...chains.env,
      X402_RPC_TIMEOUT_MS: "500",
      X402_RECEIPT_TIMEOUT_MS: "500",
    });
    processes.push(survivor);
    const deadline = Date.now() + 30_000;
    while ((await store.getAccount(accountId))?.balance !== 1 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 200));
    expect((await store.getAccount(accountId))?.balance).toBe(1);

    const retry = await call(`${survivor.url}/v1/tools/hash`, {
      method: "POST",
      body: { text: "crash" },
      headers: header,
    });
    expect(retry.status).toBe(200);
    const again = await call(`${survivor.url}/v1/tools/hash`, {
      method: "POST",
      body: { text: "crash" },
      headers: header,
    });
    expect([again.status, again.headers.get("idempotent-replayed"), again.body]).toEqual([
      200,
      "true",
      retry.body,
    ]);
    expect(await balanceOf(chains.base, PAY_TO)).toBe(payToBefore + PRICE);
    const ledger = (await store.ledger(accountId, { limit: 100 })).items;
    expect(ledger.filter((e) => e.kind === "purchase")).toHaveLength(1);
    expect(ledger.filter((e) => e.kind === "debit")).toHaveLength(1);
  }, 120_000); // two gateway start-ups and a 12.5 s settling deadline: 35 s alone, over 60 s on a loaded machine
});
