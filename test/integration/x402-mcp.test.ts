import { x402Client } from "@x402/core/client";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { appendPaymentIdentifierToExtensions } from "@x402/extensions/payment-identifier";
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as TransportV2,
} from "@modelcontextprotocol/client";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { anvilAccount, randomWallet } from "../../chain-fixtures/chain.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { fundedAccount } from "../helpers/gateway.js";
import { rpcMessagesOf } from "../helpers/mcp.js";
import {
  PAY_TO,
  authorizationUsed,
  balanceOf,
  fundedWallet,
  paidGatewayFixture,
} from "../helpers/x402.js";

/**
 * x402 over MCP (the x402 MCP transport): an agent with a wallet and no API key lists the tools,
 * is told what a call costs in an `x402/error` result, pays with a payload the official x402
 * client builds, sent in `_meta["x402/payment"]`, and gets the answer with the settlement receipt
 * in `_meta["x402/payment-response"]` — on real anvil chains with the project's EIP-3009 token.
 */
const PRICE = 2000n;
const PAYERS = [1, 2, 3].map(anvilAccount);
const setup = paidGatewayFixture({ fund: PAYERS.map((p) => p.address) });

interface CallResult {
  isError?: boolean;
  content?: { type: string; text: string }[];
  structuredContent?: unknown;
  _meta?: Record<string, unknown>;
}
interface AnyClient {
  listTools(): Promise<{ tools: { name: string }[] }>;
  callTool(params: {
    name: string;
    arguments: Record<string, unknown>;
    _meta?: Record<string, unknown>;
  }): Promise<CallResult>;
  close(): Promise<void>;
}

const CLIENTS: Record<string, (headers: Record<string, string>) => Promise<AnyClient>> = {
  "official v2 client (@modelcontextprotocol/client)": async (headers) => {
    const client = new ClientV2({ name: "toolgate-test", version: "1.0.0" });
    await client.connect(
      new TransportV2(new URL(`${setup.gw.url}/mcp`), { requestInit: { headers } }),
    );
    return client as unknown as AnyClient;
  },
  "official 1.x client (@modelcontextprotocol/sdk)": async (headers) => {
    const client = new ClientV1({ name: "toolgate-test", version: "1.0.0" });
    await client.connect(
      new TransportV1(new URL(`${setup.gw.url}/mcp`), { requestInit: { headers } }),
    );
    return client as unknown as AnyClient;
  },
};

/** The payment-required result: isError, no structuredContent, the x402/error object in content[0].text. */
function paymentRequired(result: CallResult) {
  expect(result.isError).toBe(true);
  expect(result.structuredContent).toBeUndefined();
  const { "x402/error": error } = JSON.parse(result.content![0]!.text);
  expect(error).toMatchObject({
    code: 402,
    message: expect.any(String),
    data: { x402Version: 2, resource: { url: "mcp://tool/hash" } },
  });
  return error.data;
}

/** The official x402 v2 client, paying on the Base test chain with our test token (opted in: it is not canonical USDC). */
const payerClient = (payer: ConstructorParameters<typeof ExactEvmScheme>[0]) =>
  x402Client.fromConfig({
    schemes: [{ network: "eip155:84532", client: new ExactEvmScheme(payer) }],
    spendControls: { allowedAssets: [{ network: "eip155:84532", asset: setup.chains.base.usdc }] },
  });

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

