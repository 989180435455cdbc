import { createHmac } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectMcp } from "../helpers/mcp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  admin,
  balanceOf,
  call,
  callTool,
  eventsOf,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";
import { startToolEndpoint } from "../helpers/tool-endpoint.js";

/**
 * Business custom endpoints and operator-declared upstream tools, end to end: a real gateway on
 * real Redis, real tool endpoints on loopback (HTTPS from the test CA, and plain HTTP), the
 * official MCP client. Loopback targets are allowed by UPSTREAM_ALLOW_PRIVATE_TARGETS=1 on `gw`;
 * `strict` shares the same Redis prefix without it, as a production gateway would run.
 */
let gw: TestGateway;
let strict: TestGateway;
let endpoint: Awaited<ReturnType<typeof startToolEndpoint>>;
let plain: Awaited<ReturnType<typeof startToolEndpoint>>;

const words = (text: string) => text.split(/\s+/).filter(Boolean).length;
/** A valid JSON object nested 5,000 levels deep (10 KB): MCP's JSON.stringify overflowed the stack on it. */
const DEEP = `{"words":1,"a":${"[".repeat(5000)}${"]".repeat(5000)}}`;

beforeAll(async () => {
  [endpoint, plain] = await Promise.all([startToolEndpoint("https"), startToolEndpoint("http")]);
  endpoint.handle("/word-count", (body) => ({ json: { words: words(body.text) } }));
  endpoint.handle("/broken", () => ({ status: 500, json: { error: "database down" } }));
  endpoint.handle("/slow", () => "hang");
  endpoint.handle("/wrong-shape", () => ({ json: { words: "many" } }));
  endpoint.handle("/not-json", () => ({ raw: "<html>oops</html>" }));
  endpoint.handle("/huge", () => ({ json: { words: 1, padding: "x".repeat(2 * 1024 * 1024) } }));
  endpoint.handle("/upper", (body) =>
    body.text === "deep" ? { raw: DEEP } : { json: { upper: String(body.text).toUpperCase() } },
  );
  endpoint.handle("/deep", () => ({ raw: DEEP }));
  endpoint.handle("/refuses-oddly", () => ({
    status: 422,
    json: { error: { message: 5, param: 123 } },
  }));
  endpoint.handle("/refuses-at-length", () => ({
    status: 422,
    json: { error: { message: "x".repeat(900_000), param: "text" } },
  }));
  plain.handle("/echo", (body) => ({ json: { echo: body } }));

  const dir = mkdtempSync(join(tmpdir(), "toolgate-tools-file-"));
  const file = join(dir, "tools.yaml");
  writeFileSync(
    file,
    [
      "tools:",
      "  - name: shout",
      "    title: Shout",
      "    description: Upper-cases a text, at the operator's upstream API.",
      `    url: ${endpoint.url("/upper")}`,
      "    category: language",
      "    tags: [uppercase, caps]",
      "    input_schema: { type: object, properties: { text: { type: string, maxLength: 100 } }, required: [text], additionalProperties: false }",
      "    output_schema: { type: object, properties: { upper: { type: string } }, required: [upper] }",
      "    price_credits: 4",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: TOOLS_FILE's own ${NAME} syntax, not a template
      "    headers: { Authorization: 'Bearer ${SHOUT_API_KEY}' }",
    ].join("\n"),
  );
  gw = await startGateway({
    env: {
      UPSTREAM_ALLOW_PRIVATE_TARGETS: "1",
      TOOLS_FILE: file,
      SHOUT_API_KEY: "upstream-secret",
      // Every registration of this file comes from one address (endpoint-limits.test.ts has the limit).
      ENDPOINT_LIMITS: "custom-tool-register=1000/60",
    },
  });
  strict = await startGateway({
    prefix: gw.prefix,
    env: { ENDPOINT_LIMITS: "custom-tool-register=1000/60" },
  });
});
afterAll(async () => {
  await strict?.stop();
  await gw?.stop();
  await Promise.all([endpoint?.stop(), plain?.stop()]);
});

const wordCount = (url: string, extra: Record<string, unknown> = {}) => ({
  name: "word-count",
  description: "Counts the words of a text.",
  url,
  input_schema: {
    type: "object",
    properties: { text: { type: "string", maxLength: 1000 } },
    required: ["text"],
    additionalProperties: false,
  },
  output_schema: {
    type: "object",
    properties: { words: { type: "integer" } },
    required: ["words"],
  },
  price_credits: 3,
  timeout_ms: 2000,
  ...extra,
});

const register = (key: string, body: unknown, base = gw.url) =>
  call(`${base}/api/v1/custom-tools`, { key, body });

/** The official MCP client, connected with `key`. */
const mcpClient = (key: string) => connectMcp(gw.url, key);

/** The error code of a tool call made over MCP with `key` (a client of its own), or null if it succeeded. */
async function mcpErrorCode(key: string, name: string, args: Record<string, unknown>) {
  const client = await mcpClient(key);
  try {
    const result = await client.callTool({ name, arguments: args });
    if (!result.isError) return null;
    return JSON.parse((result.content as { text: string }[])[0]!.text).error.code as string;
  } finally {
    await client.close();
  }
}

