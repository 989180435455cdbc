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
 *
 * Each group of cases below is a scene of its own (its chains, Redis prefix, survivor and LLM),
 * and the scenes run side by side: the cases spend their time waiting out deadlines, and no
 * scene's automine switch, held sends or unsettled payments show in another's. The cases of one
 * scene run one after another.
 */
const killBeforeSettledSave = new URL(
  "../helpers/faults/kill-before-settled-save.mjs",
  import.meta.url,
).pathname;
const HASH_PRICE = 2000n; // hash: 1 credit at $0.002
const AI_PRICE = 20_000n; // ai-generate: 10 credits

const paidCall = (url: string, tool: string, body: unknown, headers: Record<string, string>) =>
  call(`${url}/v1/tools/${tool}`, { method: "POST", body, headers });

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

/** A describe block that is a scene of its own (see above), its cases run in order. */
function describeScene(title: string, cases: (scene: Scene) => void): void {
  describe(title, { concurrent: true }, () => {
    const scene = new Scene();
    beforeAll(() => scene.start(), 90_000);
    afterAll(() => scene.stop());
    cases(scene);
  });
}
/** A case of a scene: after the one before it, never beside it. */
const inOrder = it.sequential;

class Scene {
  readonly prefix = uniquePrefix("paidcrash");
  readonly processes: GatewayProcess[] = [];
  chains!: Awaited<ReturnType<typeof startChains>>;
  llm!: Awaited<ReturnType<typeof startFakeLlm>>;
  env!: Record<string, string>;
  survivor!: GatewayProcess;
  store!: RedisStore;

  async start(): Promise<void> {
    [this.chains, this.llm] = await Promise.all([startChains([]), startFakeLlm()]);
    this.env = {
      ...this.chains.env,
      X402_RPC_TIMEOUT_MS: "1000",
      X402_RECEIPT_TIMEOUT_MS: "2000",
      AI_BASE_URL: `${this.llm.url}/v1`,
      AI_MODEL: "m",
      // A call's hold on its key (and its refund by a survivor) lasts 15 + 10 (worker queue) + 5 s.
      TOOL_TIMEOUTS: "ai-generate=15000",
    };
    this.survivor = await this.spawn();
    this.store = createRedisStore({
      url: REDIS_URL,
      keyPrefix: this.prefix,
      tiers: tierLimits(),
      periodMs: PERIOD_MS,
    });
  }

  async stop(): Promise<void> {
    await Promise.all(this.processes.map((p) => p.stop("SIGKILL")));
    await this.store?.close();
    await this.llm?.stop();
    await this.chains?.stop();
    await dropPrefix(this.prefix);
  }

  /** A gateway process on this scene's Redis prefix: the survivor's settings, unless overridden. */
  async spawn(env: Record<string, string> = {}, nodeArgs?: string[]): Promise<GatewayProcess> {
    const gw = await spawnGateway(this.prefix, { ...this.env, ...env }, nodeArgs);
    this.processes.push(gw);
    return gw;
  }

  node(method: string, params: unknown[] = []) {
    return createPublicClient({ transport: http(this.chains.base.rpcUrl) }).request({
      method: method as never,
      params: params as never,
    });
  }

  /** Automine off: a transaction sent waits in the node's pool until `mine()`. */
  slowChain = () => this.node("evm_setAutomine", [false]);
  mine = async () => {
    await this.node("evm_mine");
    await this.node("evm_setAutomine", [true]);
  };
  async untilInPool(): Promise<void> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const { pending } = (await this.node("txpool_status")) as { pending: string };
      if (BigInt(pending) > 0n) return;
      if (Date.now() > deadline) throw new Error("no settlement transaction reached the node");
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  /** A signed payment, as its client sends it again and again. */
  async payment(wallet: LocalAccount, value: bigint, validBefore?: bigint) {
    const chain = this.chains.base;
    const signed = await signAuthorization({ account: wallet, chain, value, validBefore });
    const id =
      `${chain.chainId}:${chain.usdc}:${wallet.address}:${signed.authorization.nonce}`.toLowerCase();
    return {
      id,
      nonce: signed.authorization.nonce as string,
      headers: { "x-payment": v1Header("base-sepolia", signed) },
    };
  }

