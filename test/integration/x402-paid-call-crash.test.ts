import { once } from "node:events";
import {
  createPublicClient,
  encodeFunctionData,
  http,
  type Address,
  type Hex,
  type LocalAccount,
} from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PERIOD_MS } from "../../src/accounts/tiers.js";
import { tierLimits } from "../../src/store/index.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { ledgerOf } from "../helpers/books.js";
import { startFakeLlm } from "../helpers/fake-providers.js";
import {
  call,
  dropPrefix,
  spawnGateway,
  uniquePrefix,
  type GatewayProcess,
  type Json,
} from "../helpers/gateway.js";
import { REDIS_URL } from "../helpers/redis.js";
import { TOKEN_ABI, anvilAccount } from "../../chain-fixtures/chain.js";
import { startRpcProxy } from "../helpers/rpc-proxy.js";
import {
  PAY_TO,
  authorizationUsed,
  balanceOf,
  fundedWallet,
  signAuthorization,
  relayerKey,
  startChains,
  v1Header,
} from "../helpers/x402.js";

/**
 * A gateway process SIGKILLed in the middle of a paid call (x402: no API key, the payer's
 * authorization settled on chain by the gateway itself), with a second gateway process on the same
 * Redis that lives on. Whatever instant the first dies at, the payer is charged on chain at most
 * once, and gets the call served or the credits back in the wallet's account, credited once
 * (`payment.received` once); the survivor's reconciler finishes a payment left open once, and the
 * books (ledger against balance, payments open against settled) agree. The instants: after the
 * claim, before the send (the send held at an RPC proxy); after the send, before the receipt
 * (automine off); after the credit, before the record says settled (a fault that SIGKILLs the
 * process on that Redis write); in the call's first second; with the call open at its worker.
 * The payer sees it through the survivor (wallet sign-in, /account, /events, the retried call)
 * and the chain; the operator through the store, the survivor's metrics and its logs.
 *
 * Both processes run one configuration: short RPC and receipt timeouts, so a payment left
 * "settling" by the dead one is the survivor's to finish after ~8 s (the settling deadline); the
 * receipt wait (2 s) still leaves the test time to kill a process before it gives up on its own.
 */
const killBeforeSettledSave = new URL(
  "../helpers/faults/kill-before-settled-save.mjs",
  import.meta.url,
).pathname;
const HASH_PRICE = 2000n; // hash: 1 credit at $0.002
const AI_PRICE = 20_000n; // ai-generate: 10 credits
const prefix = uniquePrefix("paidcrash");
let chains: Awaited<ReturnType<typeof startChains>>;
let llm: Awaited<ReturnType<typeof startFakeLlm>>;
let env: Record<string, string>;
let survivor: GatewayProcess;
let store: RedisStore;
const processes: GatewayProcess[] = [];

beforeAll(async () => {
  [chains, llm] = await Promise.all([startChains([]), startFakeLlm()]);
  env = {
    ...chains.env,
    X402_RPC_TIMEOUT_MS: "1000",
    X402_RECEIPT_TIMEOUT_MS: "2000",
    AI_BASE_URL: `${llm.url}/v1`,
    AI_MODEL: "m",
    // A call's hold on its key (and its refund by a survivor) lasts 15 + 10 (worker queue) + 5 s.
    TOOL_TIMEOUTS: "ai-generate=15000",
  };
  survivor = await spawnGateway(prefix, env);
  processes.push(survivor);
  store = createRedisStore({
    url: REDIS_URL,
    keyPrefix: prefix,
    tiers: tierLimits(),
    periodMs: PERIOD_MS,
  });
}, 90_000);

afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop("SIGKILL")));
  await store?.close();
  await llm?.stop();
  await chains?.stop();
  await dropPrefix(prefix);
});

/** A gateway process that will be SIGKILLed mid-call: the same settings as the survivor. */
async function dyingGateway(): Promise<GatewayProcess> {
  const gw = await spawnGateway(prefix, env);
  processes.push(gw);
  return gw;
}

const node = (method: string, params: unknown[] = []) =>
  createPublicClient({ transport: http(chains.base.rpcUrl) }).request({
    method: method as never,
    params: params as never,
  });