describe("a Business account's custom tool", () => {
  it("is registered, listed and shown to its account", async () => {
    const { key } = await fundedAccount(gw.url, 100, "business");
    const created = await register(key, wordCount(endpoint.url("/word-count")));
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: "word-count",
      title: "word-count",
      price: { credits: 3, usd: "0.006" },
      timeout_ms: 2000,
      endpoint: "/v1/tools/word-count",
    });
    expect(
      (await call(`${gw.url}/api/v1/custom-tools`, { key })).body.data.map(
        (t: { name: string }) => t.name,
      ),
    ).toEqual(["word-count"]);
    expect((await call(`${gw.url}/api/v1/custom-tools/word-count`, { key })).body.url).toBe(
      endpoint.url("/word-count"),
    );
    const listed = await call(`${gw.url}/v1/tools`, { key });
    expect(listed.body.data.find((t: { name: string }) => t.name === "word-count")).toMatchObject({
      private: true,
      price: { credits: 3 },
      input_schema: { required: ["text"] },
    });
    expect((await call(`${gw.url}/v1/tools/word-count`, { key })).body).toMatchObject({
      name: "word-count",
      private: true,
    });
  });

  it("is called over REST with its validated input, and charged its price", async () => {
    const { key } = await fundedAccount(gw.url, 100, "business");
    const created = await register(key, wordCount(endpoint.url("/word-count")));
    const before = endpoint.at("/word-count").length;
    const res = await callTool(gw.url, key, "word-count", { text: "one two three four" });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ words: 4 });
    expect(res.headers.get("x-credits-charged")).toBe("3");
    expect(await balanceOf(gw.url, key)).toBe(97);
    const sent = endpoint.at("/word-count").slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.body).toEqual({ text: "one two three four" });
    expect(sent[0]!.headers["user-agent"]).toBe("Toolgate-Upstream/1.0");
    expect(sent[0]!.headers["x-api-key"]).toBeUndefined(); // the caller's key never reaches the endpoint
    // Signed as Standard Webhooks: HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>", keyed
    // by the secret's base64 bytes, computed here from the standard's own definition.
    const secret = String(created.body.signing_secret);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const {
      "webhook-id": id,
      "webhook-timestamp": at,
      "webhook-signature": signature,
    } = sent[0]!.headers;
    expect(id).toBe(res.headers.get("x-request-id"));
    expect(Math.abs(Number(at) - Date.now() / 1000)).toBeLessThan(30);
    const expected = createHmac("sha256", Buffer.from(secret.slice("whsec_".length), "base64"))
      .update(`${id}.${at}.${sent[0]!.raw}`)
      .digest("base64");
    expect(signature).toBe(`v1,${expected}`);
    // Shown once: the tool's own views say it is signed, never with what.
    const shown = await call(`${gw.url}/api/v1/custom-tools/word-count`, { key });
    expect(shown.body.signed).toBe(true);
    expect(JSON.stringify(shown.body)).not.toContain(secret.slice("whsec_".length));
    const usage = await call(`${gw.url}/api/v1/usage?limit=5`, { key });
    expect(usage.body.data[0]).toMatchObject({ kind: "debit", amount: -3, tool: "word-count" });
    // Counted under "custom" in the metrics: accounts' own names never become label values.
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(metrics).toMatch(/tool="custom",outcome="ok"|outcome="ok",tool="custom"/);
    expect(metrics).not.toContain('tool="word-count"');
  });

  it("whose signing secret no key of SECRET_KEY opens fails its own calls (500, refunded) and nothing else", async () => {
    const { key } = await fundedAccount(gw.url, 100, "business");
    await register(key, wordCount(endpoint.url("/word-count"), { name: "sealed-elsewhere" }));
    const rekeyed = await startGateway({
      prefix: gw.prefix,
      env: { UPSTREAM_ALLOW_PRIVATE_TARGETS: "1", SECRET_KEY: "another-secret-key-of-32-chars!!" },
    });
    try {
      const before = endpoint.at("/word-count").length;
      const res = await callTool(rekeyed.url, key, "sealed-elsewhere", { text: "a b" });
      expect([res.status, res.body.error.code]).toEqual([500, "internal_error"]);
      expect(endpoint.at("/word-count").length).toBe(before); // never sent unsigned
      expect(await balanceOf(rekeyed.url, key)).toBe(100);
      // The account's other business goes on: its tools are listed, the catalogue is served.
      expect((await call(`${rekeyed.url}/v1/tools`, { key })).status).toBe(200);
      expect((await callTool(rekeyed.url, key, "hash", { text: "a" })).status).toBe(200);
    } finally {
      await rekeyed.stop();
    }
  });

  it("refuses input its JSON Schema refuses: 422 naming the field, not charged, the endpoint not called", async () => {
    const { key } = await fundedAccount(gw.url, 100, "business");
    await register(key, wordCount(endpoint.url("/word-count")));
    const before = endpoint.at("/word-count").length;
    const missing = await callTool(gw.url, key, "word-count", {});
    expect(missing.status).toBe(422);
    expect(missing.body.error).toMatchObject({ code: "validation_failed", param: "text" });
    const extra = await callTool(gw.url, key, "word-count", { text: "a", colour: "red" });
    expect(extra.body.error).toMatchObject({ code: "validation_failed", param: "colour" });
    const long = await callTool(gw.url, key, "word-count", { text: "x".repeat(1001) });
    expect(long.body.error).toMatchObject({ code: "validation_failed", param: "text" });
    expect(await balanceOf(gw.url, key)).toBe(100);
    expect(endpoint.at("/word-count").length).toBe(before);
  });

  it("is refunded with tool.error when its endpoint fails, answers the wrong shape, not JSON, or too much", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 100, "business");
    for (const [name, path] of [
      ["broken", "/broken"],
      ["wrong-shape", "/wrong-shape"],
      ["not-json", "/not-json"],
      ["huge", "/huge"],
    ] as const) {
      expect((await register(key, wordCount(endpoint.url(path), { name }))).status).toBe(201);
      const res = await callTool(gw.url, key, name, { text: "a b" });
      expect(res.status).toBe(502);
      expect(res.body.error.code).toBe("tool_failed");
    }
    expect(await balanceOf(gw.url, key)).toBe(100);
    let errors: Awaited<ReturnType<typeof eventsOf>> = [];
    for (let waited = 0; errors.length < 4 && waited < 5000; waited += 50) {
      errors = (await eventsOf(gw.services.store, accountId, 0)).filter(
        (e) => e.event === "tool.error",
      );
      if (errors.length < 4) await new Promise((r) => setTimeout(r, 50));
    }
    expect(errors.map((e) => e.data.tool_name).sort()).toEqual([
      "broken",
      "huge",
      "not-json",
      "wrong-shape",
    ]);
    expect(errors.every((e) => e.data.credits_charged === 0)).toBe(true);
    const usage = await call(`${gw.url}/api/v1/usage?limit=20`, { key });
    expect(usage.body.data.filter((e: { kind: string }) => e.kind === "refund")).toHaveLength(4);
  });

  it("passes on its endpoint's input refusal only as text, bounded: never a 500 that keeps the charge", async () => {
    const { key } = await fundedAccount(gw.url, 100, "business");
    await register(key, wordCount(endpoint.url("/refuses-oddly"), { name: "odd-refusal" }));
    await register(key, wordCount(endpoint.url("/refuses-at-length"), { name: "long-refusal" }));
    // A number for the message and for the field: the refusal without them.
    const odd = await callTool(gw.url, key, "odd-refusal", { text: "a" });
    expect([odd.status, odd.body.error.code, odd.body.error.param]).toEqual([
      422,
      "validation_failed",
      undefined,
    ]);
    expect(odd.body.error.message).toBe("The tool refused its input.");
    expect(await mcpErrorCode(key, "odd-refusal", { text: "a" })).toBe("validation_failed");
    // 900 KB of message: passed on cut to a thousand characters.
    const long = await callTool(gw.url, key, "long-refusal", { text: "a" });
    expect([long.status, long.body.error.param]).toEqual([422, "text"]);
    expect(long.body.error.message).toBe(`${"x".repeat(1000)}…`);
    expect(await balanceOf(gw.url, key)).toBe(100);
  });

  it("fails an answer nested deeper than a request body may be, over REST and MCP alike: 502 tool_failed, refunded", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 100, "business");
    expect((await register(key, wordCount(endpoint.url("/deep"), { name: "deep" }))).status).toBe(
      201,
    );
    const rest = await callTool(gw.url, key, "deep", { text: "a" });
    expect([rest.status, rest.body.error.code, rest.body.error.message]).toEqual([
      502,
      "tool_failed",
      "The deep tool failed; the endpoint's answer nests deeper than 64 levels. The call was not charged.",
    ]);
    // Before: MCP answered HTTP 200 with an empty body, and kept the charge.
    expect(await mcpErrorCode(key, "deep", { text: "a" })).toBe("tool_failed");
    expect(await balanceOf(gw.url, key)).toBe(100);
    let errors: Awaited<ReturnType<typeof eventsOf>> = [];
    for (let waited = 0; errors.length < 2 && waited < 5000; waited += 50) {
      errors = (await eventsOf(gw.services.store, accountId, 0)).filter(
        (e) => e.event === "tool.error",
      );
      if (errors.length < 2) await new Promise((r) => setTimeout(r, 50));
    }
    expect(errors.map((e) => e.data.error_code)).toEqual(["tool_failed", "tool_failed"]);
  });

  it("is refunded when its endpoint does not answer within its timeout: 504 tool_timeout", async () => {
    const { key } = await fundedAccount(gw.url, 100, "business");
    await register(key, wordCount(endpoint.url("/slow"), { name: "slow", timeout_ms: 300 }));
    const started = Date.now();
    const res = await callTool(gw.url, key, "slow", { text: "a" });
    expect(res.status).toBe(504);
    expect(res.body.error.code).toBe("tool_timeout");
    expect(Date.now() - started).toBeLessThan(3000);
    expect(await balanceOf(gw.url, key)).toBe(100);
  });

  it("is invisible to every other account: 404 as for any unknown tool, in no listing", async () => {
    const owner = await fundedAccount(gw.url, 100, "business");
    await register(owner.key, wordCount(endpoint.url("/word-count"), { name: "private-count" }));
    const other = await fundedAccount(gw.url, 100, "business");
    const res = await callTool(gw.url, other.key, "private-count", { text: "a" });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("tool_not_found");
    expect((await callTool(gw.url, other.key, "no-such-tool", { text: "a" })).body.error.code).toBe(
      "tool_not_found",
    );
    expect(
      (await call(`${gw.url}/v1/tools`, { key: other.key })).body.data.map(
        (t: { name: string }) => t.name,
      ),
    ).not.toContain("private-count");
    expect(
      (await call(`${gw.url}/v1/tools`)).body.data.map((t: { name: string }) => t.name),
    ).not.toContain("private-count");
    expect((await call(`${gw.url}/v1/tools/private-count`, { key: other.key })).status).toBe(404);
    expect(
      (await call(`${gw.url}/api/v1/custom-tools/private-count`, { key: other.key })).status,
    ).toBe(404);
    expect(
      (
        await call(`${gw.url}/api/v1/custom-tools/private-count`, {
          key: other.key,
          method: "DELETE",
        })
      ).status,
    ).toBe(404);
    // Without a key (a would-be x402 payer) it does not exist either, and a made-up key learns nothing.
    expect((await callTool(gw.url, undefined, "private-count", { text: "a" })).status).toBe(404);
    const forged = `${owner.key.slice(0, -4)}zzzz`;
    expect((await callTool(gw.url, forged, "private-count", { text: "a" })).status).toBe(401);
    expect((await callTool(gw.url, forged, "no-such-tool", { text: "a" })).status).toBe(401);
    // Not even with a malformed Idempotency-Key, judged only once the key is for the account's own tools.
    const malformed = { "idempotency-key": "x".repeat(256) };
    for (const name of ["private-count", "no-such-tool"])
      expect((await callTool(gw.url, forged, name, { text: "a" }, malformed)).status).toBe(401);
    expect(
      (await callTool(gw.url, owner.key, "private-count", { text: "a" }, malformed)).status,
    ).toBe(422);
    expect(await balanceOf(gw.url, other.key)).toBe(100);
    // The owner still calls it; once deleted it is gone for the owner too.
    expect((await callTool(gw.url, owner.key, "private-count", { text: "a b" })).body).toEqual({
      words: 2,
    });
    expect(
      (
        await call(`${gw.url}/api/v1/custom-tools/private-count`, {
          key: owner.key,
          method: "DELETE",
        })
      ).body,
    ).toEqual({ name: "private-count", deleted: true });
    expect((await callTool(gw.url, owner.key, "private-count", { text: "a" })).status).toBe(404);
  });

  it("is called over MCP: listed to its account only, charged and refunded on the same path", async () => {
    const owner = await fundedAccount(gw.url, 100, "business");
    await register(owner.key, wordCount(endpoint.url("/word-count"), { name: "mcp-count" }));
    await register(owner.key, wordCount(endpoint.url("/broken"), { name: "mcp-broken" }));
    const client = await mcpClient(owner.key);
    try {
      const { tools } = await client.listTools();
      const listed = tools.find((t) => t.name === "mcp-count")!;
      expect(listed.inputSchema).toMatchObject({ type: "object", required: ["text"] });
      expect(listed._meta?.["toolgate/price"]).toMatchObject({ credits: 3 });
      const ok = await client.callTool({ name: "mcp-count", arguments: { text: "a b c" } });
      expect(ok.isError).toBeFalsy();
      expect(ok.structuredContent).toEqual({ words: 3 });
      expect(await balanceOf(gw.url, owner.key)).toBe(97);
      const failed = await client.callTool({ name: "mcp-broken", arguments: { text: "a" } });
      expect(failed.isError).toBe(true);
      expect(JSON.parse((failed.content as { text: string }[])[0]!.text).error.code).toBe(
        "tool_failed",
      );
      const invalid = await client.callTool({ name: "mcp-count", arguments: {} });
      expect(JSON.parse((invalid.content as { text: string }[])[0]!.text).error).toMatchObject({
        code: "validation_failed",
        param: "text",
      });
      expect(await balanceOf(gw.url, owner.key)).toBe(97);
    } finally {
      await client.close();
    }
    const other = await fundedAccount(gw.url, 100, "business");
    const otherClient = await mcpClient(other.key);
    try {
      expect((await otherClient.listTools()).tools.map((t) => t.name)).not.toContain("mcp-count");
      const res = await otherClient.callTool({ name: "mcp-count", arguments: { text: "a" } });
      expect(JSON.parse((res.content as { text: string }[])[0]!.text).error.code).toBe(
        "tool_not_found",
      );
    } finally {
      await otherClient.close();
    }
  });

  it("is a Business feature: Free, Starter and Pro accounts get 403 feature_not_in_tier", async () => {
    for (const tier of ["free", "starter", "pro"]) {
      const { key } = await fundedAccount(gw.url, 100, tier);
      const res = await register(key, wordCount(endpoint.url("/word-count")));
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({
        code: "feature_not_in_tier",
        required_tier: "business",
      });
      expect((await call(`${gw.url}/api/v1/custom-tools`, { key })).status).toBe(403);
    }
  });

  it("is registered and deleted by an unrestricted key only: a limited key cannot point the account's calls elsewhere (403 unrestricted_key_required)", async () => {
    const { key } = await fundedAccount(gw.url, 100, "business");
    expect((await register(key, wordCount(endpoint.url("/word-count")))).status).toBe(201);
    const limited = (
      await call(`${gw.url}/api/v1/keys`, { key, body: { allowed_tools: ["word-count"] } })
    ).body;
    const attempts = [
      await call(`${gw.url}/api/v1/custom-tools/word-count`, {
        key: limited.key,
        method: "DELETE",
      }),
      await register(limited.key, wordCount(plain.url("/echo"), { name: "word-count-2" })),
    ];
    expect(attempts.map((r) => [r.status, r.body.error?.code])).toEqual(
      Array(2).fill([403, "unrestricted_key_required"]),
    );
    // It still reads the tools and calls the one it is allowed.
    expect(
      (await call(`${gw.url}/api/v1/custom-tools`, { key: limited.key })).body.data.map(
        (t: { name: string }) => t.name,
      ),
    ).toEqual(["word-count"]);
    const called = await callTool(gw.url, limited.key, "word-count", { text: "still here" });
    expect([called.status, called.body]).toEqual([200, { words: 2 }]);
  });

  it("stops running when its account leaves Business (403, nothing charged, the endpoint not called) and runs again after an upgrade", async () => {
    const { accountId, key } = await fundedAccount(gw.url, 100, "business");
    expect((await register(key, wordCount(endpoint.url("/word-count")))).status).toBe(201);
    const before = endpoint.at("/word-count").length;
    await admin(gw.url, `/accounts/${accountId}/tier`, { method: "PUT", body: { tier: "pro" } });
    const rest = await callTool(gw.url, key, "word-count", { text: "one two" });
    expect(rest.status).toBe(403);
    expect(rest.body.error).toMatchObject({
      code: "feature_not_in_tier",
      required_tier: "business",
    });
    expect(await mcpErrorCode(key, "word-count", { text: "one two" })).toBe("feature_not_in_tier");
    expect(endpoint.at("/word-count").length).toBe(before);
    expect(await balanceOf(gw.url, key)).toBe(100);
    // Another key of the same account id but a forged secret hears nothing about the tool.
    const forged = `${key.slice(0, key.lastIndexOf("_") + 1)}${"x".repeat(key.length - key.lastIndexOf("_") - 1)}`;
    expect((await callTool(gw.url, forged, "word-count", { text: "one two" })).status).toBe(401);
    await admin(gw.url, `/accounts/${accountId}/tier`, {
      method: "PUT",
      body: { tier: "business" },
    });
    expect((await callTool(gw.url, key, "word-count", { text: "one two" })).body).toEqual({
      words: 2,
    });
  });

  it("may be deleted by an account moved off Business, which keeps its tools until then", async () => {
    const { accountId, key } = await fundedAccount(gw.url, 100, "business");
    expect((await register(key, wordCount(endpoint.url("/word-count")))).status).toBe(201);
    await admin(gw.url, `/accounts/${accountId}/tier`, { method: "PUT", body: { tier: "free" } });
    const removed = await call(`${gw.url}/api/v1/custom-tools/word-count`, {
      key,
      method: "DELETE",
    });
    expect([removed.status, removed.body]).toEqual([200, { name: "word-count", deleted: true }]);
    await admin(gw.url, `/accounts/${accountId}/tier`, {
      method: "PUT",
      body: { tier: "business" },
    });
    expect((await callTool(gw.url, key, "word-count", { text: "one two" })).status).toBe(404);
  });

  it("is listed only while its account's tier has custom endpoints: not by GET /v1/tools, category=custom, the categories, MCP tools/list nor search_tools after a move off Business", async () => {
    const { accountId, key } = await fundedAccount(gw.url, 100, "business");
    expect(
      (await register(key, wordCount(endpoint.url("/word-count"), { name: "zebra-count" }))).status,
    ).toBe(201);
    const names = (res: { body: any }) => res.body.data.map((t: { name: string }) => t.name);
    const customLine = async () =>
      (await call(`${gw.url}/v1/tools/categories`, { key })).body.data.find(
        (c: { name: string }) => c.name === "custom",
      );
    const mcpListed = async () => {
      const client = await mcpClient(key);
      try {
        const listed = (await client.listTools()).tools.map((t) => t.name);
        const found = await client.callTool({
          name: "search_tools",
          arguments: { query: "zebra", limit: 64 },
        });
        return {
          listed: listed.includes("zebra-count"),
          found: (found.structuredContent as { tools: { name: string }[] }).tools.map(
            (t) => t.name,
          ),
        };
      } finally {
        await client.close();
      }
    };
    expect(names(await call(`${gw.url}/v1/tools?q=zebra`, { key }))).toEqual(["zebra-count"]);
    expect(names(await call(`${gw.url}/v1/tools?category=custom`, { key }))).toEqual([
      "zebra-count",
    ]);
    expect(await customLine()).toMatchObject({ name: "custom", tools: 1 });
    expect(await mcpListed()).toEqual({ listed: true, found: ["zebra-count"] });

    // Free has no MCP at all; Starter and Pro have MCP but no custom endpoints.
    for (const tier of ["free", "starter", "pro"]) {
      await admin(gw.url, `/accounts/${accountId}/tier`, { method: "PUT", body: { tier } });
      expect(names(await call(`${gw.url}/v1/tools`, { key })), tier).not.toContain("zebra-count");
      expect(names(await call(`${gw.url}/v1/tools?q=zebra`, { key })), tier).toEqual([]);
      expect(names(await call(`${gw.url}/v1/tools?category=custom`, { key })), tier).toEqual([]);
      expect(await customLine(), tier).toBeUndefined();
      // Shown by name as it is called: 403, as the OpenAPI document declares.
      expect((await call(`${gw.url}/v1/tools/zebra-count`, { key })).status, tier).toBe(403);
      if (tier !== "free") expect(await mcpListed(), tier).toEqual({ listed: false, found: [] });
    }
    // Kept, and listed again once the account is back on Business.
    await admin(gw.url, `/accounts/${accountId}/tier`, {
      method: "PUT",
      body: { tier: "business" },
    });
    expect(names(await call(`${gw.url}/v1/tools?q=zebra`, { key }))).toEqual(["zebra-count"]);
    expect(await mcpListed()).toEqual({ listed: true, found: ["zebra-count"] });
  });

  it("is of category custom: a filter of GET /v1/tools and MCP search_tools, and a line of the categories with its count, for its account only", async () => {
    const owner = await fundedAccount(gw.url, 100, "business");
    for (const name of ["custom-one", "custom-two"])
      expect(
        (await register(owner.key, wordCount(endpoint.url("/word-count"), { name }))).status,
      ).toBe(201);
    const mine = await call(`${gw.url}/v1/tools?category=custom`, { key: owner.key });
    expect(mine.status).toBe(200);
    expect(mine.body.data.map((t: any) => [t.name, t.category, t.private])).toEqual([
      ["custom-one", "custom", true],
      ["custom-two", "custom", true],
    ]);
    const searched = await call(`${gw.url}/v1/tools?category=custom&q=words`, { key: owner.key });
    expect(searched.body.data.map((t: any) => t.name).sort()).toEqual(["custom-one", "custom-two"]);
    const categories = (await call(`${gw.url}/v1/tools/categories`, { key: owner.key })).body.data;
    expect(categories.at(-1)).toMatchObject({ name: "custom", tools: 2 });
    expect(categories.filter((c: any) => c.name === "custom")).toHaveLength(1);
    const client = await mcpClient(owner.key);
    try {
      const found = await client.callTool({
        name: "search_tools",
        arguments: { query: "count", category: "custom", limit: 64 },
      });
      expect(found.isError).toBeFalsy();
      expect(
        (found.structuredContent as { tools: { name: string }[] }).tools.map((t) => t.name).sort(),
      ).toEqual(["custom-one", "custom-two"]);
    } finally {
      await client.close();
    }
    // Without a key, or for an account with no tools of its own: an empty list, and no such line.
    const other = await fundedAccount(gw.url, 100, "business");
    for (const key of [undefined, other.key]) {
      const res = await call(`${gw.url}/v1/tools?category=custom`, { key });
      expect([res.status, res.body.data], String(key)).toEqual([200, []]);
      const lines = (await call(`${gw.url}/v1/tools/categories`, { key })).body.data;
      expect(lines.map((c: any) => c.name)).not.toContain("custom");
      expect(lines.reduce((n: number, c: any) => n + c.tools, 0)).toBe(65); // 64 and the operator's
    }
    // A key sent is checked, as GET /v1/tools checks it.
    const forged = `${owner.key.slice(0, -4)}zzzz`;
    expect((await call(`${gw.url}/v1/tools/categories`, { key: forged })).status).toBe(401);
  });

  it("must not take a public tool's name, nor one the account already uses", async () => {
    const { key } = await fundedAccount(gw.url, 100, "business");
    for (const name of ["hash", "qr", "shout"]) {
      const res = await register(key, wordCount(endpoint.url("/word-count"), { name }));
      expect(res.status).toBe(409);
      expect(res.body.error).toMatchObject({ code: "tool_name_taken", param: "name" });
    }
    expect(
      (await register(key, wordCount(endpoint.url("/word-count"), { name: "categories" }))).body
        .error.param,
    ).toBe("name");
    expect((await register(key, wordCount(endpoint.url("/word-count")))).status).toBe(201);
    expect((await register(key, wordCount(endpoint.url("/word-count")))).body.error.code).toBe(
      "tool_name_taken",
    );
  });

  it("refuses schemas that are not JSON Schema, too large or too deep, and URLs that are not https", async () => {
    const { key } = await fundedAccount(gw.url, 100, "business");
    const bad = async (extra: Record<string, unknown>, param: string) => {
      const res = await register(key, wordCount(endpoint.url("/word-count"), extra));
      expect(res.status, JSON.stringify(res.body)).toBe(422);
      expect(res.body.error.param).toBe(param);
    };
    await bad(
      { input_schema: { type: "object", properties: { a: { type: "strnig" } } } },
      "input_schema",
    );
    await bad({ input_schema: { type: "array" } }, "input_schema");
    // A $ref cycle that never reaches a value: every call would overflow the stack (500).
    await bad({ input_schema: { type: "object", $ref: "#" } }, "input_schema");
    await bad(
      { output_schema: { $ref: "#/$defs/a", $defs: { a: { $ref: "#" } } } },
      "output_schema",
    );
    await bad(
      { output_schema: { type: "object", properties: { a: { pattern: "(?<=x)y" } } } },
      "output_schema",
    ); // lookbehind: not RE2
    let deep: Record<string, unknown> = { type: "string" };
    for (let i = 0; i < 20; i++) deep = { type: "object", properties: { a: deep } };
    await bad({ input_schema: deep }, "input_schema");
    await bad(
      { input_schema: { type: "object", description: "x".repeat(40_000) } },
      "input_schema",
    );
    // A format with no check: Ajv skipped it (a line on stderr), and the field was never checked.
    const unknownFormat = await register(
      key,
      wordCount(endpoint.url("/word-count"), {
        input_schema: {
          type: "object",
          properties: { at: { type: "string", format: "datetime" } },
        },
      }),
    );
    expect(unknownFormat.status).toBe(422);
    expect(unknownFormat.body.error).toMatchObject({
      code: "validation_failed",
      param: "input_schema",
    });
    expect(unknownFormat.body.error.message).toMatch(
      /unknown format "datetime" at "#\/properties\/at"/,
    );
    await bad({ url: "ftp://localhost/tool" }, "url");
    await bad({ url: "https://user:pass@localhost/tool" }, "url");
    await bad({ url: "https://1.1.1.1:0/tool" }, "url"); // port 0: the call would go to 443
    await bad({ url: "https://169.254.169.254/latest/meta-data" }, "url"); // link-local metadata: never, even in development
    await bad({ price_credits: 0 }, "price_credits");
    await bad({ timeout_ms: 60_000 }, "timeout_ms");
    expect((await call(`${gw.url}/api/v1/custom-tools`, { key })).body.data).toEqual([]);
  });

  it("runs its patterns on RE2: a catastrophic pattern cannot stall the gateway", async () => {
    const { key } = await fundedAccount(gw.url, 100, "business");
    const schema = {
      type: "object",
      properties: { text: { type: "string", pattern: "^(a+)+$" } },
      required: ["text"],
    };
    expect(
      (
        await register(
          key,
          wordCount(endpoint.url("/word-count"), { name: "redos", input_schema: schema }),
        )
      ).status,
    ).toBe(201);
    const started = Date.now();
    const res = await callTool(gw.url, key, "redos", { text: `${"a".repeat(40)}!` });
    expect(res.status).toBe(422);
    expect(Date.now() - started).toBeLessThan(1000);
    expect((await callTool(gw.url, key, "redos", { text: "aaaa" })).body).toEqual({ words: 1 });
  });

  it("refuses at registration a schema whose checks of one value could stall the gateway", async () => {
    const { key } = await fundedAccount(gw.url, 100, "business");
    const refused = async (
      schema: Record<string, unknown>,
      reason: RegExp,
      param = "input_schema",
    ) => {
      const res = await register(
        key,
        wordCount(endpoint.url("/word-count"), { name: "costly", [param]: schema }),
      );
      expect(res.status, JSON.stringify(res.body)).toBe(422);
      expect(res.body.error).toMatchObject({ code: "validation_failed", param });
      expect(res.body.error.message).toMatch(reason);
    };
    // Each $defs entry an anyOf of two refs to the next: 2^22 checks of {"a":1} (the probe's schema).
    const defs: Record<string, unknown> = { d22: { type: "string" } };
    for (let i = 0; i < 22; i++)
      defs[`d${i}`] = { anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
    await refused(
      { type: "object", $defs: defs, properties: { a: { not: { $ref: "#/$defs/d0" } } } },
      /more than 2000 schema keywords/,
    );
    // A cycle that comes back at the same place in the input: Ajv recurses until the stack runs out.
    await refused(
      { type: "object", properties: { a: { allOf: [{ $ref: "#/properties/a" }] } } },
      /at the same place in the input/,
    );
    // A recursion that applies itself twice to one member: doubles per level of nesting.
    await refused(
      {
        type: "object",
        $defs: {
          t: { anyOf: [{ $ref: "#/$defs/p" }, { $ref: "#/$defs/p" }] },
          p: { properties: { c: { $ref: "#/$defs/t" } } },
        },
        properties: { a: { $ref: "#/$defs/t" } },
      },
      /multiply with each level/,
    );
    // uniqueItems compares items pairwise (quadratic) unless they are typed as scalars.
    await refused(
      { type: "object", properties: { a: { type: "array", uniqueItems: true } } },
      /uniqueItems.*maxItems/,
      "output_schema",
    );
    await refused(
      { type: "object", properties: { a: { type: "array", uniqueItems: true, maxItems: 10_000 } } },
      /uniqueItems.*maxItems/,
    );
    // Cheap to check, dear to bound: 500 $refs to one node of 1,000 properties (the walk's own work).
    const names = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`p${i}`, {}]));
    const refs = Object.fromEntries(
      Array.from({ length: 500 }, (_, i) => [`r${i}`, { $ref: "#/$defs/big" }]),
    );
    await refused(
      { type: "object", $defs: { big: { properties: names } }, properties: refs },
      /too intricate to bound/,
    );
    expect((await call(`${gw.url}/api/v1/custom-tools`, { key })).body.data).toEqual([]);
  });

  it("keeps a tool stored before its schema's rule in the account's lists, refusing its calls until it is registered again", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 100, "business");
    const defs: Record<string, unknown> = { d22: { type: "string" } };
    for (let i = 0; i < 22; i++)
      defs[`d${i}`] = { anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
    const tool = wordCount(endpoint.url("/word-count"), { name: "stored-costly" });
    expect(
      await gw.services.store.addCustomTool(
        {
          accountId,
          name: tool.name,
          title: tool.name,
          description: tool.description,
          url: tool.url,
          inputSchema: {
            type: "object",
            $defs: defs,
            properties: { a: { not: { $ref: "#/$defs/d0" } } },
          },
          outputSchema: tool.output_schema,
          priceCredits: tool.price_credits,
          timeoutMs: tool.timeout_ms,
          createdAt: Date.now(),
        },
        100,
      ),
    ).toBe("added");
    const listed = await call(`${gw.url}/api/v1/custom-tools`, { key });
    expect([listed.status, listed.body.data.map((t: { name: string }) => t.name)]).toEqual([
      200,
      ["stored-costly"],
    ]);
    expect((await call(`${gw.url}/v1/tools/stored-costly`, { key })).status).toBe(200);
    const before = await balanceOf(gw.url, key);
    const res = await callTool(gw.url, key, "stored-costly", { a: 1 });
    expect(res.status).toBe(422);
    expect(res.body.error.message).toContain("This tool's schemas are no longer accepted");
    expect(await balanceOf(gw.url, key)).toBe(before);
    expect(
      (await call(`${gw.url}/api/v1/custom-tools/stored-costly`, { key, method: "DELETE" })).status,
    ).toBeLessThan(300);
  });

  it("accepts a realistic complex schema (a recursive tree, nested objects, anyOf of shapes) and validates calls with it", async () => {
    const { key } = await fundedAccount(gw.url, 100, "business");
    const schema = {
      type: "object",
      $defs: {
        node: {
          type: "object",
          properties: {
            name: { type: "string", maxLength: 100 },
            tags: { type: "array", items: { type: "string" }, uniqueItems: true },
            children: { type: "array", items: { $ref: "#/$defs/node" } },
            shape: { $ref: "#/$defs/shape" },
          },
          required: ["name"],
          additionalProperties: false,
        },
        shape: {
          anyOf: [
            {
              type: "object",
              properties: { kind: { const: "circle" }, r: { type: "number", minimum: 0 } },
              required: ["kind", "r"],
            },
            {
              type: "object",
              properties: { kind: { const: "rect" }, w: { type: "number" }, h: { type: "number" } },
              required: ["kind", "w", "h"],
            },
            {
              type: "object",
              properties: {
                kind: { const: "group" },
                items: {
                  type: "array",
                  maxItems: 10,
                  uniqueItems: true,
                  items: { $ref: "#/$defs/shape" },
                },
              },
              required: ["kind", "items"],
            },
          ],
        },
      },
      properties: { text: { type: "string" }, tree: { $ref: "#/$defs/node" } },
      required: ["text"],
    };
    const tool = wordCount(endpoint.url("/word-count"), { name: "tree", input_schema: schema });
    expect((await register(key, tool)).status).toBe(201);
    const tree = {
      name: "root",
      tags: ["a", "b"],
      shape: {
        kind: "group",
        items: [
          { kind: "circle", r: 1 },
          { kind: "rect", w: 1, h: 2 },
        ],
      },
      children: [{ name: "leaf", children: [{ name: "deeper", shape: { kind: "circle", r: 2 } }] }],
    };
    expect((await callTool(gw.url, key, "tree", { text: "two words", tree })).body).toEqual({
      words: 2,
    });
    const bad = await callTool(gw.url, key, "tree", {
      text: "x",
      tree: { ...tree, children: [{ name: "leaf", children: [{ name: 3 }] }] },
    });
    expect([bad.status, bad.body.error?.param]).toEqual([422, "tree.children.0.children.0.name"]);
    const twice = await callTool(gw.url, key, "tree", {
      text: "x",
      tree: { name: "r", tags: ["a", "a"] },
    });
    expect(twice.status).toBe(422);
  });

  it("may be plain http to loopback only while the development setting allows it", async () => {
    const { key } = await fundedAccount(gw.url, 100, "business");
    const echo = { ...wordCount(plain.url("/echo"), { name: "echo" }), output_schema: undefined };
    expect((await register(key, echo)).status).toBe(201);
    expect((await callTool(gw.url, key, "echo", { text: "hi" })).body).toEqual({
      echo: { text: "hi" },
    });
    expect(
      (await register(key, { ...echo, name: "echo-public", url: "http://example.com/echo" })).body
        .error,
    ).toMatchObject({ code: "validation_failed", param: "url" });
  });
});