  /** A paid call to the survivor, as the payer sends it (again). */
  survivorCall(tool: string, body: unknown, headers: Record<string, string>) {
    return paidCall(this.survivor.url, tool, body, headers);
  }

  /** The same hash call again: the answer `served` had, replayed from its record, nothing charged. */
  async expectReplayed(text: string, headers: Record<string, string>, served: Json) {
    const replay = await this.survivorCall("hash", { text }, headers);
    expect([replay.status, replay.headers.get("idempotent-replayed"), replay.body]).toEqual([
      200,
      "true",
      served.body,
    ]);
  }

  /**
   * The payer, without an answer, pays again under the same key with a new authorization, until
   * served (by the survivor, once the dead process's hold on the key lapses). That authorization
   * must never be settled: no record of it, unused on chain. Answers the served call.
   */
  async paidAgainUnderKey(wallet: LocalAccount, text: string, key: Record<string, string>) {
    const again = await this.payment(wallet, HASH_PRICE);
    const served = await until(
      () => this.survivorCall("hash", { text }, { ...again.headers, ...key }),
      (r) => r.status === 200,
      60_000,
      1_000,
    );
    expect([served.status, typeof served.body.digest]).toEqual([200, "string"]);
    expect(await this.store.getPayment(again.id)).toBeNull();
    expect(await authorizationUsed(this.chains.base, wallet.address, again.nonce)).toBe(false);
    return served;
  }

  /** What the payer sees: an API key for the wallet's account, by Sign-In with Ethereum on the survivor. */
  async signIn(wallet: LocalAccount): Promise<string> {
    const challenge = await call(`${this.survivor.url}/api/v1/wallet/challenge`, {
      body: { address: wallet.address, chain_id: this.chains.base.chainId },
    });
    const signature = await wallet.signMessage({ message: challenge.body.message });
    const claimed = await call(`${this.survivor.url}/api/v1/wallet/claim`, {
      body: { message: challenge.body.message, signature },
    });
    expect(claimed.status).toBe(201);
    return claimed.body.api_key;
  }

  async creditsOf(key: string): Promise<number> {
    return (await call(`${this.survivor.url}/api/v1/account`, { key })).body.credits;
  }

  /** The account's event types, once each of `expected` is there (events reach the list through the relay, every 200 ms). */
  eventTypes(key: string, expected: string[]): Promise<string[]> {
    return until(
      async (): Promise<string[]> => {
        const res = await call(`${this.survivor.url}/api/v1/events?limit=1000`, { key });
        if (res.status !== 200)
          throw new Error(`events: ${res.status} ${JSON.stringify(res.body)}`);
        return res.body.data.map((e: { event: string }) => e.event);
      },
      (types) => expected.every((t) => types.includes(t)),
      10_000,
    );
  }

  async paymentsReceived(key: string): Promise<number> {
    const types = await this.eventTypes(key, ["payment.received"]);
    return types.filter((t) => t === "payment.received").length;
  }

