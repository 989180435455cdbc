import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { randomWallet } from "../../chain-fixtures/chain.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { call, startGateway, type TestGateway } from "../helpers/gateway.js";
import {
  PAY_TO,
  authorizationUsed,
  balanceOf,
  signAuthorization,
  startChains,
  v1Header,
} from "../helpers/x402.js";

/**
 * Two RPC URLs (viem's fallback transport): the first takes the settlement into the node's pool
 * but its answer never comes back; the second refuses the same bytes as "transaction
 * underpriced" (a node with a higher minimum price), which reads as the relayers' own refusal.
 * The money moved all the same: the payment must not be released as unsent, but credited once.
 */
const PRICE = 2000n;
const PAYER = randomWallet(77_002);
let chains: Awaited<ReturnType<typeof startChains>>;
let gw: TestGateway;
const servers: Server[] = [];
const lost: (() => void)[] = [];

/** A JSON-RPC proxy to `upstream` whose sends are taken and never answered, or refused. */
async function rpcProxy(upstream: string, sends: "lose the answer" | "refuse") {
  const server = createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    const message = JSON.parse(body);
    const answer = (value: unknown) => {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(value));
    };
    const error = (code: number, text: string) =>
      answer({ jsonrpc: "2.0", id: message.id, error: { code, message: text } });
    if (message.method === "eth_sendRawTransactionSync")
      return error(-32601, "the method eth_sendRawTransactionSync does not exist/is not available");
    if (message.method === "eth_sendRawTransaction") {
      if (sends === "refuse") return error(-32000, "transaction underpriced");
      await fetch(upstream, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      lost.push(() => res.destroy());
      return;
    }
    const upstreamAnswer = await fetch(upstream, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    res.setHeader("content-type", "application/json");
    res.end(await upstreamAnswer.text());
  });
  servers.push(server);
  await new Promise<void>((ready) => server.listen(0, "127.0.0.1", ready));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  chains = await startChains([PAYER.address]);
  const losing = await rpcProxy(chains.base.rpcUrl, "lose the answer");
  const refusing = await rpcProxy(chains.base.rpcUrl, "refuse");
  gw = await startGateway({
    env: {
      ...chains.env,
      BASE_SEPOLIA_RPC_URL: `${losing},${refusing}`,
      X402_RPC_TIMEOUT_MS: "1500",
      X402_RECEIPT_TIMEOUT_MS: "3000",
    },
  });
}, 90_000);
afterAll(async () => {
  await gw?.stop();
  for (const close of lost) close();
  for (const server of servers) server.close();
  await chains?.stop();
});

it("credits a payment whose send one RPC took and the next refused as underpriced: never released as unsent", async () => {
  const before = await balanceOf(chains.base, PAY_TO);
  const payment = await signAuthorization({ account: PAYER, chain: chains.base, value: PRICE });
  const headers = { "x-payment": v1Header("base-sepolia", payment) };
  const first = await call(`${gw.url}/v1/tools/hash`, {
    method: "POST",
    body: { text: "x" },
    headers,
  });
  expect([first.status, first.body.error?.code]).not.toEqual([503, "chain_unavailable"]);
  expect(await authorizationUsed(chains.base, PAYER.address, payment.authorization.nonce)).toBe(
    true,
  );
  expect(await balanceOf(chains.base, PAY_TO)).toBe(before + PRICE);
  // Credited once (by this request or by the reconciler), and the same payment then served.
  const purchases = async () =>
    (await gw.services.store.ledger(walletAccountId(PAYER.address), { limit: 100 })).items.filter(
      (e) => e.kind === "purchase",
    ).length;
  await expect.poll(purchases, { timeout: 20_000 }).toBe(1);
  const again = await call(`${gw.url}/v1/tools/hash`, {
    method: "POST",
    body: { text: "x" },
    headers,
  });
  expect(again.status).toBe(200);
  expect(await purchases()).toBe(1);
}, 60_000);