describe("the SSRF guard on custom tools, with private targets not allowed", () => {
  it("refuses a loopback endpoint at registration, keeping no compiled schema of it", async () => {
    const { key } = await fundedAccount(strict.url, 100, "business");
    const kept = strict.services.upstream.schemas.keptBytes;
    for (const url of [
      endpoint.url("/word-count"),
      `https://127.0.0.1:${endpoint.port}/word-count`,
      `https://[::1]:${endpoint.port}/x`,
      plain.url("/echo"),
    ]) {
      const res = await register(key, wordCount(url), strict.url);
      expect(res.status, url).toBe(422);
      expect(res.body.error.param).toBe("url");
    }
    // Refused registrations fill no cache: a validator takes ~32 times its schema in heap.
    expect(strict.services.upstream.schemas.keptBytes).toBe(kept);
  });

  it("refuses to call one registered while they were allowed: 502, refunded", async () => {
    const { key } = await fundedAccount(gw.url, 100, "business");
    await register(key, wordCount(endpoint.url("/word-count"), { name: "was-allowed" }));
    await register(
      key,
      wordCount(`https://127.0.0.1:${endpoint.port}/word-count`, { name: "was-allowed-ip" }),
    );
    const before = endpoint.at("/word-count").length;
    for (const name of ["was-allowed", "was-allowed-ip"]) {
      const res = await callTool(strict.url, key, name, { text: "a" });
      expect(res.status).toBe(502);
      expect(res.body.error.code).toBe("tool_failed");
      // A name is said not to resolve to a public address; the IP the tool names, its range.
      expect(res.body.error.message).toMatch(/not resolve to a public address|loopback range/);
    }
    expect(endpoint.at("/word-count").length).toBe(before);
    expect(await balanceOf(gw.url, key)).toBe(100);
  });
});

