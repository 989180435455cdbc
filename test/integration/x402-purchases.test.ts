import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { describe, expect, it } from "vitest";
import { anvilAccount } from "../../chain-fixtures/chain.js";
import { admin, call, eventsOf, signUp } from "../helpers/gateway.js";
import {
  PAY_TO,
  balanceOf,
  paidGatewayFixture,
  signAuthorization,
  v1Header,
  v2Header,
} from "../helpers/x402.js";

/** Credit packs and plans bought with x402 by a keyed account (decisions.md D8). */
const PAYER = anvilAccount(2);
const PERIOD_S = 3;
const setup = paidGatewayFixture({
  fund: [PAYER.address],
  // A small key cap, so a wallet's claims reach it (every key a caller asks for is within it).
  env: { PLAN_PERIOD_SECONDS: String(PERIOD_S), KEYS_PER_ACCOUNT: "2" },
});

/** Asks, reads the price from the 402, pays it, and asks again. */
async function buy(key: string, path: string, body: unknown) {
  const challenge = await call(`${setup.gw.url}${path}`, { key, body });
  expect([challenge.status, challenge.body.error.code]).toEqual([402, "payment_required"]);
  const price = BigInt(challenge.body.accepts[0].maxAmountRequired);
  const header = v1Header(
    "base-sepolia",
    await signAuthorization({ account: PAYER, chain: setup.chains.base, value: price }),
  );
  const res = await call(`${setup.gw.url}${path}`, { key, body, headers: { "x-payment": header } });
  return { res, price };
}

/** A purchase's PAYMENT-REQUIRED offer (x402 v2) for base-sepolia, and an authorization signed for it. */
async function signedV2Offer(key: string, path: string, body: unknown) {
  const challenge = await call(`${setup.gw.url}${path}`, { key, body });
  const offer = JSON.parse(
    Buffer.from(challenge.headers.get("payment-required")!, "base64").toString(),
  );
  const accepted = offer.accepts.find((a: { network: string }) => a.network === "eip155:84532");
  const payload = await signAuthorization({
    account: PAYER,
    chain: setup.chains.base,
    value: BigInt(accepted.amount),
  });
  return { offer, accepted, payload };
}

describe("a purchase's answer, as the OpenAPI document describes it", () => {
  /** A purchase paid with x402 v2: the PAYMENT-REQUIRED offer for base-sepolia, signed, as PAYMENT-SIGNATURE. */
  async function buyWithV2(key: string, path: string, body: unknown) {
    const { accepted, payload } = await signedV2Offer(key, path, body);
    return call(`${setup.gw.url}${path}`, {
      key,
      body,
      headers: { "payment-signature": v2Header(accepted, payload) },
    });
  }

  it("a pack paid with x402 v1 and a plan paid with v2: body and PAYMENT-RESPONSE / X-PAYMENT-RESPONSE receipts match the document", async () => {
    const doc = (await call(`${setup.gw.url}/openapi.json`)).body;
    const ajv = new Ajv2020({ strict: false });
    addFormats.default(ajv);
    const { key } = await signUp(setup.gw.url);
    const answers = {
      "/api/v1/credits/purchase": (await buy(key, "/api/v1/credits/purchase", { pack: "1k" })).res,
      "/api/v1/plans/purchase": await buyWithV2(key, "/api/v1/plans/purchase", { plan: "starter" }),
    };
    const networks: string[] = [];
    for (const [path, res] of Object.entries(answers)) {
      const operation = doc.paths[path].post;
      expect(res.status, path).toBe(201);
      const success = operation.responses["201"];
      const body = ajv.compile(success.content["application/json"].schema);
      expect(body(res.body), `${path} ${JSON.stringify(body.errors)}`).toBe(true);
      // The payment headers it reads are parameters; the receipt headers are the answer's.
      expect(
        operation.parameters
          .filter((p: { in: string }) => p.in === "header")
          .map((p: any) => p.name),
      ).toEqual(["X-PAYMENT", "PAYMENT-SIGNATURE"]);
      for (const name of ["PAYMENT-RESPONSE", "X-PAYMENT-RESPONSE"]) {
        const header = success.headers[name];
        expect(header, `${path} ${name}`).toBeDefined();
        expect(header.schema).toMatchObject({
          type: "string",
          contentEncoding: "base64",
          contentMediaType: "application/json",
        });
        const sent = res.headers.get(name);
        expect(sent, `${path} ${name}`).toMatch(/^[A-Za-z0-9+/]+=*$/);
        const receipt = JSON.parse(Buffer.from(sent!, "base64").toString());
        const valid = ajv.compile(header.schema.contentSchema);
        expect(valid(receipt), `${path} ${name} ${JSON.stringify(valid.errors)}`).toBe(true);
        expect(receipt.transaction).toBe(res.body.transaction);
        expect(receipt.payer.toLowerCase()).toBe(PAYER.address.toLowerCase());
        networks.push(receipt.network);
      }
    }
    // v1 names the network, v2 gives its CAIP-2 id: both as the document says.
    expect(networks).toEqual(["base-sepolia", "base-sepolia", "eip155:84532", "eip155:84532"]);
  });
});

