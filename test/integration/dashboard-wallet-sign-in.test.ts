import type { LocalAccount } from "viem";
import { createSiweMessage, parseSiweMessage } from "viem/siwe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anvilAccount, randomWallet } from "../../chain-fixtures/chain.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { call, startGateway, type TestGateway } from "../helpers/gateway.js";
import { paidGatewayFixture } from "../helpers/x402.js";

/**
 * Signing in to the dashboard with a wallet (EIP-4361), at the HTTP level, against a real gateway
 * on Redis with x402 on two anvil chains (84532 and 80002). Each refusal is a 4xx in the one error
 * shape, naming what is wrong; none of them spends the challenge of the honest wallet.
 */
const setup = paidGatewayFixture({
  env: { ENDPOINT_LIMITS: "wallet-challenge=4/60,dashboard-sign-in=4/60" },
  publicUrl: true,
});

let clients = 0;
/** A client address of its own, so each test's requests count in their own limit buckets. */
const client = () => ({ "x-forwarded-for": `198.51.100.${++clients}` });

async function challenge(wallet: LocalAccount, headers: Record<string, string>, chainId = 84532) {
  return call(`${setup.gw.url}/dashboard/sign-in/wallet/challenge`, {
    body: { address: wallet.address, chain_id: chainId },
    headers,
  });
}

async function signIn(message: string, signature: string, headers: Record<string, string>) {
  return call(`${setup.gw.url}/dashboard/sign-in/wallet`, {
    body: { message, signature },
    headers,
  });
}

/** The challenge's message, signed by `wallet`. */
async function signedChallenge(wallet: LocalAccount, headers: Record<string, string>) {
  const res = await challenge(wallet, headers);
  expect(res.status).toBe(200);
  const message = res.body.message as string;
  return { message, signature: await wallet.signMessage({ message }) };
}

const sessionCookieOf = (res: { headers: Headers }) =>
  /tg_session=([^;]+)/.exec(res.headers.get("set-cookie") ?? "")?.[1];

function expectError(res: { status: number; body: any }, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.body).toEqual({
    error: expect.objectContaining({
      code,
      message: expect.any(String),
      request_id: expect.any(String),
    }),
  });
}