/** Automine off: a transaction sent waits in the node's pool until `mine()`. */
const slowChain = () => node("evm_setAutomine", [false]);
const mine = async () => {
  await node("evm_mine");
  await node("evm_setAutomine", [true]);
};
async function untilInPool(): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { pending } = (await node("txpool_status")) as { pending: string };
    if (BigInt(pending) > 0n) return;
    if (Date.now() > deadline) throw new Error("no settlement transaction reached the node");
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function until<T>(
  read: () => Promise<T>,
  done: (v: T) => boolean,
  ms = 30_000,
  everyMs = 200,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** A signed payment, as its client sends it again and again. */
async function payment(wallet: LocalAccount, value: bigint, validBefore?: bigint) {
  const signed = await signAuthorization({
    account: wallet,
    chain: chains.base,
    value,
    validBefore,
  });
  const id =
    `${chains.base.chainId}:${chains.base.usdc}:${wallet.address}:${signed.authorization.nonce}`.toLowerCase();
  return {
    id,
    nonce: signed.authorization.nonce as string,
    headers: { "x-payment": v1Header("base-sepolia", signed) },
  };
}

const paidCall = (url: string, tool: string, body: unknown, headers: Record<string, string>) =>
  call(`${url}/v1/tools/${tool}`, { method: "POST", body, headers });

/**
 * The payer, without an answer, pays again under the same key with a new authorization, until
 * served (by the survivor, once the dead process's hold on the key lapses). That authorization
 * must never be settled: no record of it, unused on chain. Answers the served call.
 */
async function paidAgainUnderKey(wallet: LocalAccount, text: string, key: Record<string, string>) {
  const again = await payment(wallet, HASH_PRICE);
  const served = await until(
    () => paidCall(survivor.url, "hash", { text }, { ...again.headers, ...key }),
    (r) => r.status === 200,
    60_000,
    1_000,
  );
  expect([served.status, typeof served.body.digest]).toEqual([200, "string"]);
  expect(await store.getPayment(again.id)).toBeNull();
  expect(await authorizationUsed(chains.base, wallet.address, again.nonce)).toBe(false);
  return served;
}

/** What the payer sees: an API key for the wallet's account, by Sign-In with Ethereum on the survivor. */
async function signIn(wallet: LocalAccount): Promise<string> {
  const challenge = await call(`${survivor.url}/api/v1/wallet/challenge`, {
    body: { address: wallet.address, chain_id: chains.base.chainId },
  });
  const signature = await wallet.signMessage({ message: challenge.body.message });
  const claimed = await call(`${survivor.url}/api/v1/wallet/claim`, {
    body: { message: challenge.body.message, signature },
  });
  expect(claimed.status).toBe(201);
  return claimed.body.api_key;
}

const creditsOf = async (key: string): Promise<number> =>
  (await call(`${survivor.url}/api/v1/account`, { key })).body.credits;

/** The account's event types, once each of `expected` is there (events reach the list through the relay, every 200 ms). */
const eventTypes = (key: string, expected: string[]): Promise<string[]> =>
  until(
    async (): Promise<string[]> => {
      const res = await call(`${survivor.url}/api/v1/events?limit=1000`, { key });
      if (res.status !== 200) throw new Error(`events: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body.data.map((e: { event: string }) => e.event);
    },
    (types) => expected.every((t) => types.includes(t)),
    10_000,
  );

const paymentsReceived = async (key: string) =>
  (await eventTypes(key, ["payment.received"])).filter((t) => t === "payment.received").length;

/**
 * How many times the processes logged `message` about this payment (read once every process has
 * written out its batched log lines: they leave at least once a second).
 */
async function loggedTimes(id: string, message: string): Promise<number> {
  await new Promise((r) => setTimeout(r, 1500));
  return processes
    .flatMap((p) => p.output)
    .filter((l) => l.includes(`"msg":"${message}"`) && l.includes(id)).length;
}
/** How many times a reconciler credited this payment. */
const reconciledTimes = (id: string) => loggedTimes(id, "pending payment settled and credited");

/** The reconciler's backlog as the survivor's metrics show it to operators: payments not settled yet. */
const unsettled = async () =>
  /toolgate_queue_depth\{queue="payments-unsettled"\} (\d+)/.exec(
    await (await fetch(`${survivor.url}/metrics`)).text(),
  )?.[1];

/**
 * The operator's books for the payer: ledger against balance, the payment settled and out of the
 * open set, and no payment left unsettled (each test leaves none behind).
 */
async function expectBooksAgree(accountId: string, paymentId: string) {
  const entries = await ledgerOf(store, accountId);
  const account = await store.getAccount(accountId);
  expect(entries.reduce((sum, e) => sum + e.amount, 0)).toBe(account!.balance);
  expect((await store.getPayment(paymentId))?.state).toBe("settled");
  expect((await store.openPayments()).map((r) => r.id)).not.toContain(paymentId);
  expect(await unsettled()).toBe("0");
}

const chainBalances = async (payer: Address) => ({
  payer: await balanceOf(chains.base, payer),
  payTo: await balanceOf(chains.base, PAY_TO),
});

/** The payer paid `price` once on chain, and its wallet account has spent the credit it bought. */
async function expectSpentAndPaidOnce(
  key: string,
  payer: Address,
  before: Awaited<ReturnType<typeof chainBalances>>,
  price: bigint,
) {
  expect(await creditsOf(key)).toBe(0);
  expect(await chainBalances(payer)).toEqual({
    payer: before.payer - price,
    payTo: before.payTo + price,
  });
}

describe("a gateway SIGKILLed between sending a paid call's settlement and reading its receipt", () => {
  /** Sends a paid call to a fresh process, with automine off, and kills it once its transaction is in the node's pool. */
  async function killedAfterSend(text: string, headers: Record<string, string>) {
    const dying = await dyingGateway();
    await slowChain();
    const lost = paidCall(dying.url, "hash", { text }, headers).catch((err: Error) => err);
    await untilInPool();
    await dying.stop("SIGKILL");
    expect(await lost).toBeInstanceOf(Error); // the payer never had an answer
  }

  it("is finished by the survivor's reconciler once: the payer's credits wait in the wallet's account, and the payer's retry is served", async () => {
    const wallet = await fundedWallet(chains.base, 64_001);
    const accountId = walletAccountId(wallet.address);
    const paid = await payment(wallet, HASH_PRICE);
    const before = await chainBalances(wallet.address);

    await killedAfterSend("sent, not mined", paid.headers);
    // Sent, not mined: nothing has moved yet, and nothing is credited.
    expect(await chainBalances(wallet.address)).toEqual(before);
    expect((await store.getPayment(paid.id))?.state).toBe("settling");
    expect(await unsettled()).toBe("1");
    await mine();
    expect(await chainBalances(wallet.address)).toEqual({
      payer: before.payer - HASH_PRICE,
      payTo: before.payTo + HASH_PRICE,
    });

    // The survivor finds the dead process's payment open past its deadline and credits it.
    const state = await until(
      async () => (await store.getPayment(paid.id))?.state,
      (s) => s === "settled",
    );
    expect(state).toBe("settled");
    const key = await signIn(wallet);
    expect(await creditsOf(key)).toBe(1);

    // The payer sends the same payment again: served from those credits, not charged again.
    const retry = await paidCall(survivor.url, "hash", { text: "sent, not mined" }, paid.headers);
    expect([retry.status, typeof retry.body.digest]).toEqual([200, "string"]);
    const replay = await paidCall(survivor.url, "hash", { text: "sent, not mined" }, paid.headers);
    expect([replay.status, replay.headers.get("idempotent-replayed"), replay.body]).toEqual([
      200,
      "true",
      retry.body,
    ]);
    await expectSpentAndPaidOnce(key, wallet.address, before, HASH_PRICE);
    expect(await reconciledTimes(paid.id)).toBe(1);
    expect(await paymentsReceived(key)).toBe(1);
    expect((await ledgerOf(store, accountId)).map((e) => [e.kind, e.amount])).toEqual([
      ["debit", -1],
      ["purchase", 1],
      ["grant", 0],
    ]);
    await expectBooksAgree(accountId, paid.id);
  }, 120_000);

  it("charges once a payer who pays again under the same Idempotency-Key with a new authorization: the first payment pays for the call, the new one is never settled", async () => {
    const wallet = await fundedWallet(chains.base, 64_010);
    const key = { "idempotency-key": `sent-${wallet.address}` };
    const signed = await payment(wallet, HASH_PRICE);
    const first = { ...signed, headers: { ...signed.headers, ...key } };
    const before = await chainBalances(wallet.address);

    await killedAfterSend("paid again", first.headers);
    await mine();

    await paidAgainUnderKey(wallet, "paid again", key);
    const apiKey = await signIn(wallet);
    await expectSpentAndPaidOnce(apiKey, wallet.address, before, HASH_PRICE);
    expect(await paymentsReceived(apiKey)).toBe(1);
  }, 150_000);

  it("answers the payer's retry of the same authorization on the survivor, right after the kill, without a second charge or credit", async () => {
    const wallet = await fundedWallet(chains.base, 64_002);
    const accountId = walletAccountId(wallet.address);
    const paid = await payment(wallet, HASH_PRICE);
    const before = await chainBalances(wallet.address);

    await killedAfterSend("retried at once", paid.headers);
    // At once, while the transaction still waits for its block (mined a second later).
    const retried = paidCall(survivor.url, "hash", { text: "retried at once" }, paid.headers);
    await new Promise((r) => setTimeout(r, 1000));
    await mine();
    const retry = await retried;
    // Served, or told plainly to come back with the same payment (never to pay again).
    let served: Json = retry;
    if (retry.status !== 200) {
      expect([retry.status, retry.body.error.code, retry.headers.get("retry-after")]).toEqual([
        503,
        "payment_pending",
        "10",
      ]);
      await until(
        async () => (await store.getPayment(paid.id))?.state,
        (s) => s === "settled",
      );
      served = await paidCall(survivor.url, "hash", { text: "retried at once" }, paid.headers);
    }
    expect([served.status, typeof served.body.digest]).toEqual([200, "string"]);
    const replay = await paidCall(survivor.url, "hash", { text: "retried at once" }, paid.headers);
    expect([replay.status, replay.headers.get("idempotent-replayed"), replay.body]).toEqual([
      200,
      "true",
      served.body,
    ]);

    expect(await chainBalances(wallet.address)).toEqual({
      payer: before.payer - HASH_PRICE,
      payTo: before.payTo + HASH_PRICE,
    });
    const key = await signIn(wallet);
    expect(await creditsOf(key)).toBe(0);
    expect(await reconciledTimes(paid.id)).toBe(1);
    expect(await paymentsReceived(key)).toBe(1);
    expect((await ledgerOf(store, accountId)).map((e) => [e.kind, e.amount])).toEqual([
      ["debit", -1],
      ["purchase", 1],
      ["grant", 0],
    ]);
    await expectBooksAgree(accountId, paid.id);
  }, 120_000);
});

describe("a gateway SIGKILLed after crediting a paid call's payment, before its record says settled", () => {
  it("leaves the credit in the wallet's account, once: the survivor's reconciler finishes the record without crediting again, and the payer's retry is served", async () => {
    const wallet = await fundedWallet(chains.base, 64_007);
    const accountId = walletAccountId(wallet.address);
    const paid = await payment(wallet, HASH_PRICE);
    const before = await chainBalances(wallet.address);
    // This process kills itself as it writes a payment's record as settled: after the credit.
    const dying = await spawnGateway(prefix, env, ["--import", killBeforeSettledSave]);
    processes.push(dying);
    const lost = await paidCall(
      dying.url,
      "hash",
      { text: "credited, not recorded" },
      paid.headers,
    ).catch((err: Error) => err);
    expect(lost).toBeInstanceOf(Error);
    if (dying.child.exitCode === null && dying.child.signalCode === null)
      await once(dying.child, "exit");
    expect(dying.child.signalCode).toBe("SIGKILL");
    expect(await chainBalances(wallet.address)).toEqual({
      payer: before.payer - HASH_PRICE,
      payTo: before.payTo + HASH_PRICE,
    });
    // Credited, not yet recorded as settled, and no call admitted: the payment is still open.
    expect((await store.getAccount(accountId))?.balance).toBe(1);
    expect((await store.getPayment(paid.id))?.state).toBe("settling");
    expect((await store.openPayments()).map((r) => r.id)).toContain(paid.id);
    expect(await unsettled()).toBe("1");

    // The survivor finds it open past its deadline: the chain says it was paid; the credit stands.
    await until(
      async () => (await store.getPayment(paid.id))?.state,
      (s) => s === "settled",
    );
    expect(await reconciledTimes(paid.id)).toBe(1);
    const key = await signIn(wallet);
    expect(await creditsOf(key)).toBe(1);
    expect(await paymentsReceived(key)).toBe(1);

    const retry = await paidCall(
      survivor.url,
      "hash",
      { text: "credited, not recorded" },
      paid.headers,
    );
    expect([retry.status, typeof retry.body.digest]).toEqual([200, "string"]);
    await expectSpentAndPaidOnce(key, wallet.address, before, HASH_PRICE);
    expect((await ledgerOf(store, accountId)).map((e) => [e.kind, e.amount])).toEqual([
      ["debit", -1],
      ["purchase", 1],
      ["grant", 0],
    ]);
    await expectBooksAgree(accountId, paid.id);
  }, 120_000);
});

describe("a gateway SIGKILLed after claiming a paid call's authorization, before sending it", () => {
  /**
   * Pays on a fresh process whose send is held at an RPC proxy (never passed on), from a relayer
   * key of its own (the nonce it took and never used holds up no one else's settlements), and
   * kills it there: the payment is left "settling", the authorization unused on chain.
   */
  async function killedBeforeSend(
    wallet: LocalAccount,
    text: string,
    validBefore?: bigint,
    more: Record<string, string> = {},
  ) {
    const signed = await payment(wallet, HASH_PRICE, validBefore);
    const paid = { ...signed, headers: { ...signed.headers, ...more } };
    const proxy = await startRpcProxy(chains.base.rpcUrl);
    try {
      const dying = await spawnGateway(prefix, {
        ...env,
        BASE_SEPOLIA_RPC_URL: proxy.url,
        X402_RELAYER_PRIVATE_KEY: relayerKey(6),
      });
      processes.push(dying);
      const send = proxy.hold((body) => /"eth_sendRawTransaction(Sync)?"/.test(body));
      const lost = paidCall(dying.url, "hash", { text }, paid.headers).catch((err: Error) => err);
      await send.until((bodies) => bodies.length > 0);
      expect((await store.getPayment(paid.id))?.state).toBe("settling");
      await dying.stop("SIGKILL");
      expect(await lost).toBeInstanceOf(Error);
    } finally {
      await proxy.stop();
    }
    return paid;
  }

  it("is sent by the survivor once the dead process's settling deadline passes: charged once, credited once, and the payer's retry is served", async () => {
    const wallet = await fundedWallet(chains.base, 64_005);
    const before = await chainBalances(wallet.address);
    const paid = await killedBeforeSend(wallet, "sent by the survivor");

    // The payer's retry, 2 s on (as long as a loaded machine may take to get there): the payment's
    // fate is not known yet; told so, and not to pay again, once the dead process's deadline
    // passes, not held on by chance until the survivor's takeover has settled it.
    await new Promise((r) => setTimeout(r, 2_000));
    const retry = await paidCall(
      survivor.url,
      "hash",
      { text: "sent by the survivor" },
      paid.headers,
    );
    expect([retry.status, retry.body.error.code, retry.headers.get("retry-after")]).toEqual([
      503,
      "payment_pending",
      "10",
    ]);

    // Past the dead process's settling deadline (~8 s here), the survivor sends the authorization
    // itself, long before it expires (300 s).
    expect(
      await until(
        () => store.getPayment(paid.id),
        (r) => r?.state === "settled",
        40_000,
      ),
    ).toMatchObject({ state: "settled" });
    expect(
      await loggedTimes(paid.id, "abandoned payment sent by this process, settled and credited"),
    ).toBe(1);

    const served = await paidCall(
      survivor.url,
      "hash",
      { text: "sent by the survivor" },
      paid.headers,
    );
    expect([served.status, typeof served.body.digest]).toEqual([200, "string"]);
    const key = await signIn(wallet);
    await expectSpentAndPaidOnce(key, wallet.address, before, HASH_PRICE);
    expect(await paymentsReceived(key)).toBe(1);
    expect(await unsettled()).toBe("0");
    await expectBooksAgree(walletAccountId(wallet.address), paid.id);
  }, 120_000);

  it("pays a call under the client's own key once: the first authorization, sent by the survivor, pays for it, and the payer's new one under the same key is never settled", async () => {
    const wallet = await fundedWallet(chains.base, 64_008);
    const before = await chainBalances(wallet.address);
    const key = { "idempotency-key": `crash-${wallet.address}` };
    const first = await killedBeforeSend(wallet, "keyed", undefined, key);

    const served = await paidAgainUnderKey(wallet, "keyed", key);
    expect((await store.getPayment(first.id))?.state).toBe("settled");
    const apiKey = await signIn(wallet);
    await expectSpentAndPaidOnce(apiKey, wallet.address, before, HASH_PRICE);
    expect(await paymentsReceived(apiKey)).toBe(1);

    // The same key again, with a third authorization: the stored answer, nothing settled.
    const third = await payment(wallet, HASH_PRICE);
    const replay = await paidCall(
      survivor.url,
      "hash",
      { text: "keyed" },
      { ...third.headers, ...key },
    );
    expect([replay.status, replay.headers.get("idempotent-replayed"), replay.body]).toEqual([
      200,
      "true",
      served.body,
    ]);
    expect(await chainBalances(wallet.address)).toEqual({
      payer: before.payer - HASH_PRICE,
      payTo: before.payTo + HASH_PRICE,
    });
  }, 150_000);

  it("charges the payer nothing when the balance was spent meanwhile: left pending, and released once the authorization expires unused", async () => {
    const wallet = await fundedWallet(chains.base, 64_009);
    const accountId = walletAccountId(wallet.address);
    const validBefore = BigInt(Math.floor(Date.now() / 1000) + 30);
    const paid = await killedBeforeSend(wallet, "never sent", validBefore);
    // The payer moves its whole balance away before the survivor takes the payment over.
    const elsewhere = anvilAccount(3).address;
    await node("anvil_impersonateAccount", [wallet.address]);
    await node("anvil_setBalance", [wallet.address, "0xde0b6b3a7640000"]);
    const drained = (await node("eth_sendTransaction", [
      {
        from: wallet.address,
        to: chains.base.usdc,
        data: encodeFunctionData({
          abi: TOKEN_ABI,
          functionName: "transfer",
          args: [elsewhere, await balanceOf(chains.base, wallet.address)],
        }),
      },
    ])) as Hex;
    const receipt = await createPublicClient({
      transport: http(chains.base.rpcUrl),
      pollingInterval: 50,
    }).waitForTransactionReceipt({ hash: drained, timeout: 20_000 });
    expect(receipt.status).toBe("success");
    const before = await chainBalances(wallet.address);
    expect(before.payer).toBe(0n);

    // The authorization runs out unused (a block after its validBefore, as any chain moves on).
    await new Promise((r) => setTimeout(r, Number(validBefore) * 1000 - Date.now() + 1000));
    await node("evm_mine");
    expect(
      await until(
        () => store.getPayment(paid.id),
        (r) => r === null,
      ),
    ).toBeNull();
    expect((await store.openPayments()).map((r) => r.id)).not.toContain(paid.id);
    expect(await unsettled()).toBe("0");
    expect(await loggedTimes(paid.id, "pending payment expired unused: released")).toBe(1);

    // The same payment now: refused as expired (402, with the offer to pay afresh); nothing moved.
    const late = await paidCall(survivor.url, "hash", { text: "never sent" }, paid.headers);
    expect([late.status, late.body.error.code]).toEqual([402, "payment_invalid"]);
    expect(await chainBalances(wallet.address)).toEqual(before);
    const key = await signIn(wallet);
    expect(await creditsOf(key)).toBe(0);
    const types = (await call(`${survivor.url}/api/v1/events?limit=1000`, { key })).body.data.map(
      (e: { event: string }) => e.event,
    );
    expect(types).not.toContain("payment.received");
    const entries = await ledgerOf(store, accountId);
    expect(entries.filter((e) => e.kind === "purchase")).toEqual([]);
    expect(entries.reduce((sum, e) => sum + e.amount, 0)).toBe(
      (await store.getAccount(accountId))!.balance,
    );
  }, 120_000);
});

describe("a gateway SIGKILLed while the tool of a paid call it credited is still running", () => {
  /**
   * Pays on a fresh process for a slow ai-generate, and kills the process once the call has been
   * at the provider for `openForMs` (over a second: recorded as open; 0: not yet).
   */
  async function killMidCall(seed: number, prompt: string, openForMs: number) {
    const wallet = await fundedWallet(chains.base, seed);
    const paid = await payment(wallet, AI_PRICE);
    const before = await chainBalances(wallet.address);
    const dying = await dyingGateway();
    llm.state.delayMs = 30_000;
    const reached = llm.state.received;
    const lost = paidCall(dying.url, "ai-generate", { prompt }, paid.headers).catch(
      (err: Error) => err,
    );
    await until(
      async () => llm.state.received,
      (n) => n > reached,
      30_000,
      5,
    );
    await new Promise((r) => setTimeout(r, openForMs));
    await dying.stop("SIGKILL");
    expect(await lost).toBeInstanceOf(Error);
    llm.state.delayMs = 0;
    // Settled, credited and charged: the payment paid for this call.
    const accountId = walletAccountId(wallet.address);
    expect((await store.getPayment(paid.id))?.state).toBe("settled");
    expect((await store.getAccount(accountId))?.balance).toBe(0);
    expect(await chainBalances(wallet.address)).toEqual({
      payer: before.payer - AI_PRICE,
      payTo: before.payTo + AI_PRICE,
    });
    return { wallet, paid, before, accountId };
  }

  it("gives the payer the call's credits back in the wallet's account, once, and serves the payer's retry", async () => {
    const { wallet, paid, before, accountId } = await killMidCall(64_003, "cut off", 2500);
    // The survivor finds the silent process's open call and refunds it (watched in the store: the
    // payer's own reads count against the wallet account's rate limit).
    await until(
      async () => (await store.getAccount(accountId))?.balance,
      (c) => c === 10,
    );
    const key = await signIn(wallet);
    expect(await creditsOf(key)).toBe(10);

    const retry = await paidCall(survivor.url, "ai-generate", { prompt: "cut off" }, paid.headers);
    expect([retry.status, retry.body.text]).toEqual([200, "echo: cut off"]);
    await expectSpentAndPaidOnce(key, wallet.address, before, AI_PRICE);
    const types = await eventTypes(key, ["payment.received", "tool.error"]);
    expect(types.filter((t) => t === "payment.received")).toHaveLength(1);
    expect(types.filter((t) => t === "tool.error")).toHaveLength(1);
    expect((await ledgerOf(store, accountId)).map((e) => [e.kind, e.amount])).toEqual([
      ["debit", -10],
      ["refund", 10],
      ["debit", -10],
      ["purchase", 10],
      ["grant", 0],
    ]);
    expect(await reconciledTimes(paid.id)).toBe(0); // settled by the process that died: nothing to reconcile
    await expectBooksAgree(accountId, paid.id);
  }, 120_000);

  it("serves the payer's retry sent to the survivor right after the kill, charged once", async () => {
    const { wallet, paid, before, accountId } = await killMidCall(64_004, "retried mid-call", 2500);
    // At once: the call is still the dead process's; the retry waits until it is refunded, then runs.
    const retry = await paidCall(
      survivor.url,
      "ai-generate",
      { prompt: "retried mid-call" },
      paid.headers,
    );
    expect([retry.status, retry.body.text]).toEqual([200, "echo: retried mid-call"]);
    const key = await signIn(wallet);
    await expectSpentAndPaidOnce(key, wallet.address, before, AI_PRICE);
    expect(await paymentsReceived(key)).toBe(1);
    expect((await ledgerOf(store, accountId)).map((e) => [e.kind, e.amount])).toEqual([
      ["debit", -10],
      ["refund", 10],
      ["debit", -10],
      ["purchase", 10],
      ["grant", 0],
    ]);
    await expectBooksAgree(accountId, paid.id);
  }, 120_000);
  it("serves the payer's retry of a call cut off in its first second (not yet recorded as open) under the charge already made", async () => {
    const { wallet, paid, before, accountId } = await killMidCall(64_006, "first second", 0);
    // Nothing to refund: the call was never recorded as open. The retry waits for the dead
    // process's hold on the call (its key's lease, ~30 s), then runs it under that charge.
    const retry = await paidCall(
      survivor.url,
      "ai-generate",
      { prompt: "first second" },
      paid.headers,
    );
    expect([retry.status, retry.body.text]).toEqual([200, "echo: first second"]);
    const key = await signIn(wallet);
    await expectSpentAndPaidOnce(key, wallet.address, before, AI_PRICE);
    expect(await paymentsReceived(key)).toBe(1);
    expect((await ledgerOf(store, accountId)).map((e) => [e.kind, e.amount])).toEqual([
      ["debit", -10],
      ["purchase", 10],
      ["grant", 0],
    ]);
    await expectBooksAgree(accountId, paid.id);
  }, 120_000);
});
