import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { wrapFetchWithPaymentFromConfig } from "@x402/fetch";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anvilAccount } from "../../chain-fixtures/chain.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import {
  call,
  callTool,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";
import { startToolEndpoint } from "../helpers/tool-endpoint.js";
import { PAY_TO, balanceOf, startChains } from "../helpers/x402.js";

/**
 * An operator's upstream tool is paid per call with x402 like a catalogue tool (real anvil chains,
 * the project's EIP-3009 token, the official @x402/fetch client); a Business account's private
 * tool is never offered for payment.
 */
const PAYER = anvilAccount(6);
let chains: Awaited<ReturnType<typeof startChains>>;
let endpoint: Awaited<ReturnType<typeof startToolEndpoint>>;
let gw: TestGateway;

beforeAll(async () => {
  [chains, endpoint] = await Promise.all([
    startChains([PAYER.address]),
    startToolEndpoint("https"),
  ]);
  endpoint.handle("/upper", (body) => ({ json: { upper: String(body.text).toUpperCase() } }));
  endpoint.handle("/broken", () => ({ status: 503, json: {} }));
  const file = join(mkdtempSync(join(tmpdir(), "toolgate-tools-x402-")), "tools.json");
  const tool = (name: string, path: string) => ({
    name,
    description: "Upper-cases a text upstream.",
    url: endpoint.url(path),
    input_schema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    price_credits: 4,
  });
  writeFileSync(
    file,
    JSON.stringify({ tools: [tool("shout", "/upper"), tool("shout-broken", "/broken")] }),
  );
  gw = await startGateway({
    env: { ...chains.env, TOOLS_FILE: file, UPSTREAM_ALLOW_PRIVATE_TARGETS: "1" },
  });
}, 60_000);
afterAll(async () => {
  await gw?.stop();
  await Promise.all([chains?.stop(), endpoint?.stop()]);
});

const paidFetch = () =>
  wrapFetchWithPaymentFromConfig(fetch, {
    schemes: [{ network: "eip155:80002", client: new ExactEvmScheme(PAYER) }],
    spendControls: { allowedAssets: [{ network: "eip155:80002", asset: chains.polygon.usdc }] },
  });
const post = (fetcher: typeof fetch, name: string, body: unknown) =>
  fetcher(`${gw.url}/v1/tools/${name}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

describe("an operator's upstream tool paid with x402", () => {
  it("offers its price (4 credits = 8,000 atomic units) and answers once paid", async () => {
    const challenge = await callTool(gw.url, undefined, "shout", { text: "hi" });
    expect(challenge.status).toBe(402);
    expect(
      challenge.body.accepts.map((a: { maxAmountRequired: string }) => a.maxAmountRequired),
    ).toEqual(["8000", "8000"]);
    const before = await balanceOf(chains.polygon, PAY_TO);
    const res = await post(paidFetch(), "shout", { text: "paid" });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ upper: "PAID" });
    expect(await balanceOf(chains.polygon, PAY_TO)).toBe(before + 8000n);
    const discovery = (await call(`${gw.url}/.well-known/x402`)).body;
    expect(JSON.stringify(discovery)).toContain("/v1/tools/shout");
  }, 30_000);

  it("keeps a failed paid call's money as credits on the wallet's account", async () => {
    const res = await post(paidFetch(), "shout-broken", { text: "x" });
    expect(res.status).toBe(502);
    // The payer is told where its money went and how to use it, not only "not charged".
    const { message } = (await res.json()).error;
    expect(message).toMatch(
      /^The shout-broken tool failed; the endpoint answered HTTP \d+\. The call was not charged\. /,
    );
    expect(message).toMatch(
      / The payment was credited to the paying wallet's account \(4 credits\) and stays there: send this call again with the same payment to run it on those credits without paying again\.$/,
    );
    const ledger = (
      await gw.services.store.ledger(walletAccountId(PAYER.address), { limit: 10 })
    ).items.map((e) => [e.kind, e.amount, e.tool]);
    expect(ledger.slice(0, 3)).toEqual([
      ["refund", 4, "shout-broken"],
      ["debit", -4, "shout-broken"],
      ["purchase", 4, null],
    ]);
  }, 30_000);
});

describe("a private custom tool on a gateway with x402", () => {
  it("is not offered for payment: 404 without a key, and a keyed call short of credits is a plain 402", async () => {
    const { key } = await fundedAccount(gw.url, 25, "business");
    const body = {
      name: "mine",
      description: "Mine.",
      url: endpoint.url("/upper"),
      input_schema: { type: "object" },
      price_credits: 100,
    };
    expect((await call(`${gw.url}/api/v1/custom-tools`, { key, body })).status).toBe(201);
    const keyless = await callTool(gw.url, undefined, "mine", { text: "x" });
    expect([keyless.status, keyless.body.error.code]).toEqual([404, "tool_not_found"]);
    const short = await callTool(gw.url, key, "mine", { text: "x" });
    expect([short.status, short.body.error.code]).toEqual([402, "insufficient_credits"]);
    expect(short.body.accepts).toBeUndefined();
    expect(short.headers.get("payment-required")).toBeNull();
  });
});