  /**
   * How many times the processes logged `message` about this payment. Log lines are batched (they
   * leave at least once a second, later on a loaded machine): when one is `expected`, read once it
   * has arrived (within 10 s); then, or at once when none is, once every process has written out
   * another batch, so a line that should not be there would show.
   */
  async loggedTimes(id: string, message: string, expected = true): Promise<number> {
    const times = () =>
      this.processes
        .flatMap((p) => p.output)
        .filter((l) => l.includes(`"msg":"${message}"`) && l.includes(id)).length;
    if (expected)
      for (const deadline = Date.now() + 10_000; times() === 0 && Date.now() < deadline; )
        await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 1500));
    return times();
  }
  /** How many times a reconciler credited this payment (`expected`: see loggedTimes). */
  reconciledTimes(id: string, expected = true): Promise<number> {
    return this.loggedTimes(id, "pending payment settled and credited", expected);
  }

  /** The reconciler's backlog as the survivor's metrics show it to operators: payments not settled yet. */
  async unsettled(): Promise<string | undefined> {
    return /toolgate_queue_depth\{queue="payments-unsettled"\} (\d+)/.exec(
      await (await fetch(`${this.survivor.url}/metrics`)).text(),
    )?.[1];
  }

  /**
   * The operator's books for the payer: ledger against balance, the payment settled and out of the
   * open set, and no payment left unsettled (each case leaves none behind).
   */
  async expectBooksAgree(accountId: string, paymentId: string): Promise<void> {
    const entries = await ledgerOf(this.store, accountId);
    const account = await this.store.getAccount(accountId);
    expect(entries.reduce((sum, e) => sum + e.amount, 0)).toBe(account!.balance);
    expect((await this.store.getPayment(paymentId))?.state).toBe("settled");
    expect((await this.store.openPayments()).map((r) => r.id)).not.toContain(paymentId);
    expect(await this.unsettled()).toBe("0");
  }

  async chainBalances(payer: Address) {
    return {
      payer: await balanceOf(this.chains.base, payer),
      payTo: await balanceOf(this.chains.base, PAY_TO),
    };
  }

  /** The payer paid `price` once on chain, and its wallet account has spent the credit it bought. */
  async expectSpentAndPaidOnce(
    key: string,
    payer: Address,
    before: { payer: bigint; payTo: bigint },
    price: bigint,
  ): Promise<void> {
    expect(await this.creditsOf(key)).toBe(0);
    expect(await this.chainBalances(payer)).toEqual({
      payer: before.payer - price,
      payTo: before.payTo + price,
    });
  }
}

