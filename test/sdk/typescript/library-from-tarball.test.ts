import { execFile, spawn } from "node:child_process";
import { copyFile, readFile, readdir, writeFile } from "node:fs/promises";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { createServer as createNetServer } from "node:net";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { toHex } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ANVIL_MNEMONIC } from "../../../chain-fixtures/chain.js";
import {
  balanceOf as creditsOf,
  call,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../../helpers/gateway.js";
import { haproxyInstalled, runHaproxy, withOneReplica } from "../../helpers/haproxy.js";
import { installPackedSdk, type InstalledProject } from "../../helpers/sdk-package.js";
import { PAY_TO, balanceOf, startChains } from "../../helpers/x402.js";

/**
 * The TypeScript library installed from its npm pack tarball into a fresh project, used from
 * plain Node scripts against a real gateway, real Redis and real anvil chains.
 */
const PRICE = 2000n; // hash: 1 credit at $0.002 = 2,000 USDC atomic units
const payerKey = (index: number) =>
  toHex(mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: index }).getHdKey().privateKey!);
const PAYERS = [6, 7, 4, 3].map((i) => ({
  key: payerKey(i),
  address: mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: i }).address,
}));

let project: InstalledProject;
let chains: Awaited<ReturnType<typeof startChains>>;
let gw: TestGateway;
beforeAll(async () => {
  [project, chains] = await Promise.all([
    installPackedSdk(),
    startChains(PAYERS.map((p) => p.address)),
  ]);
  gw = await startGateway({ env: { ...chains.env, WEBHOOK_ALLOW_PRIVATE_TARGETS: "1" } });
}, 180_000);
afterAll(async () => {
  await gw?.stop();
  await chains?.stop();
  await project?.remove();
});

const HEADER = `import { Toolgate, ToolgateError } from "toolgate";
const fields = (e) => e instanceof ToolgateError ? { status: e.status, code: e.code, message: e.message, param: e.param ?? null, requestId: e.requestId ?? null, retryAfter: e.retryAfter ?? null } : { notToolgateError: String(e) };
const out = (v) => console.log(JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? x.toString() : x)));
`;

