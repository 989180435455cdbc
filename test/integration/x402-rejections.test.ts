import { parseSignature, serializeSignature, toHex, type Hex } from "viem";
import { describe, expect, it } from "vitest";
import { anvilAccount, randomWallet } from "../../chain-fixtures/chain.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { call } from "../helpers/gateway.js";
import {
  PAY_TO,
  balanceOf,
  paidGatewayFixture,
  authorizationUsed,
  signAuthorization,
  useOnChain,
  v1Header,
  v2Header,
} from "../helpers/x402.js";

/** Every refused payment leaves nothing settled and nothing credited. */
const PRICE = 2000n;
const PAYER = anvilAccount(3);
const OTHER = anvilAccount(4);
// Behind a proxy on loopback: a test may name its own client address (X-Forwarded-For).
const setup = paidGatewayFixture({
  fund: [PAYER.address, OTHER.address],
  env: { TRUST_PROXY: "loopback" },
});

const pay = (header: Record<string, string>) =>
  call(`${setup.gw.url}/v1/tools/hash`, { method: "POST", body: { text: "x" }, headers: header });
const offeredV2 = async () =>
  JSON.parse(Buffer.from((await pay({})).headers.get("payment-required")!, "base64").toString())
    .accepts as Record<string, unknown>[];

async function expectNothingMoved<Answer extends { status: number; body: any }>(
  run: () => Promise<Answer>,
  status: number,
  code: string,
) {
  const before = await balanceOf(setup.chains.base, PAY_TO);
  const res = await run();
  expect([res.status, res.body.error?.code]).toEqual([status, code]);
  expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(before);
  expect(
    await setup.gw.services.store
      .getAccount(walletAccountId(PAYER.address))
      .then((a) => a?.balance ?? 0),
  ).toBe(0);
  return res;
}