describeScene(
  "a gateway SIGKILLed between sending a paid call's settlement and reading its receipt",
  (s) => {
    /** Sends a paid call to a fresh process, with automine off, and kills it once its transaction is in the node's pool. */
    async function killedAfterSend(text: string, headers: Record<string, string>) {
      const dying = await s.spawn();
      await s.slowChain();
      const lost = paidCall(dying.url, "hash", { text }, headers).catch((err: Error) => err);
      await s.untilInPool();
      await dying.stop("SIGKILL");
      expect(await lost).toBeInstanceOf(Error); // the payer never had an answer
    }

    inOrder(
      "is finished by the survivor's reconciler once: the payer's credits wait in the wallet's account, and the payer's retry is served",
      async () => {
        const wallet = await fundedWallet(s.chains.base, 64_001);
        const accountId = walletAccountId(wallet.address);
        const paid = await s.payment(wallet, HASH_PRICE);
        const before = await s.chainBalances(wallet.address);

        await killedAfterSend("sent, not mined", paid.headers);
        // Sent, not mined: nothing has moved yet, and nothing is credited.
        expect(await s.chainBalances(wallet.address)).toEqual(before);
        expect((await s.store.getPayment(paid.id))?.state).toBe("settling");
        expect(await s.unsettled()).toBe("1");
        await s.mine();
        expect(await s.chainBalances(wallet.address)).toEqual({
          payer: before.payer - HASH_PRICE,
          payTo: before.payTo + HASH_PRICE,
        });

        // The survivor finds the dead process's payment open past its deadline and credits it.
        const state = await until(
          async () => (await s.store.getPayment(paid.id))?.state,
          (state) => state === "settled",
        );
        expect(state).toBe("settled");
        const key = await s.signIn(wallet);
        expect(await s.creditsOf(key)).toBe(1);

        // The payer sends the same payment again: served from those credits, not charged again.
        const retry = await s.survivorCall("hash", { text: "sent, not mined" }, paid.headers);
        expect([retry.status, typeof retry.body.digest]).toEqual([200, "string"]);
        await s.expectReplayed("sent, not mined", paid.headers, retry);
        await s.expectSpentAndPaidOnce(key, wallet.address, before, HASH_PRICE);
        expect(await s.reconciledTimes(paid.id)).toBe(1);
        expect(await s.paymentsReceived(key)).toBe(1);
        expect((await ledgerOf(s.store, accountId)).map((e) => [e.kind, e.amount])).toEqual([
          ["debit", -1],
          ["purchase", 1],
          ["grant", 0],
        ]);
        await s.expectBooksAgree(accountId, paid.id);
      },
      120_000,
    );

    inOrder(
      "charges once a payer who pays again under the same Idempotency-Key with a new authorization: the first payment pays for the call, the new one is never settled",
      async () => {
        const wallet = await fundedWallet(s.chains.base, 64_010);
        const key = { "idempotency-key": `sent-${wallet.address}` };
        const signed = await s.payment(wallet, HASH_PRICE);
        const first = { ...signed, headers: { ...signed.headers, ...key } };
        const before = await s.chainBalances(wallet.address);

        await killedAfterSend("paid again", first.headers);
        await s.mine();

        await s.paidAgainUnderKey(wallet, "paid again", key);
        const apiKey = await s.signIn(wallet);
        await s.expectSpentAndPaidOnce(apiKey, wallet.address, before, HASH_PRICE);
        expect(await s.paymentsReceived(apiKey)).toBe(1);
      },
      150_000,
    );

    inOrder(
      "answers the payer's retry of the same authorization on the survivor, right after the kill, without a second charge or credit",
      async () => {
        const wallet = await fundedWallet(s.chains.base, 64_002);
        const accountId = walletAccountId(wallet.address);
        const paid = await s.payment(wallet, HASH_PRICE);
        const before = await s.chainBalances(wallet.address);

        await killedAfterSend("retried at once", paid.headers);
        // At once, while the transaction still waits for its block (mined a second later).
        const retried = s.survivorCall("hash", { text: "retried at once" }, paid.headers);
        await new Promise((r) => setTimeout(r, 1000));
        await s.mine();
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
            async () => (await s.store.getPayment(paid.id))?.state,
            (state) => state === "settled",
          );
          served = await s.survivorCall("hash", { text: "retried at once" }, paid.headers);
        }
        expect([served.status, typeof served.body.digest]).toEqual([200, "string"]);
        await s.expectReplayed("retried at once", paid.headers, served);

        expect(await s.chainBalances(wallet.address)).toEqual({
          payer: before.payer - HASH_PRICE,
          payTo: before.payTo + HASH_PRICE,
        });
        const key = await s.signIn(wallet);
        expect(await s.creditsOf(key)).toBe(0);
        expect(await s.reconciledTimes(paid.id)).toBe(1);
        expect(await s.paymentsReceived(key)).toBe(1);
        expect((await ledgerOf(s.store, accountId)).map((e) => [e.kind, e.amount])).toEqual([
          ["debit", -1],
          ["purchase", 1],
          ["grant", 0],
        ]);
        await s.expectBooksAgree(accountId, paid.id);
      },
      120_000,
    );
  },
);