describe("the packed library", () => {
  it("ships ESM with type declarations, and its core imports nothing from Node", async () => {
    const pkg = JSON.parse(
      await readFile(join(project.dir, "node_modules/toolgate/package.json"), "utf8"),
    );
    expect(pkg.exports["."]).toEqual({ types: "./dist/index.d.ts", default: "./dist/index.js" });
    const dist = join(project.dir, "node_modules/toolgate/dist");
    const core = (await readdir(dist, { recursive: true })).filter(
      (f) => f.endsWith(".js") && !f.startsWith("cli"),
    );
    expect(core).toContain("index.js");
    for (const file of core)
      expect(await readFile(join(dist, file), "utf8"), file).not.toMatch(
        /from\s+["']node:|require\(|\bBuffer\b/,
      );
    expect((await readdir(dist, { recursive: true })).filter((f) => f.endsWith(".d.ts"))).toContain(
      "index.d.ts",
    );
  });

  it("types each tool's input and output: a user's TypeScript compiles against the published declarations, and misuse does not", async () => {
    const errors = await project.typecheck(
      "typed.ts",
      `import { Toolgate, ToolgateError, verifyWebhook, type ToolInput, type ToolOutput } from "toolgate";
import { aiTools } from "toolgate/ai";
import { openAITools, runAnthropicToolUses } from "toolgate/agents";
const client = new Toolgate({ apiKey: "tg_live_x" });
export async function ok(): Promise<string> {
  const out: ToolOutput<"hash"> = await client.tools.call("hash", { text: "x", algorithm: "md5" });
  const input: ToolInput<"qr-code"> = { text: "x" };
  await client.tools.call("qr-code", input);
  await client.tools.call("some-alias", { anything: 1 });
  void [aiTools, openAITools, runAnthropicToolUses, verifyWebhook, ToolgateError];
  return out.digest;
}
export async function misuse() {
  // @ts-expect-error text must be a string
  await client.tools.call("hash", { text: 5 });
  // @ts-expect-error hash knows no crc32
  await client.tools.call("hash", { text: "x", algorithm: "crc32" });
  // @ts-expect-error hash answers no "summary"
  (await client.tools.call("hash", { text: "x" })).summary;
}
`,
    );
    expect(errors).toBe("");
  });

  it("lists tools and calls one with the key from TOOLGATE_API_KEY / TOOLGATE_BASE_URL", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    const result = await project.script(
      `${HEADER}const client = new Toolgate();
const tools = await client.tools.list();
const hash = await client.tools.get("hash");
const output = await client.tools.call("hash", { text: "hello world" });
out({ names: tools.map((t) => t.name), price: hash.price, output, account: await client.account.get() });`,
      { TOOLGATE_API_KEY: key, TOOLGATE_BASE_URL: gw.url },
    );
    expect(result.names).toEqual(expect.arrayContaining(["hash", "web-search", "qr-code"]));
    expect(result.price).toMatchObject({ credits: 1, usdc_atomic: "2000" });
    expect(result.output).toEqual({
      algorithm: "sha256",
      encoding: "hex",
      digest: "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9",
    });
    expect(result.account.credits).toBe(99);
  });

  it("rotates a key: the new key works, the old one is refused with ToolgateError", async () => {
    const { key, keyId } = await fundedAccount(gw.url, 100, "free");
    const result = await project.script(
      `${HEADER}const old = new Toolgate({ apiKey: process.env.KEY, baseUrl: process.env.URL });
const rotated = await old.keys.rotate(process.env.KEY_ID, { grace_seconds: 0 });
const fresh = new Toolgate({ apiKey: rotated.key, baseUrl: process.env.URL });
const keys = await fresh.keys.list();
const refused = await old.account.get().then(() => null, fields);
out({ rotated: { id: rotated.id, replaced: rotated.replaced?.id }, statuses: keys.data.map((k) => [k.id, k.status]), refused });`,
      { KEY: key, KEY_ID: keyId, URL: gw.url },
    );
    expect(result.rotated.replaced).toBe(keyId);
    expect(result.statuses).toEqual(
      expect.arrayContaining([
        [keyId, "revoked"],
        [result.rotated.id, "active"],
      ]),
    );
    expect(result.refused).toMatchObject({
      status: 401,
      code: "api_key_revoked",
      requestId: expect.stringMatching(/^req_/),
    });
  });

  it("runs the package README's key lines as written: rotate (with a grace), then revoke", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    // A rotation with grace 0 revokes the old key at once: a revoke after it is 404, so the
    // README shows a grace and the revoke that ends it.
    const readme = await readFile(
      new URL("../../../sdk/typescript/README.md", import.meta.url),
      "utf8",
    );
    const block = /^```ts\n(import \{[^}]*\} from "toolgate";[\s\S]*?)^```$/m.exec(readme)![1]!;
    const keyLines = block.split("\n").filter((line) => line.includes("client.keys."));
    expect(keyLines.join("\n")).toMatch(/rotate[\s\S]*revoke/);
    const result = await project.script(
      `${HEADER}const client = new Toolgate({ apiKey: process.env.KEY, baseUrl: process.env.URL });
const keyId = (await client.keys.create({ name: "to rotate" })).id;
${keyLines.join("\n")}
out({ keyId, statuses: (await client.keys.list()).data.map((k) => [k.id, k.status]) });`,
      { KEY: key, URL: gw.url },
    );
    expect(result.statuses).toContainEqual([result.keyId, "revoked"]);
  });

  it("pages the account's events with a cursor and filters them by type", async () => {
    const { key } = await fundedAccount(gw.url, 25, "pro");
    const result = await project.script(
      `${HEADER}const client = new Toolgate({ apiKey: process.env.KEY, baseUrl: process.env.URL });
for (let i = 0; i < 25; i++) await client.tools.call("hash", { text: String(i) });
const deadline = Date.now() + 20_000;
while ((await client.account.events()).data.length < 3 && Date.now() < deadline)
  await new Promise((r) => setTimeout(r, 200));
const depleted = await client.account.events({ type: "credits.depleted" });
const first = await client.account.events({ limit: 1 });
const rest = await client.account.events({ limit: 10, cursor: first.next_cursor ?? undefined });
out({ depleted: depleted.data.map((e) => e.event), first: first.data.map((e) => e.event), rest: rest.data.map((e) => e.event), end: rest.next_cursor });`,
      { KEY: key, URL: gw.url },
    );
    // Sign-up's 25 credits spent: credits.low below 5, credits.depleted at 0.
    expect(result.depleted).toEqual(["credits.depleted"]);
    expect(result.first).toEqual(["credits.depleted"]);
    expect(result.rest).toEqual(["credits.low", "agent.registered"]);
    expect(result.end).toBeNull();
  });

  it("maps 422, 402 and 429 to ToolgateError with status, code, param and request id", async () => {
    const { key } = await fundedAccount(gw.url, 1000, "free");
    const result = await project.script(
      `${HEADER}const keyed = new Toolgate({ apiKey: process.env.KEY, baseUrl: process.env.URL, maxRetries: 0 });
const invalid = await keyed.tools.call("hash", { text: 5 }).then(() => null, fields);
const unpaid = await new Toolgate({ baseUrl: process.env.URL }).tools.call("hash", { text: "x" }).then(() => null, fields);
let limited = null;
for (let i = 0; i < 80 && !limited; i++) limited = await keyed.tools.call("hash", { text: String(i) }).then(() => null, fields);
out({ invalid, unpaid, limited });`,
      { KEY: key, URL: gw.url },
    );
    expect(result.invalid).toMatchObject({
      status: 422,
      code: "validation_failed",
      param: "text",
      requestId: expect.stringMatching(/^req_/),
    });
    expect(result.unpaid).toMatchObject({
      status: 402,
      code: "payment_required",
      requestId: expect.stringMatching(/^req_/),
    });
    expect(result.limited).toMatchObject({
      status: 429,
      code: "rate_limited",
      retryAfter: expect.any(Number),
    });
    expect(result.limited.retryAfter).toBeGreaterThan(0);
  });
});