describe("buying with x402", () => {
  it("a credit pack adds its credits to the keyed account, with payment.received", async () => {
    const { key, accountId } = await signUp(setup.gw.url);
    const before = await balanceOf(setup.chains.base, PAY_TO);
    const { res, price } = await buy(key, "/api/v1/credits/purchase", { pack: "1k" });
    expect(price).toBe(2_000_000n); // 1,000 credits at $0.002
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      credits_added: 1000,
      account: { id: accountId, credits: 1025 },
      network: "base-sepolia",
    });
    expect(res.headers.get("x-payment-response")).toBeTruthy();
    expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(before + price);
    const event = (await eventsOf(setup.gw.services.store, accountId, 2)).find(
      (e) => e.event === "payment.received",
    );
    expect(event?.data).toMatchObject({
      type: "one_time",
      credits_added: 1000,
      amount_usd: "2.00",
      plan: null,
      agent_id: accountId,
      payment_session_id: expect.any(String),
    });
  });

  it("a plan sets the tier for a period with its credits; a renewal extends it; unpaid, it falls back to Free", async () => {
    const { key, accountId } = await signUp(setup.gw.url);
    const first = await buy(key, "/api/v1/plans/purchase", { plan: "starter" });
    expect(first.price).toBe(19_000_000n);
    expect(first.res.body).toMatchObject({
      type: "subscription",
      plan: "starter",
      credits_added: 10_000,
      account: { tier: "starter", credits: 10_025 },
    });
    const firstEnd = Date.parse(first.res.body.plan_expires_at);
    const renewal = await buy(key, "/api/v1/plans/purchase", { plan: "starter" });
    expect(renewal.res.body).toMatchObject({
      type: "renewal",
      account: { tier: "starter", credits: 20_025 },
    });
    expect(Date.parse(renewal.res.body.plan_expires_at)).toBe(firstEnd + PERIOD_S * 1000);
    const payments = (await eventsOf(setup.gw.services.store, accountId, 3))
      .filter((e) => e.event === "payment.received")
      .map((e) => e.data);
    expect(payments).toMatchObject([
      { type: "subscription", plan: "starter", credits_added: 10_000, amount_usd: "19.00" },
      { type: "renewal", plan: "starter", credits_added: 10_000, amount_usd: "19.00" },
    ]);
    expect(
      (await call(`${setup.gw.url}/api/v1/account`, { key })).headers.get("ratelimit-limit"),
    ).toBe("300");
    await new Promise((r) =>
      setTimeout(r, Date.parse(renewal.res.body.plan_expires_at) - Date.now() + 100),
    );
    const after = await call(`${setup.gw.url}/api/v1/account`, { key });
    expect(after.body).toMatchObject({ tier: "free", plan_expires_at: null, credits: 20_025 });
    expect(after.headers.get("ratelimit-limit")).toBe("60");
  }, 20_000);

  /** A payment header for `price`, signed but not yet sent. */
  const payment = async (price: bigint) =>
    v1Header(
      "base-sepolia",
      await signAuthorization({ account: PAYER, chain: setup.chains.base, value: price }),
    );
  /** Asks for a plan, with `paid` (a payment header) or without a payment. */
  const askPlan = (key: string, plan: string, paid?: string) =>
    call(`${setup.gw.url}/api/v1/plans/purchase`, {
      key,
      body: { plan },
      headers: paid ? { "x-payment": paid } : {},
    });

  it("labels plans bought at once by what each did: one subscription, then renewals, in the answers and the events", async () => {
    const { key, accountId } = await signUp(setup.gw.url);
    const headers = await Promise.all([1, 2, 3].map(() => payment(49_000_000n)));
    const answers = await Promise.all(headers.map((h) => askPlan(key, "pro", h)));
    expect(answers.map((r) => r.status)).toEqual([201, 201, 201]);
    expect(answers.map((r) => r.body.type).sort()).toEqual(["renewal", "renewal", "subscription"]);
    const types = (await eventsOf(setup.gw.services.store, accountId, 4))
      .filter((e) => e.event === "payment.received")
      .map((e) => (e.data as { type: string }).type);
    expect(types.sort()).toEqual(["renewal", "renewal", "subscription"]);
  });

  it("refuses a key with account controls a plan, before any payment; it still buys credits", async () => {
    const { key } = await signUp(setup.gw.url);
    const limited = (
      await call(`${setup.gw.url}/api/v1/keys`, {
        key,
        body: { budget: { credits: 10, period: "day" } },
      })
    ).body;
    const before = await balanceOf(setup.chains.base, PAY_TO);
    for (const paid of [undefined, await payment(19_000_000n)]) {
      const res = await askPlan(limited.key, "starter", paid);
      expect([res.status, res.body.error.code]).toEqual([403, "unrestricted_key_required"]);
    }
    expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(before);
    expect((await call(`${setup.gw.url}/api/v1/account`, { key })).body.tier).toBe("free");
    expect((await buy(limited.key, "/api/v1/credits/purchase", { pack: "1k" })).res.status).toBe(
      201,
    );
  });

  it("refuses before any payment a plan that would lower the tier or end one held without an end date (409 plan_not_purchasable); an upgrade is sold", async () => {
    const url = setup.gw.url;
    const onTier = async (tier: string) => {
      const account = await signUp(url);
      await admin(url, `/accounts/${account.accountId}/tier`, { method: "PUT", body: { tier } });
      return account;
    };
    const pro = await onTier("pro");
    const business = await onTier("business");
    const before = await balanceOf(setup.chains.base, PAY_TO);
    for (const [key, plan, why] of [
      [pro.key, "pro", "without an end date"],
      [pro.key, "starter", "higher"],
      [business.key, "starter", "higher"],
    ] as const) {
      for (const paid of [undefined, await payment(49_000_000n)]) {
        const res = await askPlan(key, plan, paid);
        expect([res.status, res.body.error.code]).toEqual([409, "plan_not_purchasable"]);
        expect(res.body.error.message).toContain(why);
      }
    }
    expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(before);
    expect((await call(`${url}/api/v1/account`, { key: pro.key })).body).toMatchObject({
      tier: "pro",
      plan_expires_at: null,
    });
    const starter = await signUp(url);
    await buy(starter.key, "/api/v1/plans/purchase", { plan: "starter" });
    const upgrade = await buy(starter.key, "/api/v1/plans/purchase", { plan: "pro" });
    expect(upgrade.res.body).toMatchObject({ type: "subscription", account: { tier: "pro" } });
  });

  it("refuses a v2 pack payment that names the plans' resource: 402 with the offer again, nothing settled or credited", async () => {
    const { key, accountId } = await signUp(setup.gw.url);
    const { offer, accepted, payload } = await signedV2Offer(key, "/api/v1/credits/purchase", {
      pack: "1k",
    });
    const planUrl = offer.resource.url.replace("/credits/purchase", "/plans/purchase");
    const header = Buffer.from(
      JSON.stringify({
        x402Version: 2,
        accepted,
        payload,
        resource: { ...offer.resource, url: planUrl },
      }),
    ).toString("base64");
    const balanceBefore = (await setup.gw.services.store.getAccount(accountId))!.balance;
    const payToBefore = await balanceOf(setup.chains.base, PAY_TO);
    const res = await call(`${setup.gw.url}/api/v1/credits/purchase`, {
      key,
      body: { pack: "1k" },
      headers: { "payment-signature": header },
    });
    expect([res.status, res.body.error.code]).toEqual([402, "payment_invalid"]);
    expect(res.body.error.reason).toContain(planUrl);
    expect(res.headers.get("payment-required")).toBeTruthy();
    expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(payToBefore);
    expect((await setup.gw.services.store.getAccount(accountId))!.balance).toBe(balanceBefore);
  });

  it("refuses an unknown pack or plan before any payment", async () => {
    const { key } = await signUp(setup.gw.url);
    expect(
      (await call(`${setup.gw.url}/api/v1/credits/purchase`, { key, body: { pack: "1m" } })).body
        .error,
    ).toMatchObject({ code: "validation_failed", param: "pack" });
    expect(
      (await call(`${setup.gw.url}/api/v1/plans/purchase`, { key, body: { plan: "business" } }))
        .body.error,
    ).toMatchObject({ code: "validation_failed", param: "plan" });
  });
});