describeScene(
  "a gateway SIGKILLed after crediting a paid call's payment, before its record says settled",
  (s) => {
    inOrder(
      "leaves the credit in the wallet's account, once: the survivor's reconciler finishes the record without crediting again, and the payer's retry is served",
      async () => {
        const wallet = await fundedWallet(s.chains.base, 64_007);
        const accountId = walletAccountId(wallet.address);
        const paid = await s.payment(wallet, HASH_PRICE);
        const before = await s.chainBalances(wallet.address);
        // This process kills itself as it writes a payment's record as settled: after the credit.
        const dying = await s.spawn({}, ["--import", killBeforeSettledSave]);
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
        expect(await s.chainBalances(wallet.address)).toEqual({
          payer: before.payer - HASH_PRICE,
          payTo: before.payTo + HASH_PRICE,
        });
        // Credited, not yet recorded as settled, and no call admitted: the payment is still open.
        expect((await s.store.getAccount(accountId))?.balance).toBe(1);
        expect((await s.store.getPayment(paid.id))?.state).toBe("settling");
        expect((await s.store.openPayments()).map((r) => r.id)).toContain(paid.id);
        expect(await s.unsettled()).toBe("1");

        // The survivor finds it open past its deadline: the chain says it was paid; the credit stands.
        await until(
          async () => (await s.store.getPayment(paid.id))?.state,
          (state) => state === "settled",
        );
        expect(await s.reconciledTimes(paid.id)).toBe(1);
        const key = await s.signIn(wallet);
        expect(await s.creditsOf(key)).toBe(1);
        expect(await s.paymentsReceived(key)).toBe(1);

        const retry = await s.survivorCall(
          "hash",
          { text: "credited, not recorded" },
          paid.headers,
        );
        expect([retry.status, typeof retry.body.digest]).toEqual([200, "string"]);
        await s.expectSpentAndPaidOnce(key, wallet.address, before, HASH_PRICE);
        expect((await ledgerOf(s.store, accountId)).map((e) => [e.kind, e.amount])).toEqual([
          ["debit", -1],
          ["purchase", 1],
          ["grant", 0],
        ]);
        await s.expectBooksAgree(accountId, paid.id);
      },
      120_000,
    );
  },
);

/**
 * Pays on a fresh process whose send is held at an RPC proxy (never passed on), from a relayer
 * key of its own (the nonce it took and never used holds up no one else's settlements), and
 * kills it there: the payment is left "settling", the authorization unused on chain. The payment
 * is signed once that process is up (valid for `validForS` from then, when given): a start slowed
 * by a loaded machine leaves it as long to run as the case means it to have.
 */
async function killedBeforeSend(
  s: Scene,
  wallet: LocalAccount,
  text: string,
  validForS?: number,
  more: Record<string, string> = {},
) {
  const proxy = await startRpcProxy(s.chains.base.rpcUrl);
  try {
    const dying = await s.spawn({
      BASE_SEPOLIA_RPC_URL: proxy.url,
      X402_RELAYER_PRIVATE_KEY: relayerKey(6),
    });
    const validBefore =
      validForS === undefined ? undefined : BigInt(Math.floor(Date.now() / 1000) + validForS);
    const signed = await s.payment(wallet, HASH_PRICE, validBefore);
    const paid = { ...signed, validBefore, headers: { ...signed.headers, ...more } };
    const send = proxy.hold((body) => /"eth_sendRawTransaction(Sync)?"/.test(body));
    const sent = send.until((bodies) => bodies.length > 0).then(() => "sent" as const);
    let lost: Promise<Awaited<ReturnType<typeof paidCall>> | Error>;
    for (let attempt = 1; ; attempt++) {
      lost = paidCall(dying.url, "hash", { text }, paid.headers).catch((err: Error) => err);
      const first = await Promise.race([sent, lost]);
      if (first === "sent") break;
      // The call must not be answered before its settlement is sent: if it is, say what it was.
      // Unless the verification's reads outran the 1 s RPC timeout on a loaded machine: refused
      // before any claim, "nothing was charged. Retry shortly." The payer retries the same payment.
      const unverified =
        !(first instanceof Error) &&
        first.status === 503 &&
        first.body?.error?.code === "chain_unavailable" &&
        /did not answer; nothing was charged/.test(first.body.error.message);
      if (!unverified || attempt === 5)
        throw new Error(`answered before its settlement was sent: ${JSON.stringify(first)}`);
    }
    expect((await s.store.getPayment(paid.id))?.state).toBe("settling");
    await dying.stop("SIGKILL");
    expect(await lost).toBeInstanceOf(Error);
    return paid;
  } finally {
    await proxy.stop();
  }
}