describe("paying with a wallet (x402 on the local chain)", () => {
  const walletScript = (
    body: string,
  ) => `${HEADER}import { privateKeyToAccount } from "viem/accounts";
const client = new Toolgate({
  baseUrl: process.env.URL,
  wallet: privateKeyToAccount(process.env.PAYER_KEY),
  spending: { maxPerCall: BigInt(process.env.MAX_PER_CALL), maxPerSession: BigInt(process.env.MAX_PER_SESSION), allowedAssets: [{ network: "eip155:84532", asset: process.env.TOKEN }] },
});
${body}`;
  const env = (payer: (typeof PAYERS)[number], maxPerCall: bigint, maxPerSession: bigint) => ({
    URL: gw.url,
    PAYER_KEY: payer.key,
    TOKEN: chains.base.usdc,
    MAX_PER_CALL: String(maxPerCall),
    MAX_PER_SESSION: String(maxPerSession),
  });

  it("pays a call: the token balance moves by exactly the price, and the receipt comes back", async () => {
    const payer = PAYERS[0]!;
    const [payerBefore, payToBefore] = [
      await balanceOf(chains.base, payer.address),
      await balanceOf(chains.base, PAY_TO),
    ];
    const result = await project.script(
      walletScript(`const r = await client.tools.callWithDetails("hash", { text: "hello world" });
out({ output: r.output, payment: r.payment, spent: client.spent, toolMs: r.toolMs, paymentMs: r.paymentMs, gatewayMs: r.gatewayMs });`),
      env(payer, 10_000n, 100_000n),
    );
    expect(result.output.digest).toBe(
      "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9",
    );
    expect(result.payment).toMatchObject({
      success: true,
      network: "eip155:84532",
      payer: payer.address,
    });
    expect(result.spent).toBe("2000");
    // Where the call's time went (Server-Timing): the tool's worker, the payment on chain, the gateway.
    expect(result.toolMs).toBeGreaterThan(0);
    expect(result.paymentMs).toBeGreaterThan(0);
    expect(result.gatewayMs).toBeGreaterThan(0);
    expect(await balanceOf(chains.base, payer.address)).toBe(payerBefore - PRICE);
    expect(await balanceOf(chains.base, PAY_TO)).toBe(payToBefore + PRICE);
  });

  it("refuses to sign above the per-call cap and past the per-session cap; nothing moves", async () => {
    const payer = PAYERS[1]!;
    const before = await balanceOf(chains.base, payer.address);
    const perCall = await project.script(
      walletScript(`out(await client.tools.call("hash", { text: "a" }).then(() => null, fields));`),
      env(payer, 1999n, 100_000n),
    );
    expect(perCall).toMatchObject({
      status: 0,
      code: "spend_cap_exceeded",
      message: expect.stringContaining("per-call cap"),
    });
    expect(await balanceOf(chains.base, payer.address)).toBe(before);
    const session = await project.script(
      walletScript(`const first = await client.tools.call("hash", { text: "b" });
const second = await client.tools.call("hash", { text: "c" }).then(() => null, fields);
out({ first: first.digest.length, second, spent: client.spent });`),
      env(payer, 2000n, 3000n),
    );
    expect(session).toMatchObject({
      first: 64,
      second: { status: 0, code: "spend_cap_exceeded" },
      spent: "2000",
    });
    expect(await balanceOf(chains.base, payer.address)).toBe(before - PRICE);
  });

  it("does not pay a token it was not told of, and says so in its own option names; nothing moves", async () => {
    const payer = PAYERS[1]!;
    const before = await balanceOf(chains.base, payer.address);
    const refused = await project.script(
      `${HEADER}import { privateKeyToAccount } from "viem/accounts";
const client = new Toolgate({ baseUrl: process.env.URL, wallet: privateKeyToAccount(process.env.PAYER_KEY) });
out(await client.tools.call("hash", { text: "unlisted" }).then(() => null, fields));`,
      env(payer, 10_000n, 100_000n),
    );
    expect(refused).toMatchObject({ status: 0, code: "payment_failed" });
    expect(refused.message).toContain("spending.allowedAssets");
    expect(refused.message.toLowerCase()).toContain(chains.base.usdc.toLowerCase());
    expect(refused.message).not.toContain("spendControls");
    expect(await balanceOf(chains.base, payer.address)).toBe(before);
  });
});