describe("refused payments", () => {
  const now = () => BigInt(Math.floor(Date.now() / 1000));
  it.each([
    ["a forged signature", () => ({ signer: OTHER })],
    ["the wrong recipient", () => ({ to: OTHER.address })],
    ["too little", () => ({ value: PRICE - 1n })],
    ["too much", () => ({ value: PRICE + 1n })],
    [
      "the wrong asset",
      () => ({
        domain: { verifyingContract: "0x0000000000000000000000000000000000000bad" as const },
      }),
    ],
    ["the wrong chain", () => ({ domain: { chainId: 8453 } })],
    ["an expired authorization", () => ({ validBefore: now() - 1n })],
    ["one that expires before it can settle", () => ({ validBefore: now() + 2n })],
    ["a not-yet-valid authorization", () => ({ validAfter: now() + 3600n })],
  ])("refuses %s (v1), with the offer again", async (_name, change) => {
    const { value, ...rest } = change() as { value?: bigint };
    const payload = await signAuthorization({
      account: PAYER,
      chain: setup.chains.base,
      value: value ?? PRICE,
      ...rest,
    });
    const res = await expectNothingMoved(
      () => pay({ "x-payment": v1Header("base-sepolia", payload) }),
      402,
      "payment_invalid",
    );
    expect(res.body.accepts).toHaveLength(2);
    expect(res.body.error.reason).toEqual(expect.any(String));
  });

  it("a forged signature from a wallet never seen before is refused as such, and opens no account for it", async () => {
    // The chain's simulation proves a new payment's signature (the off-chain check runs only on a
    // refusal): nothing about the claimed payer may be made before that proof.
    const stranger = randomWallet(7331);
    await setup.chains.base.fund(stranger.address, 10_000n);
    const payload = await signAuthorization({
      account: stranger,
      chain: setup.chains.base,
      value: PRICE,
      signer: OTHER,
    });
    const before = await balanceOf(setup.chains.base, PAY_TO);
    const res = await pay({ "x-payment": v1Header("base-sepolia", payload) });
    expect([res.status, res.body.error?.code]).toEqual([402, "payment_invalid"]);
    expect(res.body.error.reason).toMatch(/signature does not match/);
    expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(before);
    expect(await setup.gw.services.store.getAccount(walletAccountId(stranger.address))).toBeNull();
  });

  it("refuses a network that is not enabled, and a malformed header", async () => {
    const payload = await signAuthorization({
      account: PAYER,
      chain: setup.chains.base,
      value: PRICE,
    });
    await expectNothingMoved(
      () => pay({ "x-payment": v1Header("base", payload) }),
      402,
      "payment_invalid",
    );
    await expectNothingMoved(() => pay({ "x-payment": "not base64 json" }), 402, "payment_invalid");
  });

  it("refuses a v2 payment whose accepted requirement was not offered (other asset, amount or chain)", async () => {
    const [offered] = await offeredV2();
    const payload = await signAuthorization({
      account: PAYER,
      chain: setup.chains.base,
      value: PRICE,
    });
    for (const accepted of [
      { ...offered, asset: "0x0000000000000000000000000000000000000bad" },
      { ...offered, amount: "1" },
      { ...offered, network: "eip155:8453" },
      { ...offered, payTo: OTHER.address },
    ]) {
      await expectNothingMoved(
        () => pay({ "payment-signature": v2Header(accepted, payload) }),
        402,
        "payment_invalid",
      );
    }
  });

  it("refuses a v2 payment that names another resource (another tool at the same price, another site), and settles nothing", async () => {
    const offerOf = async (tool: string) =>
      JSON.parse(
        Buffer.from(
          (
            await call(`${setup.gw.url}/v1/tools/${tool}`, { method: "POST", body: { text: "x" } })
          ).headers.get("payment-required")!,
          "base64",
        ).toString(),
      );
    const hash = await offerOf("hash");
    const qr = await offerOf("qr-code");
    expect(qr.accepts[0].amount).toBe(hash.accepts[0].amount); // the same price: only the resource differs
    const naming = (url: string, payload: Awaited<ReturnType<typeof signAuthorization>>) =>
      Buffer.from(
        JSON.stringify({
          x402Version: 2,
          accepted: hash.accepts[0],
          payload,
          resource: { ...hash.resource, url },
        }),
      ).toString("base64");
    const payload = await signAuthorization({
      account: PAYER,
      chain: setup.chains.base,
      value: PRICE,
    });
    const refused = await expectNothingMoved(
      () =>
        call(`${setup.gw.url}/v1/tools/qr-code`, {
          method: "POST",
          body: { text: "x" },
          headers: { "payment-signature": naming(hash.resource.url, payload) },
        }),
      402,
      "payment_invalid",
    );
    expect(refused.body.error.reason).toContain(hash.resource.url);
    expect(refused.body.accepts).toHaveLength(2);
    expect(refused.headers.get("payment-required")).toBeTruthy();
    const elsewhere = await expectNothingMoved(
      () => pay({ "payment-signature": naming("https://evil.example/x", payload) }),
      402,
      "payment_invalid",
    );
    expect(elsewhere.body.error.reason).toContain("https://evil.example/x");
    expect(
      await authorizationUsed(setup.chains.base, PAYER.address, payload.authorization.nonce),
    ).toBe(false);
    // For the resource it names, the same payment is good.
    const paid = await pay({ "payment-signature": naming(hash.resource.url, payload) });
    expect(paid.status).toBe(200);
  });

  it("refuses a payer whose balance is too low", async () => {
    const poor = randomWallet(777);
    const payload = await signAuthorization({
      account: poor,
      chain: setup.chains.base,
      value: PRICE,
    });
    const res = await pay({ "x-payment": v1Header("base-sepolia", payload) });
    expect([res.status, res.body.error.code, res.body.error.reason]).toEqual([
      402,
      "payment_invalid",
      "the payer's balance is too low",
    ]);
  });

  it("refuses a high-s (malleable) signature", async () => {
    const payload = await signAuthorization({
      account: PAYER,
      chain: setup.chains.base,
      value: PRICE,
    });
    const { r, s, yParity } = parseSignature(payload.signature as Hex);
    const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
    const malleable = serializeSignature({
      r,
      s: toHex(n - BigInt(s), { size: 32 }),
      yParity: yParity === 0 ? 1 : 0,
    });
    const res = await expectNothingMoved(
      () => pay({ "x-payment": v1Header("base-sepolia", { ...payload, signature: malleable }) }),
      402,
      "payment_invalid",
    );
    expect(res.body.error.reason).toContain("high");
  });

  it("refuses an authorization already used on chain", async () => {
    const payload = await signAuthorization({
      account: PAYER,
      chain: setup.chains.base,
      value: PRICE,
    });
    await useOnChain(setup.chains.base, payload);
    const before = await balanceOf(setup.chains.base, PAY_TO);
    const res = await pay({ "x-payment": v1Header("base-sepolia", payload) });
    expect([res.status, res.body.error.code]).toEqual([409, "payment_already_used"]);
    expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(before);
  });
});