describe("an operator's upstream tool (TOOLS_FILE)", () => {
  it("is public: listed, in the OpenAPI document, on the pages, and in MCP for every account", async () => {
    const listed = (await call(`${gw.url}/v1/tools`)).body.data.find(
      (t: { name: string }) => t.name === "shout",
    );
    expect(listed).toMatchObject({
      title: "Shout",
      category: "language",
      price: { credits: 4 },
      endpoint: "/v1/tools/shout",
      available: true,
    });
    expect(listed.private).toBeUndefined();
    expect((await call(`${gw.url}/v1/tools?q=caps`)).body.data[0].name).toBe("shout");
    const doc = (await call(`${gw.url}/openapi.json`)).body;
    expect(doc.paths["/v1/tools/shout"].post).toMatchObject({
      summary: "Shout",
      "x-price": { credits: 4 },
    });
    expect(
      doc.paths["/v1/tools/shout"].post.requestBody.content["application/json"].schema,
    ).toMatchObject({ required: ["text"] });
    // The pages list it beside the catalogue's tools.
    expect(await (await fetch(`${gw.url}/llms.txt`)).text()).toMatch(
      /^- \[shout\]\(\S+\/docs#tool-shout\): Upper-cases a text/m,
    );
    const { key } = await fundedAccount(gw.url, 100, "starter");
    const client = await mcpClient(key);
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toContain("shout");
      expect(
        (await client.callTool({ name: "shout", arguments: { text: "mcp" } })).structuredContent,
      ).toEqual({ upper: "MCP" });
    } finally {
      await client.close();
    }
  });

  it("is called with a key and charged its price; its upstream gets the operator's header", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    const res = await callTool(gw.url, key, "shout", { text: "hello" });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ upper: "HELLO" });
    expect(await balanceOf(gw.url, key)).toBe(96);
    expect(endpoint.at("/upper").at(-1)!.headers.authorization).toBe("Bearer upstream-secret");
    expect(
      (await callTool(gw.url, key, "shout", { text: "x".repeat(101) })).body.error,
    ).toMatchObject({ code: "validation_failed", param: "text" });
    expect(await balanceOf(gw.url, key)).toBe(96);
  });

  it("fails an answer nested deeper than a request body may be, over REST and MCP alike: 502 tool_failed, refunded", async () => {
    const { key } = await fundedAccount(gw.url, 100, "starter");
    const rest = await callTool(gw.url, key, "shout", { text: "deep" });
    expect([rest.status, rest.body.error.code]).toEqual([502, "tool_failed"]);
    expect(rest.body.error.message).toMatch(/nests deeper than 64 levels/);
    expect(await mcpErrorCode(key, "shout", { text: "deep" })).toBe("tool_failed");
    expect(await balanceOf(gw.url, key)).toBe(100);
  });
});