describe("what the model reads (toolgate/agents), as the Python library writes it", () => {
  it("offers object schemas without top-level combinators, prices in the description, and refuses arguments that are not a JSON object", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    const result = await project.script(
      `${HEADER}import { openAITools, anthropicTools, runAnthropicToolUses, runOpenAIToolCalls } from "toolgate/agents";
const client = new Toolgate({ apiKey: process.env.KEY, baseUrl: process.env.URL });
const [aiGenerate] = await openAITools(client, { names: ["ai-generate"], includeUnavailable: true });
const hashTools = await anthropicTools(client, { names: ["hash"] });
const call = (id, args) => ({ id, type: "function", function: { name: "hash", arguments: args } });
const messages = await runOpenAIToolCalls(client, [call("a", "[1]"), call("b", "{"), call("c", "  ")], await openAITools(client, { names: ["hash"] }));
const results = await runAnthropicToolUses(client, [{ type: "tool_use", id: "u", name: "hash", input: "text" }], hashTools);
out({ aiGenerate, hash: hashTools[0], messages: messages.map((m) => JSON.parse(m.content)), results, credits: (await client.account.get()).credits });`,
      { KEY: key, URL: gw.url },
    );
    const parameters = result.aiGenerate.function.parameters;
    expect(parameters.type).toBe("object");
    for (const keyword of ["oneOf", "anyOf", "allOf", "$schema", "examples"])
      expect(parameters, keyword).not.toHaveProperty(keyword);
    expect(result.hash.description).toMatch(/\. \(Costs 1 credit, \$0\.002 per call\.\)$/);
    expect(result.hash.input_schema).not.toHaveProperty("examples");
    expect(result.messages[0]).toEqual({
      error: { code: "validation_failed", message: "The arguments must be a JSON object." },
    });
    expect(result.messages[1].error.code).toBe("invalid_json");
    expect(result.messages[1].error.message).toMatch(/^The arguments are not JSON: /);
    // Blank arguments are no arguments: the gateway says what is missing.
    expect(result.messages[2].error).toMatchObject({ code: "validation_failed", param: "text" });
    expect(result.results).toEqual([
      {
        type: "tool_result",
        tool_use_id: "u",
        is_error: true,
        content: JSON.stringify({
          error: { code: "validation_failed", message: "The arguments must be a JSON object." },
        }),
      },
    ]);
    expect(result.credits).toBe(100); // nothing ran
  });
});