describe.each(Object.keys(CLIENTS).map((name, i) => [name, i] as const))(
  "an agent with a wallet and the %s",
  (name, i) => {
    it("lists tools without a key, pays for a call over MCP, and cannot spend the same payment twice", async () => {
      const payer = PAYERS[i]!;
      const client = await CLIENTS[name]!({});
      try {
        expect((await client.listTools()).tools.map((t) => t.name)).toContain("hash");
        // Arguments the tool refuses are refused as such, not offered for payment: no payer is
        // invited to sign for a call that cannot run.
        const invalid = await client.callTool({ name: "hash", arguments: { text: 5 } });
        expect(invalid.isError).toBe(true);
        expect(JSON.parse(invalid.content![0]!.text)).toMatchObject({
          error: { code: "validation_failed", param: "text" },
        });

        const offer = paymentRequired(
          await client.callTool({ name: "hash", arguments: { text: "mcp" } }),
        );
        expect(
          offer.accepts.map((a: { network: string; amount: string }) => [a.network, a.amount]),
        ).toEqual([
          ["eip155:84532", "2000"],
          ["eip155:80002", "2000"],
        ]);

        const payload = await payerClient(payer).createPaymentPayload(offer);
        const [payerBefore, payToBefore] = [
          await balanceOf(setup.chains.base, payer.address),
          await balanceOf(setup.chains.base, PAY_TO),
        ];
        const paid = await client.callTool({
          name: "hash",
          arguments: { text: "mcp" },
          _meta: { "x402/payment": payload },
        });
        expect(paid.isError).toBeFalsy();
        expect(paid.structuredContent).toMatchObject({ digest: sha256("mcp") });
        const receipt = paid._meta?.["x402/payment-response"] as Record<string, unknown>;
        expect(receipt).toMatchObject({
          success: true,
          network: "eip155:84532",
          payer: payer.address,
          transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
        });
        expect(await balanceOf(setup.chains.base, payer.address)).toBe(payerBefore - PRICE);
        expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(payToBefore + PRICE);

        // The same payment for another call (other arguments) is refused, and nothing moves again.
        const again = await client.callTool({
          name: "hash",
          arguments: { text: "something else" },
          _meta: { "x402/payment": payload },
        });
        expect(again.isError).toBe(true);
        expect(again.structuredContent).toBeUndefined();
        expect(JSON.parse(again.content![0]!.text)).toMatchObject({
          error: { code: "idempotency_conflict", param: "payment" },
        });
        // The same call retried with the same payment (its answer lost, say) is answered again, not charged again.
        const retried = await client.callTool({
          name: "hash",
          arguments: { text: "mcp" },
          _meta: { "x402/payment": payload },
        });
        expect(retried.structuredContent).toEqual(paid.structuredContent);
        // A malformed payment is answered with the offer again, saying what is wrong.
        const malformed = paymentRequired(
          await client.callTool({
            name: "hash",
            arguments: { text: "mcp" },
            _meta: { "x402/payment": { x402Version: 2 } },
          }),
        );
        expect(malformed.details.reason).toEqual(expect.any(String));
        expect(await balanceOf(setup.chains.base, payer.address)).toBe(payerBefore - PRICE);
        expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(payToBefore + PRICE);
        // Settled once, credited once, charged once.
        const ledger = (
          await setup.gw.services.store.ledger(walletAccountId(payer.address), { limit: 100 })
        ).items.map((e) => [e.kind, e.amount]);
        expect(ledger).toEqual([
          ["debit", -1],
          ["purchase", 1],
          ["grant", 0],
        ]);
      } finally {
        await client.close();
      }
    }, 60_000);
  },
);

describe.each(Object.keys(CLIENTS).map((name, i) => [name, i] as const))(
  "an agent naming its payment (x402 payment-identifier) with the %s",
  (name, i) => {
    it("retries under a new authorization: answered from the first call, its authorization left unused; other arguments are refused, unsettled", async () => {
      const payer = await fundedWallet(setup.chains.base, 52_001 + i);
      const client = await CLIENTS[name]!({});
      try {
        const offer = paymentRequired(
          await client.callTool({ name: "hash", arguments: { text: "named" } }),
        );
        // The official client echoes the offer's extensions; the payment identifier is added to them, as its helper does.
        appendPaymentIdentifierToExtensions(offer.extensions, `pay_mcp_named_000${i}`);
        const pay = async (text: string) => {
          const payload = await payerClient(payer).createPaymentPayload(offer);
          const result = await client.callTool({
            name: "hash",
            arguments: { text },
            _meta: { "x402/payment": payload },
          });
          return {
            result,
            nonce: (payload.payload as { authorization: { nonce: string } }).authorization.nonce,
          };
        };
        const first = await pay("named");
        expect(first.result.structuredContent).toMatchObject({ digest: sha256("named") });
        expect(first.result._meta?.["x402/payment-response"]).toMatchObject({
          success: true,
          payer: payer.address,
        });

        const again = await pay("named");
        expect(again.result.isError).toBeFalsy();
        expect([again.result.structuredContent, again.result.content]).toEqual([
          first.result.structuredContent,
          first.result.content,
        ]);
        expect(again.result._meta?.["x402/payment-response"]).toBeUndefined(); // nothing was settled for it

        const other = await pay("other arguments");
        expect(other.result.isError).toBe(true);
        expect(other.result.structuredContent).toBeUndefined();
        expect(JSON.parse(other.result.content![0]!.text)).toMatchObject({
          error: { code: "idempotency_conflict", param: "payment" },
        });

        for (const { nonce } of [again, other])
          expect(await authorizationUsed(setup.chains.base, payer.address, nonce)).toBe(false);
        expect(await balanceOf(setup.chains.base, payer.address)).toBe(1_000_000n - PRICE);
        const ledger = (
          await setup.gw.services.store.ledger(walletAccountId(payer.address), { limit: 100 })
        ).items.map((e) => [e.kind, e.amount]);
        expect(ledger).toEqual([
          ["debit", -1],
          ["purchase", 1],
          ["grant", 0],
        ]);
      } finally {
        await client.close();
      }
    }, 60_000);
  },
);