describe("accepted forms", () => {
  it("normalises v = 0/1 signatures to 27/28", async () => {
    const payer = anvilAccount(5);
    await setup.chains.base.fund(payer.address, 10_000n);
    const payload = await signAuthorization({
      account: payer,
      chain: setup.chains.base,
      value: PRICE,
    });
    const { r, s, yParity } = parseSignature(payload.signature as Hex);
    const lowV = `${r}${s.slice(2)}${(yParity ?? 0).toString(16).padStart(2, "0")}`;
    const res = await pay({
      "x-payment": v1Header("base-sepolia", { ...payload, signature: lowV }),
    });
    expect(res.status).toBe(200);
  });

  it("accepts a payment from an ERC-1271 smart-contract wallet", async () => {
    const owner = randomWallet(4242);
    const walletAddress = await setup.chains.base.deploySmartWallet(owner.address);
    await setup.chains.base.fund(walletAddress, 10_000n);
    const smartAccount = { ...owner, address: walletAddress } as typeof owner;
    const payload = await signAuthorization({
      account: smartAccount,
      chain: setup.chains.base,
      value: PRICE,
      signer: owner,
    });
    const before = await balanceOf(setup.chains.base, PAY_TO);
    const res = await pay({ "x-payment": v1Header("base-sepolia", payload) });
    expect(res.status).toBe(200);
    expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(before + PRICE);
    expect(await balanceOf(setup.chains.base, walletAddress)).toBe(10_000n - PRICE);
  });
});

describe("refused payments from one client address", () => {
  it("are limited (60 a minute): past it, a keyless payment is 429 before it is checked or settled, and other addresses pay as before", async () => {
    const from = (client: string, header: string) =>
      call(`${setup.gw.url}/v1/tools/hash`, {
        method: "POST",
        body: { text: "flood" },
        headers: { "x-payment": header, "x-forwarded-for": client },
      });
    const client = `10.61.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
    const wrong = v1Header(
      "base-sepolia",
      await signAuthorization({ account: OTHER, chain: setup.chains.base, value: PRICE - 1n }),
    );
    const refusals = await Promise.all(Array.from({ length: 60 }, () => from(client, wrong)));
    expect(new Set(refusals.map((r) => `${r.status} ${r.body.error.code}`))).toEqual(
      new Set(["402 payment_invalid"]),
    );
    const payment = await signAuthorization({
      account: PAYER,
      chain: setup.chains.base,
      value: PRICE,
    });
    const header = v1Header("base-sepolia", payment);
    const limited = await from(client, header);
    expect([limited.status, limited.body.error.code]).toEqual([429, "rate_limited"]);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(
      await authorizationUsed(setup.chains.base, PAYER.address, payment.authorization.nonce),
    ).toBe(false);
    // The limit is the address's: the same payment from another one is served.
    expect((await from("10.62.0.1", header)).status).toBe(200);
  });
});