describe("agent dispatchers paying with a wallet (toolgate/agents)", () => {
  it("throw spend_cap_exceeded to the program instead of handing it to the model, and run no call after it", async () => {
    // hash costs 2,000 USDC atomic units, js-sandbox 6,000: above a 2,000 per-call cap.
    const payer = PAYERS[3]!;
    const before = await balanceOf(chains.base, payer.address);
    const result = await project.script(
      `${HEADER}import { privateKeyToAccount } from "viem/accounts";
import { anthropicTools, openAITools, runAnthropicToolUses, runOpenAIToolCalls } from "toolgate/agents";
const client = new Toolgate({
  baseUrl: process.env.URL,
  wallet: privateKeyToAccount(process.env.PAYER_KEY),
  spending: { maxPerCall: 2000n, maxPerSession: 100000n, allowedAssets: [{ network: "eip155:84532", asset: process.env.TOKEN }] },
});
const subset = { names: ["hash", "js-sandbox"] };
const offeredOpenAI = await openAITools(client, subset);
const call = (id, name, input) => ({ id, type: "function", function: { name, arguments: JSON.stringify(input) } });
const openai = await runOpenAIToolCalls(client, [
  call("call_1", "hash", { text: "before the cap" }),
  call("call_2", "js-sandbox", { code: "1 + 1" }),
  call("call_3", "hash", { text: "after the cap" }),
], offeredOpenAI).then((messages) => ({ messages }), (e) => ({ thrown: fields(e) }));
const spentAfterOpenAI = client.spent;
const anthropic = await runAnthropicToolUses(client, [
  { type: "tool_use", id: "toolu_1", name: "js-sandbox", input: { code: "2 + 2" } },
  { type: "tool_use", id: "toolu_2", name: "hash", input: { text: "after the cap too" } },
], await anthropicTools(client, subset)).then((results) => ({ results }), (e) => ({ thrown: fields(e) }));
out({ offered: offeredOpenAI.map((t) => t.function.name).sort(), openai, spentAfterOpenAI, anthropic, spent: client.spent });`,
      { URL: gw.url, PAYER_KEY: payer.key, TOKEN: chains.base.usdc },
    );
    expect(result.offered).toEqual(["hash", "js-sandbox"]);
    const capError = {
      thrown: {
        status: 0,
        code: "spend_cap_exceeded",
        message: expect.stringContaining("per-call cap"),
      },
    };
    expect(result.openai).toMatchObject(capError);
    expect(result.anthropic).toMatchObject(capError);
    // Only the first hash was paid: the calls after the cap were not run.
    expect(result.spentAfterOpenAI).toBe("2000");
    expect(result.spent).toBe("2000");
    expect(await balanceOf(chains.base, payer.address)).toBe(before - PRICE);
  });
});