describe("the README's x402 MCP snippet", () => {
  it("pays for a call as written, against the development chain's test token", async () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    const section = readme.slice(readme.indexOf("### Paying per call over MCP (x402)"));
    const snippet = /```ts\n([\s\S]*?)```/.exec(section)![1]!;
    expect(snippet).toContain('from "@x402/core/client"');
    // Its imports are this file's; `mcp` and `account` are the reader's own client and wallet.
    const body = snippet.replace(/^import .*$/gm, "");
    const run = new Function(
      "x402Client",
      "ExactEvmScheme",
      "mcp",
      "account",
      `return (async () => { ${body}\nreturn paid; })();`,
    );
    const account = await fundedWallet(setup.chains.base, 53_001);
    const mcp = await CLIENTS["official v2 client (@modelcontextprotocol/client)"]!({});
    try {
      const paid = (await run(x402Client, ExactEvmScheme, mcp, account)) as CallResult;
      expect(paid.isError).toBeFalsy();
      expect(paid._meta?.["x402/payment-response"]).toMatchObject({
        success: true,
        payer: account.address,
      });
    } finally {
      await mcp.close();
    }
  }, 60_000);
});

describe("a keyed MCP caller short of credits", () => {
  it("is offered the same payable result, and may pay for the call", async () => {
    const { key, accountId } = await fundedAccount(setup.gw.url, 0, "starter");
    const client = await CLIENTS["official v2 client (@modelcontextprotocol/client)"]!({
      "x-api-key": key,
    });
    try {
      let result: CallResult;
      // The sign-up credits go first; then the call is payable.
      for (let n = 0; ; n++) {
        result = await client.callTool({ name: "hash", arguments: { text: String(n) } });
        if (result.isError || n > 200) break;
      }
      const offer = paymentRequired(result);
      const payload = await payerClient(PAYERS[2]!).createPaymentPayload(offer);
      const paid = await client.callTool({
        name: "hash",
        arguments: { text: "keyed" },
        _meta: { "x402/payment": payload },
      });
      expect(paid.structuredContent).toMatchObject({ digest: sha256("keyed") });
      expect(paid._meta?.["x402/payment-response"]).toMatchObject({
        success: true,
        payer: PAYERS[2]!.address,
      });
      // Bought for the key's account and charged to it, as on REST; the wallet has no account.
      const ledger = (await setup.gw.services.store.ledger(accountId, { limit: 2 })).items;
      expect(ledger.map((e) => [e.kind, e.amount])).toEqual([
        ["debit", -1],
        ["purchase", 1],
      ]);
      expect(await setup.gw.services.store.getAccount(walletAccountId(PAYERS[2]!.address))).toBe(
        null,
      );
    } finally {
      await client.close();
    }
  }, 60_000);
});