describe("sign-in with wallet", () => {
  const challenge = (address: string) =>
    call(`${setup.gw.url}/api/v1/wallet/challenge`, { body: { address, chain_id: 84532 } });

  it("gives a paying wallet an API key to its account, once per challenge", async () => {
    const wallet = PAYER;
    // The wallet pays for a call first: its account holds the refund-able credits of that payment.
    const header = v1Header(
      "base-sepolia",
      await signAuthorization({ account: wallet, chain: setup.chains.base, value: 2000n }),
    );
    expect(
      (
        await call(`${setup.gw.url}/v1/tools/hash`, {
          method: "POST",
          body: { text: "x" },
          headers: { "x-payment": header },
        })
      ).status,
    ).toBe(200);
    const { message } = (await challenge(wallet.address)).body;
    expect(message).toContain(wallet.address);
    const signature = await wallet.signMessage({ message });
    const claimed = await call(`${setup.gw.url}/api/v1/wallet/claim`, {
      body: { message, signature },
    });
    expect(claimed.status).toBe(201);
    const me = await call(`${setup.gw.url}/api/v1/account`, { key: claimed.body.api_key });
    expect(me.body).toMatchObject({ id: claimed.body.account_id, email: null });
    const usage = await call(`${setup.gw.url}/api/v1/usage`, { key: claimed.body.api_key });
    expect(usage.body.data.map((e: { kind: string }) => e.kind)).toEqual([
      "debit",
      "purchase",
      "grant",
    ]);
    const again = await call(`${setup.gw.url}/api/v1/wallet/claim`, {
      body: { message, signature },
    });
    expect([again.status, again.body.error.code]).toEqual([400, "invalid_token"]);
  });

  it("gives each challenge a nonce nobody can guess from the ones before it", async () => {
    const nonces: string[] = [];
    for (let i = 0; i < 8; i++) {
      const { message } = (await challenge(anvilAccount(5).address)).body;
      nonces.push(/^Nonce: (\w+)$/m.exec(message)![1]!);
    }
    expect(new Set(nonces).size).toBe(nonces.length);
    // No two share a run of 12 characters: viem's generateSiweNonce slid one window along one
    // Math.random buffer, so each nonce was the one before it shifted by a character.
    for (let a = 0; a < nonces.length; a++)
      for (let b = 0; b < nonces.length; b++)
        if (a !== b) expect(nonces[b]).not.toContain(nonces[a]!.slice(1, 13));
    for (const nonce of nonces) expect(nonce).toMatch(/^[0-9a-z]{32}$/);
  });

  it("issues a wallet's claimed keys within the account's key cap, as POST /api/v1/keys does", async () => {
    const wallet = anvilAccount(5);
    const claim = async () => {
      const { message } = (await challenge(wallet.address)).body;
      return call(`${setup.gw.url}/api/v1/wallet/claim`, {
        body: { message, signature: await wallet.signMessage({ message }) },
      });
    };
    const [first, second] = [await claim(), await claim()];
    expect([first.status, second.status]).toEqual([201, 201]);
    const third = await claim();
    expect([third.status, third.body.error.code, third.body.error.message]).toEqual([
      422,
      "validation_failed",
      expect.stringContaining("At most 2 active API keys per account"),
    ]);
    const revoked = await call(`${setup.gw.url}/api/v1/keys/${first.body.key.id}`, {
      method: "DELETE",
      key: second.body.api_key,
    });
    expect(revoked.status).toBe(200);
    expect((await claim()).status).toBe(201);
  });

  it("refuses another signer and a tampered message", async () => {
    const wallet = anvilAccount(3);
    const { message } = (await challenge(wallet.address)).body;
    const forged = await anvilAccount(4).signMessage({ message });
    expect(
      (await call(`${setup.gw.url}/api/v1/wallet/claim`, { body: { message, signature: forged } }))
        .body.error.code,
    ).toBe("invalid_token");
    const signature = await wallet.signMessage({ message });
    const tampered = message.replace("Chain ID: 84532", "Chain ID: 1");
    expect(
      (
        await call(`${setup.gw.url}/api/v1/wallet/claim`, {
          body: { message: tampered, signature },
        })
      ).body.error.code,
    ).toBe("invalid_token");
    // The honest claim still works: a failed attempt does not burn the challenge.
    expect(
      (await call(`${setup.gw.url}/api/v1/wallet/claim`, { body: { message, signature } })).status,
    ).toBe(201);
  });

  it("binds a challenge to its address, and requires this gateway's uri and an expiry", async () => {
    const victim = anvilAccount(3);
    const thief = anvilAccount(4);
    const { message } = (await challenge(victim.address)).body as { message: string };
    const claim = async (text: string, signer = thief) =>
      call(`${setup.gw.url}/api/v1/wallet/claim`, {
        body: { message: text, signature: await signer.signMessage({ message: text }) },
      });
    // The thief signs the victim's challenge (its nonce) as itself.
    const stolenNonce = await claim(message.replace(victim.address, thief.address));
    expect([stolenNonce.status, stolenNonce.body.error.code]).toEqual([400, "invalid_token"]);
    const own = (await challenge(thief.address)).body.message as string;
    const otherUri = await claim(own.replace(/^URI: .*$/m, "URI: https://evil.example"));
    expect([otherUri.status, otherUri.body.error.message]).toEqual([
      400,
      expect.stringContaining("uri"),
    ]);
    const noExpiry = await claim(own.replace(/\nExpiration Time: [^\n]*/, ""));
    expect([noExpiry.status, noExpiry.body.error.message]).toEqual([
      400,
      expect.stringContaining("expiration"),
    ]);
    expect((await claim(own)).status).toBe(201);
  });
});