describe("a gateway SIGKILLed after claiming a paid call's authorization, before sending it", {
  concurrent: true,
}, () => {
  describeScene("with the payer's balance still there", (s) => {
    inOrder(
      "is sent by the survivor once the dead process's settling deadline passes: charged once, credited once, and the payer's retry is served",
      async () => {
        const wallet = await fundedWallet(s.chains.base, 64_005);
        const before = await s.chainBalances(wallet.address);
        const paid = await killedBeforeSend(s, wallet, "sent by the survivor");

        // The payer's retry, 2 s on (as long as a loaded machine may take to get there): the payment's
        // fate is not known yet; told so, and not to pay again, once the dead process's deadline
        // passes, not held on by chance until the survivor's takeover has settled it.
        await new Promise((r) => setTimeout(r, 2_000));
        const retry = await s.survivorCall("hash", { text: "sent by the survivor" }, paid.headers);
        expect([retry.status, retry.body.error.code, retry.headers.get("retry-after")]).toEqual([
          503,
          "payment_pending",
          "10",
        ]);

        // Past the dead process's settling deadline (~8 s here), the survivor sends the authorization
        // itself, long before it expires (300 s).
        expect(
          await until(
            () => s.store.getPayment(paid.id),
            (r) => r?.state === "settled",
            40_000,
          ),
        ).toMatchObject({ state: "settled" });
        expect(
          await s.loggedTimes(
            paid.id,
            "abandoned payment sent by this process, settled and credited",
          ),
        ).toBe(1);

        const served = await s.survivorCall("hash", { text: "sent by the survivor" }, paid.headers);
        expect([served.status, typeof served.body.digest]).toEqual([200, "string"]);
        const key = await s.signIn(wallet);
        await s.expectSpentAndPaidOnce(key, wallet.address, before, HASH_PRICE);
        expect(await s.paymentsReceived(key)).toBe(1);
        expect(await s.unsettled()).toBe("0");
        await s.expectBooksAgree(walletAccountId(wallet.address), paid.id);
      },
      120_000,
    );

    inOrder(
      "pays a call under the client's own key once: the first authorization, sent by the survivor, pays for it, and the payer's new one under the same key is never settled",
      async () => {
        const wallet = await fundedWallet(s.chains.base, 64_008);
        const before = await s.chainBalances(wallet.address);
        const key = { "idempotency-key": `crash-${wallet.address}` };
        const first = await killedBeforeSend(s, wallet, "keyed", undefined, key);

        const served = await s.paidAgainUnderKey(wallet, "keyed", key);
        expect((await s.store.getPayment(first.id))?.state).toBe("settled");
        const apiKey = await s.signIn(wallet);
        await s.expectSpentAndPaidOnce(apiKey, wallet.address, before, HASH_PRICE);
        expect(await s.paymentsReceived(apiKey)).toBe(1);

        // The same key again, with a third authorization: the stored answer, nothing settled.
        const third = await s.payment(wallet, HASH_PRICE);
        await s.expectReplayed("keyed", { ...third.headers, ...key }, served);
        expect(await s.chainBalances(wallet.address)).toEqual({
          payer: before.payer - HASH_PRICE,
          payTo: before.payTo + HASH_PRICE,
        });
      },
      150_000,
    );
  });
  describeScene("with the payer's balance spent elsewhere meanwhile", (s) => {
    inOrder(
      "charges the payer nothing when the balance was spent meanwhile: left pending, and released once the authorization expires unused",
      async () => {
        const wallet = await fundedWallet(s.chains.base, 64_009);
        const accountId = walletAccountId(wallet.address);
        const paid = await killedBeforeSend(s, wallet, "never sent", 30);
        // The payer moves its whole balance away before the survivor takes the payment over.
        const elsewhere = anvilAccount(3).address;
        await s.node("anvil_impersonateAccount", [wallet.address]);
        await s.node("anvil_setBalance", [wallet.address, "0xde0b6b3a7640000"]);
        const drained = (await s.node("eth_sendTransaction", [
          {
            from: wallet.address,
            to: s.chains.base.usdc,
            data: encodeFunctionData({
              abi: TOKEN_ABI,
              functionName: "transfer",
              args: [elsewhere, await balanceOf(s.chains.base, wallet.address)],
            }),
          },
        ])) as Hex;
        const receipt = await createPublicClient({
          transport: http(s.chains.base.rpcUrl),
          pollingInterval: 50,
        }).waitForTransactionReceipt({ hash: drained, timeout: 20_000 });
        expect(receipt.status).toBe("success");
        const before = await s.chainBalances(wallet.address);
        expect(before.payer).toBe(0n);

        // The authorization runs out unused (a block after its validBefore, as any chain moves on).
        await new Promise((r) =>
          setTimeout(r, Number(paid.validBefore) * 1000 - Date.now() + 1000),
        );
        await s.node("evm_mine");
        expect(
          await until(
            () => s.store.getPayment(paid.id),
            (r) => r === null,
          ),
        ).toBeNull();
        expect((await s.store.openPayments()).map((r) => r.id)).not.toContain(paid.id);
        expect(await s.unsettled()).toBe("0");
        expect(await s.loggedTimes(paid.id, "pending payment expired unused: released")).toBe(1);

        // The same payment now: refused as expired (402, with the offer to pay afresh); nothing moved.
        const late = await s.survivorCall("hash", { text: "never sent" }, paid.headers);
        expect([late.status, late.body.error.code]).toEqual([402, "payment_invalid"]);
        expect(await s.chainBalances(wallet.address)).toEqual(before);
        const key = await s.signIn(wallet);
        expect(await s.creditsOf(key)).toBe(0);
        const types = (
          await call(`${s.survivor.url}/api/v1/events?limit=1000`, { key })
        ).body.data.map((e: { event: string }) => e.event);
        expect(types).not.toContain("payment.received");
        const entries = await ledgerOf(s.store, accountId);
        expect(entries.filter((e) => e.kind === "purchase")).toEqual([]);
        expect(entries.reduce((sum, e) => sum + e.amount, 0)).toBe(
          (await s.store.getAccount(accountId))!.balance,
        );
      },
      120_000,
    );
  });
});