describe("refusals before money moves", () => {
  it("a wallet that cannot cover the price gets the payable result again, and nothing is settled", async () => {
    const broke = randomWallet(4242);
    const client = await CLIENTS["official 1.x client (@modelcontextprotocol/sdk)"]!({});
    try {
      const offer = paymentRequired(
        await client.callTool({ name: "hash", arguments: { text: "broke" } }),
      );
      const payload = await payerClient(broke).createPaymentPayload(offer);
      const payToBefore = await balanceOf(setup.chains.base, PAY_TO);
      const refused = paymentRequired(
        await client.callTool({
          name: "hash",
          arguments: { text: "broke" },
          _meta: { "x402/payment": payload },
        }),
      );
      expect(refused.error).toEqual(expect.any(String));
      expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(payToBefore);
    } finally {
      await client.close();
    }
  }, 30_000);

  it("a payment built from one tool's offer (mcp://tool/hash) is refused for another tool at the same price, and nothing is settled", async () => {
    const payer = await fundedWallet(setup.chains.base, 54_001);
    const client = await CLIENTS["official 1.x client (@modelcontextprotocol/sdk)"]!({});
    try {
      const offer = paymentRequired(
        await client.callTool({ name: "hash", arguments: { text: "other tool" } }),
      );
      const payload = await payerClient(payer).createPaymentPayload(offer);
      const payToBefore = await balanceOf(setup.chains.base, PAY_TO);
      const result = await client.callTool({
        name: "qr-code",
        arguments: { text: "other tool" },
        _meta: { "x402/payment": payload },
      });
      expect(result.isError).toBe(true);
      const { "x402/error": refused } = JSON.parse(result.content![0]!.text);
      expect(refused).toMatchObject({
        code: 402,
        data: { resource: { url: "mcp://tool/qr-code" }, error: expect.any(String) },
      });
      expect(JSON.stringify(refused)).toContain("mcp://tool/hash");
      expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(payToBefore);
      const { nonce } = (payload.payload as { authorization: { nonce: string } }).authorization;
      expect(await authorizationUsed(setup.chains.base, payer.address, nonce)).toBe(false);
    } finally {
      await client.close();
    }
  }, 30_000);

  it("limits keyless MCP requests per client address", async () => {
    const list = () =>
      fetch(`${setup.gw.url}/mcp`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-06-18",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
    const statuses: number[] = [];
    for (let n = 0; n < 70; n++) statuses.push((await list()).status);
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(60);
    const limited = await list();
    expect(limited.status).toBe(429);
    expect(await limited.json()).toMatchObject({ error: { code: "rate_limited" } });
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
  }, 30_000);

  it("counts each message of a keyless JSON-RPC batch, a batch all or none: a refused batch counts nothing, then a lone tools/call is a readable rate_limited result", async () => {
    const from = { "x-forwarded-for": "203.0.113.77" }; // an address of its own (the test gateway trusts loopback proxies)
    const post = async (body: unknown) => {
      const res = await fetch(`${setup.gw.url}/mcp`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-03-26",
          ...from,
        },
        body: JSON.stringify(body),
      });
      return {
        status: res.status,
        remaining: res.headers.get("ratelimit-remaining"),
        retryAfter: Number(res.headers.get("retry-after")),
        text: await res.text(),
      };
    };
    const pings = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ jsonrpc: "2.0", id: i + 1, method: "ping" }));
    // 60 a minute without a key: 50 leave 10; 11 do not fit in them: that batch is refused whole
    // and none of it is counted, so the 10 left are still there for the next batch, which spends them.
    const first = await post(pings(50));
    const refused = await post(pings(11));
    const rest = await post(pings(10));
    expect([first.status, refused.status, rest.status]).toEqual([200, 429, 200]);
    expect(JSON.parse(refused.text)).toMatchObject({ error: { code: "rate_limited" } });
    // The RateLimit headers say so, on the refusal too.
    expect([first.remaining, refused.remaining, rest.remaining]).toEqual(["10", "10", "0"]);
    expect(refused.retryAfter).toBeGreaterThan(0);
    // …after which a single message is refused…
    expect((await post({ jsonrpc: "2.0", id: 1, method: "tools/list" })).status).toBe(429);
    // …and a lone tools/call is answered as a readable error result (clients throw on a 429), with the limit's Retry-After.
    const limited = await post({
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "hash", arguments: { text: "x" } },
    });
    expect([
      limited.status,
      limited.retryAfter > 0,
      limited.remaining,
      limited.text.includes('"isError":true'),
      limited.text.includes("rate_limited"),
    ]).toEqual([200, true, "0", true, true]);
  }, 30_000);

  it("refuses a keyless batch larger than the whole per-address limit as a batch it does not serve, not a 429 to retry", async () => {
    const from = { "x-forwarded-for": "203.0.113.79" }; // an address of its own, fresh
    const post = async (messages: number) => {
      const res = await fetch(`${setup.gw.url}/mcp`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-03-26",
          ...from,
        },
        body: JSON.stringify(
          Array.from({ length: messages }, (_, i) => ({
            jsonrpc: "2.0",
            id: i + 1,
            method: "ping",
          })),
        ),
      });
      return {
        status: res.status,
        retryAfter: res.headers.get("retry-after"),
        text: await res.text(),
      };
    };
    // 61 messages can never fit in 60 a minute: waiting would not help, so no Retry-After.
    const tooLarge = await post(61);
    expect([tooLarge.status, tooLarge.retryAfter]).toEqual([400, null]);
    expect(JSON.parse(tooLarge.text)).toMatchObject({
      jsonrpc: "2.0",
      error: { code: -32600, message: expect.stringContaining("60 messages") },
      id: null,
    });
    // It counted none of the 60: a batch of 60 is then served whole.
    const whole = await post(60);
    expect(whole.status).toBe(200);
    expect(rpcMessagesOf(whole.text).filter((m) => m.result !== undefined)).toHaveLength(60);
  }, 30_000);

  it("answers a lone keyless tools/call over the address's anonymous limit as a readable rate_limited result too", async () => {
    const from = { "x-forwarded-for": "203.0.113.78" }; // an address of its own
    // The general limit without credentials (600 a minute), spent on the public catalogue.
    for (let n = 0; n < 600; n++) {
      const page = await fetch(`${setup.gw.url}/v1/tools/hash`, { headers: from });
      await page.arrayBuffer();
      if (page.status === 429) break;
    }
    const res = await fetch(`${setup.gw.url}/mcp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18",
        ...from,
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "hash", arguments: { text: "x" } },
      }),
    });
    const text = await res.text();
    expect([
      res.status,
      Number(res.headers.get("retry-after")) > 0,
      text.includes('"isError":true'),
      text.includes("rate_limited"),
    ]).toEqual([200, true, true, true]);
  }, 30_000);
});
