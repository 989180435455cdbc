import { createServer } from "node:net";
import { validateDiscoveryExtension } from "@x402/extensions/bazaar";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import type { RedisStore } from "../../src/store/redis.js";
import { call, type GatewayProcess } from "../helpers/gateway.js";
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
 * What a real network asks of the gateway, on a real gateway process, a real anvil chain and the
 * project's EIP-3009 token: an RPC URL that is down (a second one takes over), an RPC that caps
 * eth_getLogs at 1,000 blocks (as hosted providers do) while the chain moves on, and the
 * discovery documents facilitator catalogues read.
 */
const PRICE = 2000n;
let chains: Awaited<ReturnType<typeof startChains>>;
let proxy: Awaited<ReturnType<typeof startRpcProxy>>;
let paid: Awaited<ReturnType<typeof spawnPaidGateway>>;
let gw: GatewayProcess;
let store: RedisStore;

/** A URL where nothing listens: a port bound for a moment, then closed. */
async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

beforeAll(async () => {
  chains = await startChains([]);
  proxy = await startRpcProxy(chains.base.rpcUrl, { maxLogRange: 1000 });
  // The first of the two base-sepolia RPC URLs is dead for the whole file.
  paid = await spawnPaidGateway("x402networks", chains.env, {
    BASE_SEPOLIA_RPC_URL: `${await deadUrl()},${proxy.url}`,
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

const decode = (header: string | null) =>
  JSON.parse(Buffer.from(header ?? "", "base64").toString("utf8"));
const hashCall = (headers: Record<string, string>, text = "x") =>
  call(`${gw.url}/v1/tools/hash`, { method: "POST", body: { text }, headers });
const ledgerOf = (accountId: string) => ledgerKinds(store, accountId);
const funded = (seed: number) => fundedWallet(chains.base, seed);

describe("discovery", () => {
  it("the v2 402 carries the bazaar extension (the tool's input example and schema; its output schema in /.well-known/x402) and advertises payment-identifier", async () => {
    const required = decode((await hashCall({})).headers.get("payment-required"));
    const { bazaar, "payment-identifier": paymentIdentifier } = required.extensions;
    expect(validateDiscoveryExtension(bazaar)).toEqual({ valid: true });
    expect(bazaar.info.input).toMatchObject({
      type: "http",
      method: "POST",
      bodyType: "json",
      body: { text: expect.any(String) },
    });
    expect(bazaar.schema.properties.input.properties.body.properties.text).toMatchObject({
      type: "string",
    });
    // With two networks, hash's offer and its output schema would be over the header's budget:
    // the output schema is in /.well-known/x402 (and GET /v1/tools/hash).
    expect(bazaar.info.output).toEqual({ type: "json" });
    const doc = (await call(`${gw.url}/.well-known/x402`)).body;
    const entry = doc.resources.find((r: { resource: string }) => r.resource.endsWith("/hash"));
    expect(
      entry.extensions.bazaar.schema.properties.output.properties.example.properties.digest,
    ).toMatchObject({ type: "string" });
    expect(paymentIdentifier).toMatchObject({ info: { required: false } });
  });

  it("GET /.well-known/x402 lists every paid resource that can run, with its price and networks", async () => {
    const doc = (await call(`${gw.url}/.well-known/x402`)).body;
    const tools = (
      (await call(`${gw.url}/v1/tools`)).body.data as {
        name: string;
        available: boolean;
        price: { usdc_atomic: string };
      }[]
    ).filter((tool) => tool.available);
    expect(doc).toMatchObject({
      x402Version: 2,
      payTo: PAY_TO,
      networks: ["base-sepolia", "eip155:84532", "polygon-amoy", "eip155:80002"],
    });
    for (const tool of tools) {
      const entry = doc.resources.find((r: { resource: string }) =>
        r.resource.endsWith(`/v1/tools/${tool.name}`),
      );
      expect(entry).toMatchObject({
        method: "POST",
        requires_api_key: false,
        price: { usdc_atomic: tool.price.usdc_atomic },
      });
      expect(
        entry.accepts.map((a: { network: string; amount: string }) => [a.network, a.amount]),
      ).toEqual([
        ["eip155:84532", tool.price.usdc_atomic],
        ["eip155:80002", tool.price.usdc_atomic],
      ]);
    }
    expect(
      doc.resources
        .filter((r: { requires_api_key: boolean }) => r.requires_api_key)
        .map((r: { body: unknown }) => r.body),
    ).toEqual([
      { pack: "1k" },
      { pack: "5k" },
      { pack: "25k" },
      { plan: "starter" },
      { plan: "pro" },
    ]);
  });
});

describe("several RPC URLs per network", () => {
  it("with the first of two URLs dead, payments still verify and settle (v2 with a payment-identifier, retried under a new authorization: one call, one settlement)", async () => {
    const payer = await funded(41_001);
    const [accepted] = decode((await hashCall({})).headers.get("payment-required")).accepts;
    const header = async () => {
      const payload = await signAuthorization({ account: payer, chain: chains.base, value: PRICE });
      const body = {
        x402Version: 2,
        accepted,
        payload,
        extensions: {
          "payment-identifier": { info: { required: false, id: "pay_0123456789abcdef" } },
        },
      };
      return { "payment-signature": Buffer.from(JSON.stringify(body)).toString("base64") };
    };
    const before = await balanceOf(chains.base, PAY_TO);
    const first = await hashCall(await header(), "named");
    expect(first.status).toBe(200);
    expect(decode(first.headers.get("payment-response"))).toMatchObject({
      success: true,
      network: "eip155:84532",
    });
    expect(await balanceOf(chains.base, PAY_TO)).toBe(before + PRICE);
    // The client lost the answer and paid again under the same payment identifier: the answer is replayed.
    const again = await hashCall(await header(), "named");
    expect([again.status, again.headers.get("idempotent-replayed"), again.body]).toEqual([
      200,
      "true",
      first.body,
    ]);
    expect(await balanceOf(chains.base, PAY_TO)).toBe(before + PRICE); // the second authorization was not settled
    const debits = (await ledgerOf(walletAccountId(payer.address))).filter(
      ([kind]) => kind === "debit",
    );
    expect(debits).toHaveLength(1);
  }, 40_000);
});

describe("reconciling on a chain that moved on", () => {
  it("a settlement left pending while the chain advances 5,000 blocks is found with eth_getLogs capped at 1,000 blocks and credited once", async () => {
    const payer = await funded(41_002);
    const header = {
      "x-payment": v1Header(
        "base-sepolia",
        await signAuthorization({ account: payer, chain: chains.base, value: PRICE }),
      ),
    };
    proxy.silenceAfterNextSend();
    const first = await hashCall(header, "pending");
    expect([first.status, first.body.error.code]).toEqual([503, "payment_pending"]);
    await fetch(chains.base.rpcUrl, {
      signal: AbortSignal.timeout(200_000),
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "anvil_mine", params: ["0x1388"] }),
    });
    proxy.resume();
    const accountId = walletAccountId(payer.address);
    const deadline = Date.now() + 30_000;
    while ((await store.getAccount(accountId))?.balance !== 1 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 200));
    expect((await store.getAccount(accountId))?.balance).toBe(1);
    expect(proxy.logQueries.answered).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 1500)); // another reconciler tick must not credit it again
    expect(await ledgerOf(accountId)).toEqual([
      ["purchase", 1],
      ["grant", 0],
    ]);
    const retry = await hashCall(header, "pending");
    expect(retry.status).toBe(200);
  }, 240_000); // anvil mines 5,000 blocks in 40-80 s on a loaded 2-core machine
});