/**
 * Pays on a fresh process for a slow ai-generate, and kills the process once the call has been
 * at the provider for `openForMs` (over a second: recorded as open; 0: not yet).
 */
async function killMidCall(s: Scene, seed: number, prompt: string, openForMs: number) {
  const wallet = await fundedWallet(s.chains.base, seed);
  const paid = await s.payment(wallet, AI_PRICE);
  const before = await s.chainBalances(wallet.address);
  const dying = await s.spawn();
  s.llm.state.delayMs = 30_000;
  const reached = s.llm.state.received;
  const lost = paidCall(dying.url, "ai-generate", { prompt }, paid.headers).catch(
    (err: Error) => err,
  );
  await until(
    async () => s.llm.state.received,
    (n) => n > reached,
    30_000,
    5,
  );
  await new Promise((r) => setTimeout(r, openForMs));
  await dying.stop("SIGKILL");
  expect(await lost).toBeInstanceOf(Error);
  s.llm.state.delayMs = 0;
  // Settled, credited and charged: the payment paid for this call.
  const accountId = walletAccountId(wallet.address);
  expect((await s.store.getPayment(paid.id))?.state).toBe("settled");
  expect((await s.store.getAccount(accountId))?.balance).toBe(0);
  expect(await s.chainBalances(wallet.address)).toEqual({
    payer: before.payer - AI_PRICE,
    payTo: before.payTo + AI_PRICE,
  });
  return { wallet, paid, before, accountId };
}