describe("retries", () => {
  /**
   * A proxy in front of the gateway, standing in for a network or load balancer that fails the
   * first request: "drop" forwards it and then cuts the caller off instead of answering; a status
   * answers it with that status and headers itself. Later requests pass through.
   */
  async function proxyTo(
    target: string,
    first: "drop" | { status: number; headers: Record<string, string>; body: unknown },
  ) {
    const seen: { headers: IncomingHttpHeaders; at: number }[] = [];
    const server: Server = createServer(async (req, res) => {
      if (req.url === "/readyz") return res.end("{}"); // a load balancer's health checks, not counted
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      seen.push({ headers: req.headers, at: Date.now() });
      if (seen.length === 1 && first !== "drop") {
        res.writeHead(first.status, { "content-type": "application/json", ...first.headers });
        return res.end(JSON.stringify(first.body));
      }
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(([k]) =>
          ["content-type", "x-api-key", "idempotency-key"].includes(k),
        ),
      ) as Record<string, string>;
      const upstream = await fetch(`${target}${req.url}`, {
        method: req.method,
        headers,
        body: req.method === "POST" ? Buffer.concat(chunks) : undefined,
      });
      const body = Buffer.from(await upstream.arrayBuffer());
      if (seen.length === 1) return req.socket.destroy(); // the gateway did the work; the caller never hears
      res.writeHead(
        upstream.status,
        Object.fromEntries(
          [...upstream.headers].filter(
            ([k]) => !["content-length", "transfer-encoding", "connection"].includes(k),
          ),
        ),
      );
      res.end(body);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return {
      url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
      seen,
      stop: () => new Promise((r) => server.close(r)),
    };
  }

  it("a call whose connection dropped is retried with the same Idempotency-Key and charged once", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    const proxy = await proxyTo(gw.url, "drop");
    try {
      const result = await project.script(
        `${HEADER}const client = new Toolgate({ apiKey: process.env.KEY, baseUrl: process.env.URL, maxRetries: 2 });
const r = await client.tools.callWithDetails("hash", { text: "once" });
out({ digest: r.output.digest, replayed: r.replayed, ran: r.toolMs !== undefined, gatewayMs: r.gatewayMs });`,
        { KEY: key, URL: proxy.url },
      );
      // The replay did not run the tool: Server-Timing has the gateway's time alone.
      expect(result).toEqual({
        digest: expect.stringMatching(/^[0-9a-f]{64}$/),
        replayed: true,
        ran: false,
        gatewayMs: expect.any(Number),
      });
      expect(proxy.seen).toHaveLength(2);
      expect(proxy.seen[0]!.headers["idempotency-key"]).toMatch(/^[0-9a-f-]{36}$/);
      expect(proxy.seen[1]!.headers["idempotency-key"]).toBe(
        proxy.seen[0]!.headers["idempotency-key"],
      );
      expect(await creditsOf(gw.url, key)).toBe(99);
    } finally {
      await proxy.stop();
    }
  });

  it.skipIf(!haproxyInstalled)(
    "a call whose replica failed behind the shipped load balancer (502 replica_failed) is retried with the same Idempotency-Key and charged once",
    async () => {
      const { key } = await fundedAccount(gw.url, 100, "free");
      const proxy = await proxyTo(gw.url, "drop");
      const lb = await runHaproxy((cfg) => withOneReplica(cfg, proxy.url.slice("http://".length)));
      try {
        const result = await project.script(
          `${HEADER}const client = new Toolgate({ apiKey: process.env.KEY, baseUrl: process.env.URL, maxRetries: 2 });
const r = await client.tools.callWithDetails("hash", { text: "once" });
out({ replayed: r.replayed });`,
          { KEY: key, URL: lb.url },
        );
        expect(result).toEqual({ replayed: true });
        expect(proxy.seen).toHaveLength(2);
        expect(proxy.seen[1]!.headers["idempotency-key"]).toBe(
          proxy.seen[0]!.headers["idempotency-key"],
        );
        expect(await creditsOf(gw.url, key)).toBe(99);
      } finally {
        lb.stop();
        await proxy.stop();
      }
    },
  );

  it("a revoke whose connection dropped is not repeated into a 404: the caller hears the network error, and the key is revoked", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    const spare = (await call(`${gw.url}/api/v1/keys`, { key, body: { name: "spare" } })).body;
    const proxy = await proxyTo(gw.url, "drop");
    try {
      const result = await project.script(
        `${HEADER}const client = new Toolgate({ apiKey: process.env.KEY, baseUrl: process.env.URL, maxRetries: 2 });
try { await client.keys.revoke(process.env.ID); out({ revoked: true }); }
catch (e) { out({ status: e.status, code: e.code }); }`,
        { KEY: key, URL: proxy.url, ID: spare.id },
      );
      expect(result).toEqual({ status: 0, code: "network_error" });
      expect(proxy.seen).toHaveLength(1);
      const listed = (await call(`${gw.url}/api/v1/keys`, { key })).body.data;
      expect(listed.find((k: { id: string }) => k.id === spare.id).status).toBe("revoked");
    } finally {
      await proxy.stop();
    }
  });

  it("a 429 is retried after its Retry-After, and the call then goes through", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    const proxy = await proxyTo(gw.url, {
      status: 429,
      headers: { "retry-after": "1" },
      body: {
        error: {
          type: "rate_limit_error",
          code: "rate_limited",
          message: "slow down",
          request_id: "req_proxy",
        },
      },
    });
    try {
      const result = await project.script(
        `${HEADER}const client = new Toolgate({ apiKey: process.env.KEY, baseUrl: process.env.URL });
out((await client.tools.call("hash", { text: "hello world" })).digest);`,
        { KEY: key, URL: proxy.url },
      );
      expect(result).toBe("b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9");
      expect(proxy.seen).toHaveLength(2);
      expect(proxy.seen[1]!.at - proxy.seen[0]!.at).toBeGreaterThanOrEqual(1000);
      expect(await creditsOf(gw.url, key)).toBe(99);
    } finally {
      await proxy.stop();
    }
  });

  it("a tool that is unavailable (503 tool_unavailable) is not retried: a retry cannot configure its provider", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    const proxy = await proxyTo(gw.url, {
      status: 503,
      headers: {},
      body: {
        error: {
          type: "tool_error",
          code: "tool_unavailable",
          message: "no provider",
          request_id: "req_proxy",
        },
      },
    });
    try {
      const result = await project.script(
        `${HEADER}out(await new Toolgate({ apiKey: process.env.KEY, baseUrl: process.env.URL }).tools.call("web-search", { query: "x" }).then(() => null, fields));`,
        { KEY: key, URL: proxy.url },
      );
      expect(result).toMatchObject({
        status: 503,
        code: "tool_unavailable",
        requestId: "req_proxy",
      });
      expect(proxy.seen).toHaveLength(1);
    } finally {
      await proxy.stop();
    }
  });
});