describe("wallet sign-in to the dashboard", () => {
  it("opens a session for the wallet's own account; the same message works once", async () => {
    const wallet = anvilAccount(5);
    const headers = client();
    const { message, signature } = await signedChallenge(wallet, headers);
    expect(parseSiweMessage(message)).toMatchObject({
      domain: new URL(setup.gw.url).host,
      uri: new URL(setup.gw.url).origin,
      chainId: 84532,
      address: wallet.address,
    });
    const res = await signIn(message, signature, headers);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      account_id: walletAccountId(wallet.address),
      redirect: "/dashboard",
    });
    const cookie = sessionCookieOf(res);
    expect(res.headers.get("set-cookie")).toMatch(/HttpOnly/i);
    const me = await call(`${setup.gw.url}/dashboard/api/v1/account`, {
      headers: { cookie: `tg_session=${cookie}` },
    });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: walletAccountId(wallet.address), email: null });

    const replayed = await signIn(message, signature, headers);
    expectError(replayed, 400, "invalid_token");
    expect(replayed.body.error.message).toContain("already used");
    expect(sessionCookieOf(replayed)).toBeUndefined();
  });

  it("refuses a signature by another key, without spending the wallet's challenge", async () => {
    const wallet = anvilAccount(6);
    const headers = client();
    const { message, signature } = await signedChallenge(wallet, headers);
    const forged = await anvilAccount(7).signMessage({ message });
    const res = await signIn(message, forged, headers);
    expectError(res, 400, "invalid_token");
    expect(res.body.error).toMatchObject({ param: "signature" });
    expect(res.body.error.message).toContain("signature is not the wallet's");
    expect((await signIn(message, signature, headers)).status).toBe(200);
  });

  it("signs in a smart-contract wallet (ERC-1271) by asking the chain, and refuses a stranger's signature for it", async () => {
    const owner = randomWallet(1271);
    const smartWallet = await setup.chains.base.deploySmartWallet(owner.address);
    const headers = client();
    const asked = await call(`${setup.gw.url}/dashboard/sign-in/wallet/challenge`, {
      body: { address: smartWallet, chain_id: 84532 },
      headers,
    });
    const message = asked.body.message as string;
    const stranger = await anvilAccount(7).signMessage({ message });
    const refused = await signIn(message, stranger, headers);
    expectError(refused, 400, "invalid_token");
    expect(refused.body.error.param).toBe("signature");
    // The owner's key signs for the wallet; only the wallet contract can say that is valid.
    const res = await signIn(message, await owner.signMessage({ message }), headers);
    expect(res.status).toBe(200);
    expect(res.body.account_id).toBe(walletAccountId(smartWallet));
  });

  it("refuses an expired message, a message for another domain, and a chain that is not one of the gateway's networks", async () => {
    const wallet = anvilAccount(6);
    const headers = client();
    const issued = parseSiweMessage((await challenge(wallet, headers)).body.message);
    const own = { ...issued } as Parameters<typeof createSiweMessage>[0];
    const signed = async (changes: Partial<typeof own>) => {
      const message = createSiweMessage({ ...own, ...changes });
      return signIn(message, await wallet.signMessage({ message }), headers);
    };

    const expired = await signed({
      issuedAt: new Date(Date.now() - 600_000),
      expirationTime: new Date(Date.now() - 60_000),
    });
    expectError(expired, 400, "invalid_token");
    expect(expired.body.error.message).toContain("expired");

    const elsewhere = await signed({ domain: "evil.example", uri: "https://evil.example" });
    expectError(elsewhere, 400, "invalid_token");
    expect(elsewhere.body.error.message).toContain(
      `is for evil.example, not ${new URL(setup.gw.url).host}`,
    );

    const mainnet = await signed({ chainId: 1 });
    expectError(mainnet, 422, "validation_failed");
    expect(mainnet.body.error.message).toContain(
      "Chain id 1 is not one of this gateway's networks (84532, 80002)",
    );

    const askMainnet = await challenge(wallet, client(), 1);
    expectError(askMainnet, 422, "validation_failed");
    expect(askMainnet.body.error.param).toBe("chain_id");

    // None of these spent the challenge: the message as issued still signs in.
    expect((await signed({})).status).toBe(200);
  });

  it("refuses the challenge signed with text added around or between its fields, or under another scheme", async () => {
    const wallet = anvilAccount(6);
    const headers = client();
    const { message } = (await challenge(wallet, headers)).body as { message: string };
    const base = new URL(setup.gw.url);
    const altered = [
      [`${message}\nClaim your airdrop at evil.example`, "text outside"],
      [
        message.replace("\nURI:", "\nThen approve the transfer on the next screen.\nURI:"),
        "text outside",
      ],
      [`https://${message}`, "its scheme is not http"],
    ] as const;
    for (const [text, why] of altered) {
      // A wallet would not recognise these as EIP-4361, but the fields viem reads are unchanged.
      expect(parseSiweMessage(text)).toMatchObject({
        domain: base.host,
        nonce: parseSiweMessage(message).nonce,
      });
      const res = await signIn(text, await wallet.signMessage({ message: text }), headers);
      expectError(res, 400, "invalid_token");
      expect(res.body.error.message).toContain(why);
    }
    // None of them spent the challenge.
    expect((await signIn(message, await wallet.signMessage({ message }), headers)).status).toBe(
      200,
    );
  });

  it("refuses the challenge rebuilt by another library in another form, saying to sign it as issued", async () => {
    const wallet = anvilAccount(6);
    const headers = client();
    const { message } = (await challenge(wallet, headers)).body as { message: string };
    // What the `siwe` package's prepareMessage writes from the same fields: RFC 3339 times
    // without milliseconds. Valid EIP-4361, but not the text the gateway issued.
    const rebuilt = message.replace(/(T\d{2}:\d{2}:\d{2})\.\d{3}Z/g, "$1Z");
    expect(rebuilt).not.toBe(message);
    expect(parseSiweMessage(rebuilt).nonce).toBe(parseSiweMessage(message).nonce);
    const res = await signIn(rebuilt, await wallet.signMessage({ message: rebuilt }), headers);
    expectError(res, 400, "invalid_token");
    expect(res.body.error.message).toBe(
      "The signed sign-in message is not valid: it is not the challenge exactly as issued (Issued At, Expiration Time written differently); sign the message as given, unchanged.",
    );
    // It did not spend the challenge.
    expect((await signIn(message, await wallet.signMessage({ message }), headers)).status).toBe(
      200,
    );
  });

  it("does not take a challenge issued for an API key, nor another address's nonce", async () => {
    const wallet = anvilAccount(5);
    const headers = client();
    const forKey = await call(`${setup.gw.url}/api/v1/wallet/challenge`, {
      body: { address: wallet.address, chain_id: 84532 },
      headers,
    });
    const keyMessage = forKey.body.message as string;
    const res = await signIn(
      keyMessage,
      await wallet.signMessage({ message: keyMessage }),
      headers,
    );
    expectError(res, 400, "invalid_token");
    expect(res.body.error.message).toContain("not this gateway's challenge");

    const thief = anvilAccount(7);
    const { message } = await signedChallenge(wallet, headers);
    const stolen = message.replace(wallet.address, thief.address);
    const theft = await signIn(stolen, await thief.signMessage({ message: stolen }), client());
    expectError(theft, 400, "invalid_token");
    expect(theft.body.error.message).toContain("not issued to this address");
  });

  it("refuses a cross-site post and malformed input, and limits each client address", async () => {
    const wallet = anvilAccount(5);
    const crossSite = await call(`${setup.gw.url}/dashboard/sign-in/wallet/challenge`, {
      body: { address: wallet.address, chain_id: 84532 },
      headers: { ...client(), origin: "https://evil.example" },
    });
    expectError(crossSite, 403, "csrf_failed");
    const badAddress = await call(`${setup.gw.url}/dashboard/sign-in/wallet/challenge`, {
      body: { address: "0x1234", chain_id: 84532 },
      headers: client(),
    });
    expectError(badAddress, 422, "validation_failed");
    expect(badAddress.body.error.param).toBe("address");
    const notHex = await signIn("hello", "zz", client());
    expectError(notHex, 422, "validation_failed");
    expect(notHex.body.error.param).toBe("signature");

    const headers = client();
    for (let i = 0; i < 4; i++) expect((await challenge(wallet, headers)).status).toBe(200);
    const limited = await challenge(wallet, headers);
    expectError(limited, 429, "rate_limited");
    expect(limited.headers.get("retry-after")).toMatch(/^\d+$/);
    for (let i = 0; i < 4; i++) expect((await signIn("x", "0x00", headers)).status).toBe(400);
    expectError(await signIn("x", "0x00", headers), 429, "rate_limited");
  });
});

describe("a gateway without x402", () => {
  let plain: TestGateway;
  beforeAll(async () => {
    plain = await startGateway();
  });
  afterAll(async () => {
    await plain?.stop();
  });

  it("offers no wallet sign-in, and its endpoints say why", async () => {
    const page = await (await fetch(`${plain.url}/dashboard/sign-in`)).text();
    expect(page).toContain("With an API key");
    expect(page).not.toContain("Sign in with a wallet");
    const res = await call(`${plain.url}/dashboard/sign-in/wallet/challenge`, {
      body: { address: anvilAccount(5).address, chain_id: 84532 },
    });
    expectError(res, 501, "payments_not_enabled");
    expect(res.body.error.message).toContain("X402_NETWORKS");
  });
});