describe("a gateway SIGKILLed while the tool of a paid call it credited is still running", {
  concurrent: true,
}, () => {
  describeScene("with the call open for over a second", (s) => {
    inOrder(
      "gives the payer the call's credits back in the wallet's account, once, and serves the payer's retry",
      async () => {
        const { wallet, paid, before, accountId } = await killMidCall(s, 64_003, "cut off", 2500);
        // The survivor finds the silent process's open call and refunds it (watched in the store: the
        // payer's own reads count against the wallet account's rate limit).
        await until(
          async () => (await s.store.getAccount(accountId))?.balance,
          (c) => c === 10,
        );
        const key = await s.signIn(wallet);
        expect(await s.creditsOf(key)).toBe(10);

        const retry = await s.survivorCall("ai-generate", { prompt: "cut off" }, paid.headers);
        expect([retry.status, retry.body.text]).toEqual([200, "echo: cut off"]);
        await s.expectSpentAndPaidOnce(key, wallet.address, before, AI_PRICE);
        const types = await s.eventTypes(key, ["payment.received", "tool.error"]);
        expect(types.filter((t) => t === "payment.received")).toHaveLength(1);
        expect(types.filter((t) => t === "tool.error")).toHaveLength(1);
        expect((await ledgerOf(s.store, accountId)).map((e) => [e.kind, e.amount])).toEqual([
          ["debit", -10],
          ["refund", 10],
          ["debit", -10],
          ["purchase", 10],
          ["grant", 0],
        ]);
        expect(await s.reconciledTimes(paid.id, false)).toBe(0); // settled by the process that died: nothing to reconcile
        await s.expectBooksAgree(accountId, paid.id);
      },
      120_000,
    );

    inOrder(
      "serves the payer's retry sent to the survivor right after the kill, charged once",
      async () => {
        const { wallet, paid, before, accountId } = await killMidCall(
          s,
          64_004,
          "retried mid-call",
          2500,
        );
        // At once: the call is still the dead process's; the retry waits until it is refunded, then runs.
        const retry = await s.survivorCall(
          "ai-generate",
          { prompt: "retried mid-call" },
          paid.headers,
        );
        expect([retry.status, retry.body.text]).toEqual([200, "echo: retried mid-call"]);
        const key = await s.signIn(wallet);
        await s.expectSpentAndPaidOnce(key, wallet.address, before, AI_PRICE);
        expect(await s.paymentsReceived(key)).toBe(1);
        expect((await ledgerOf(s.store, accountId)).map((e) => [e.kind, e.amount])).toEqual([
          ["debit", -10],
          ["refund", 10],
          ["debit", -10],
          ["purchase", 10],
          ["grant", 0],
        ]);
        await s.expectBooksAgree(accountId, paid.id);
      },
      120_000,
    );
  });
  describeScene("in the call's first second", (s) => {
    inOrder(
      "serves the payer's retry of a call cut off in its first second (not yet recorded as open) under the charge already made",
      async () => {
        const { wallet, paid, before, accountId } = await killMidCall(s, 64_006, "first second", 0);
        // Nothing to refund: the call was never recorded as open. The retry waits for the dead
        // process's hold on the call (its key's lease, ~30 s), then runs it under that charge.
        const retry = await s.survivorCall("ai-generate", { prompt: "first second" }, paid.headers);
        expect([retry.status, retry.body.text]).toEqual([200, "echo: first second"]);
        const key = await s.signIn(wallet);
        await s.expectSpentAndPaidOnce(key, wallet.address, before, AI_PRICE);
        expect(await s.paymentsReceived(key)).toBe(1);
        expect((await ledgerOf(s.store, accountId)).map((e) => [e.kind, e.amount])).toEqual([
          ["debit", -10],
          ["purchase", 10],
          ["grant", 0],
        ]);
        await s.expectBooksAgree(accountId, paid.id);
      },
      120_000,
    );
  });
});