describe("examples/", () => {
  const EXAMPLES = fileURLToPath(new URL("../../../examples", import.meta.url));
  const sh = promisify(execFile);
  const copy = async (file: string) => {
    const to = join(project.dir, file.split("/").pop()!);
    await copyFile(join(EXAMPLES, file), to);
    return to;
  };
  const walletFile = async (payer: (typeof PAYERS)[number]) => {
    const file = join(project.dir, "wallet.key");
    await writeFile(file, `${payer.key}\n`, { mode: 0o600 });
    return file;
  };
  const env = (extra: Record<string, string>) => ({
    PATH: process.env.PATH ?? "",
    TOOLGATE_BASE_URL: gw.url,
    ...extra,
  });

  it("typescript/keyed-call.ts and curl/keyed-call.sh call hash with a key", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    const ts = await project.runTs(await copy("typescript/keyed-call.ts"), {
      TOOLGATE_API_KEY: key,
      TOOLGATE_BASE_URL: gw.url,
    });
    expect(ts.stdout).toContain(
      'sha256("hello world") = b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9',
    );
    expect(ts.stdout).toContain("99 credits left");
    const curl = await sh("sh", [join(EXAMPLES, "curl/keyed-call.sh")], {
      env: env({ TOOLGATE_API_KEY: key }),
    });
    expect(curl.stdout).toContain(
      '"digest":"b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9"',
    );
    expect(curl.stdout).toContain('"credits":98');
  });

  it("typescript/paid-call.ts and curl/paid-call.sh (offer by curl, payment by the npm-installed CLI) pay the price", async () => {
    const payer = PAYERS[2]!;
    const before = await balanceOf(chains.base, payer.address);
    const extra = {
      WALLET_KEY_FILE: await walletFile(payer),
      EXTRA_ASSET: `eip155:84532:${chains.base.usdc}`,
    };
    const ts = await project.runTs(await copy("typescript/paid-call.ts"), {
      ...extra,
      TOOLGATE_BASE_URL: gw.url,
    });
    expect(ts.stdout).toMatch(
      new RegExp(
        `paid 2000 USDC atomic units from ${payer.address} on eip155:84532, transaction 0x[0-9a-f]{64}`,
      ),
    );
    expect(await balanceOf(chains.base, payer.address)).toBe(before - PRICE);
    const curl = await sh("sh", [join(EXAMPLES, "curl/paid-call.sh")], {
      env: env({ ...extra, TOOLGATE: join(project.dir, "node_modules/.bin/toolgate") }),
    });
    expect(curl.stdout).toContain('"x402Version":2');
    expect(curl.stdout).toContain(
      '"digest": "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9"',
    );
    expect(await balanceOf(chains.base, payer.address)).toBe(before - 2n * PRICE);
  });

  it("the TypeScript snippet under each tool on /docs runs as copied, with the key from the environment", async () => {
    const html = await (await fetch(`${gw.url}/docs`)).text();
    const unescapeHtml = (s: string) =>
      s
        .replace(/&lt;/g, "<")
        .replace(/&gt;/g, ">")
        .replace(/&quot;/g, '"')
        .replace(/&#39;/g, "'")
        .replace(/&amp;/g, "&");
    const tools = ((await (await fetch(`${gw.url}/v1/tools`)).json()) as { data: unknown[] }).data;
    const sections = [
      ...html.matchAll(/<section id="tool-([^"]+)" class="tool">([\s\S]*?)<\/section>/g),
    ].map((m) => ({ tool: m[1]!, html: m[2]! }));
    expect(sections.length).toBe(tools.length);
    // The tools whose section shows this gateway's own answer to the example (no provider, no network).
    const runnable = sections
      .filter((s) => s.html.includes("this gateway's answer to the example"))
      .map((s) => ({
        tool: s.tool,
        code: unescapeHtml(
          /<pre[^>]* class="snippet" data-lang="typescript"><code>([\s\S]*?)<\/code><\/pre>/.exec(
            s.html,
          )![1]!,
        ),
      }));
    expect(runnable.length).toBeGreaterThan(5);
    // One process runs them all (one module each), so the test costs one Node start.
    const files = await Promise.all(
      runnable.map(async (s) => {
        const file = join(project.dir, `snippet-${s.tool}.mts`);
        await writeFile(
          file,
          s.code.replace(
            "console.log(result);",
            `console.log(${JSON.stringify(`ok ${s.tool}`)}, JSON.stringify(result).length);`,
          ),
        );
        return file;
      }),
    );
    const runner = join(project.dir, "run-snippets.mts");
    await writeFile(runner, `for (const f of ${JSON.stringify(files)}) await import(f);\n`);
    const { key } = await fundedAccount(gw.url, 1000, "free");
    const { stdout } = await project.runTs(runner, {
      TOOLGATE_API_KEY: key,
      TOOLGATE_BASE_URL: gw.url,
    });
    for (const s of runnable) expect(stdout).toMatch(new RegExp(`^ok ${s.tool} [1-9]`, "m"));
  }, 60_000);

  it("curl/webhook-test.sh registers and sends a test event that typescript/webhook-receiver.ts verifies; a forgery gets 401", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const port = await new Promise<number>((resolve) => {
      const probe = createNetServer().listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    // Registered before the receiver listens: the first attempt fails, a retry (1 s, 4 s) arrives.
    const registered = await sh("sh", [join(EXAMPLES, "curl/webhook-test.sh")], {
      env: env({ TOOLGATE_API_KEY: key, WEBHOOK_URL: `https://localhost:${port}/toolgate` }),
    });
    const secret = /"secret":"(whsec_[^"]+)"/.exec(registered.stdout)![1]!;
    expect(registered.stdout).toMatch(/"sent":\[\{"webhook_id":"wh_/);
    const tls = process.env.TEST_TLS_DIR!;
    const receiver = spawn(
      process.execPath,
      ["--import", pathToTsx(), await copy("typescript/webhook-receiver.ts")],
      {
        cwd: project.dir,
        env: {
          PATH: process.env.PATH ?? "",
          TOOLGATE_WEBHOOK_SECRET: secret,
          TLS_CERT: join(tls, "server.pem"),
          TLS_KEY: join(tls, "server.key"),
          PORT: String(port),
        },
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    try {
      const lines: string[] = [];
      createInterface({ input: receiver.stdout! }).on("line", (l) => lines.push(l));
      const waitFor = async (pattern: RegExp) => {
        const deadline = Date.now() + 20_000;
        while (!lines.some((l) => pattern.test(l)) && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 50));
        return lines.find((l) => pattern.test(l));
      };
      expect(await waitFor(/^listening on/)).toBe(`listening on ${port}`);
      expect(await waitFor(/^verified/)).toMatch(/^verified webhook\.test evt_/);
      const forged = await fetch(`https://localhost:${port}/toolgate`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-webhook-signature": `sha256=${"0".repeat(64)}`,
        },
        body: '{"id":"evt_forged","event":"payment.received","timestamp":"2026-01-01T00:00:00.000Z","data":{}}',
      });
      expect(forged.status).toBe(401);
      expect(await waitFor(/^refused/)).toBe("refused: webhook_signature_invalid");
    } finally {
      receiver.kill();
    }
  }, 30_000);
});

const pathToTsx = () => new URL("../../../node_modules/tsx/dist/loader.mjs", import.meta.url).href;
