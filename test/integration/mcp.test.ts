import type { Client } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TOOLS } from "../../src/tools/catalogue/index.js";
import {
  balanceOf,
  call,
  callTool,
  eventsOf,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";
import { startFakeLlm } from "../helpers/fake-providers.js";
import { connectMcp, postMcp, rpcMessagesOf } from "../helpers/mcp.js";

let gw: TestGateway;
let llm: Awaited<ReturnType<typeof startFakeLlm>>;
beforeAll(async () => {
  llm = await startFakeLlm();
  gw = await startGateway({ workerEnv: { AI_BASE_URL: `${llm.url}/v1`, AI_MODEL: "m" } });
});
afterAll(async () => {
  await gw.stop();
  await llm.stop();
});

const ERAS = { "2025 (legacy)": undefined, "2026-07-28": { mode: { pin: "2026-07-28" } } } as const;

const connect = (key: string, era: keyof typeof ERAS): Promise<Client> =>
  connectMcp(gw.url, key, ERAS[era] ? { versionNegotiation: ERAS[era] } : {});

/** An error result's REST error body, carried as JSON in its first text content. */
const errorOf = (result: { content?: unknown }) =>
  JSON.parse((result.content as { text: string }[])[0]!.text);

const ledger = async (key: string) =>
  (
    (await call(`${gw.url}/api/v1/usage?limit=100`, { key })).body.data as {
      kind: string;
      amount: number;
      reason: string;
      tool: string | null;
    }[]
  ).map(({ kind, amount, reason, tool }) => ({ kind, amount, reason, tool }));

describe.each(Object.keys(ERAS) as (keyof typeof ERAS)[])("the official MCP client, %s", (era) => {
  it("lists every tool with its schemas and price", async () => {
    const { key } = await fundedAccount(gw.url, 100, "starter");
    const client = await connect(key, era);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(
        [...TOOLS.map((t) => t.name), "search_tools"].sort(),
      );
      const hash = tools.find((t) => t.name === "hash")!;
      expect(hash.inputSchema).toMatchObject({
        type: "object",
        properties: { text: { type: "string" } },
        required: ["text"],
      });
      expect(hash.outputSchema).toMatchObject({
        type: "object",
        required: ["algorithm", "encoding", "digest"],
      });
      expect(hash._meta?.["toolgate/price"]).toEqual({
        credits: 1,
        usd: "0.002",
        usdc_atomic: "2000",
      });
      // Annotations: every catalogue tool changes nothing; those that read the web or ask a
      // provider reach the open world.
      expect(hash.annotations).toEqual({ readOnlyHint: true, openWorldHint: false });
      for (const name of ["web-fetch", "ai-summarize", "web-search"])
        expect(tools.find((t) => t.name === name)!.annotations).toEqual({
          readOnlyHint: true,
          openWorldHint: true,
        });
      const search = tools.find((t) => t.name === "search_tools")!;
      expect(search.outputSchema).toMatchObject({ required: ["tools"] });
      // The SDK checks a structured result against the tool's output schema.
      const found = await client.callTool({ name: "search_tools", arguments: { query: "hash" } });
      expect((found.structuredContent as { tools: { name: string }[] }).tools[0]!.name).toBe(
        "hash",
      );
    } finally {
      await client.close();
    }
  });

  it("lists to a key limited to some tools only those (and search_tools), finds only those, and refuses the others", async () => {
    const { key } = await fundedAccount(gw.url, 100, "starter");
    const created = await call(`${gw.url}/api/v1/keys`, {
      key,
      body: { allowed_tools: ["hash", "uuid"] },
    });
    expect(created.status).toBe(201);
    const limited = await connect(created.body.key, era);
    const everyTool = await connect(key, era);
    try {
      const { tools } = await limited.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(["hash", "id-generate", "search_tools"]);
      const search = async (client: Client, query: string) =>
        (
          (await client.callTool({ name: "search_tools", arguments: { query } }))
            .structuredContent as { tools: { name: string }[] }
        ).tools.map((t) => t.name);
      expect(await search(limited, "hash")).toEqual(["hash"]);
      expect(await search(limited, "markdown")).toEqual([]);
      expect(await search(everyTool, "markdown")).toContain("markdown-to-html");
      const refused = await limited.callTool({
        name: "markdown-to-html",
        arguments: { markdown: "# hi" },
      });
      expect(refused.isError).toBe(true);
      expect(errorOf(refused).error.code).toBe("tool_not_allowed");
      // A change to the key's controls shows in its very next list; its other controls (an
      // expiry) leave the list whole.
      await call(`${gw.url}/api/v1/keys/${created.body.id}`, {
        key,
        method: "PATCH",
        body: { allowed_tools: null, expires_at: new Date(Date.now() + 3_600_000).toISOString() },
      });
      expect((await limited.listTools()).tools.length).toBe(TOOLS.length + 1);
      expect((await everyTool.listTools()).tools.length).toBe(TOOLS.length + 1);
    } finally {
      await limited.close();
      await everyTool.close();
    }
  });

  it("calls a tool: structured result, and the balance moves exactly as for REST", async () => {
    const { key } = await fundedAccount(gw.url, 100, "starter");
    const client = await connect(key, era);
    try {
      const result = await client.callTool({ name: "hash", arguments: { text: "hello world" } });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toEqual({
        algorithm: "sha256",
        encoding: "hex",
        digest: "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9",
      });
      expect(JSON.parse((result.content as { text: string }[])[0]!.text)).toEqual(
        result.structuredContent,
      );
      expect(await balanceOf(gw.url, key)).toBe(99);
      expect((await callTool(gw.url, key, "hash", { text: "hello world" })).body).toEqual(
        result.structuredContent,
      );
      expect(await balanceOf(gw.url, key)).toBe(98);
    } finally {
      await client.close();
    }
  });

  it("replays a call repeated with the same _meta Idempotency-Key, charged once, as REST's header does", async () => {
    const { key } = await fundedAccount(gw.url, 100, "starter");
    const client = await connect(key, era);
    try {
      const generate = (idempotencyKey?: string) =>
        client.callTool({
          name: "id-generate",
          arguments: { kind: "uuid-v4" },
          ...(idempotencyKey ? { _meta: { "toolgate/idempotency-key": idempotencyKey } } : {}),
        });
      const first = await generate("retry-after-lost-answer");
      const again = await generate("retry-after-lost-answer");
      expect(again.structuredContent).toEqual(first.structuredContent); // the stored answer
      expect(await balanceOf(gw.url, key)).toBe(99);
      // The same key over REST is the same call: replayed, uncharged.
      const rest = await callTool(
        gw.url,
        key,
        "id-generate",
        { kind: "uuid-v4" },
        { "idempotency-key": "retry-after-lost-answer" },
      );
      expect(rest.body).toEqual(first.structuredContent);
      // Without a key, a new call; another input under the key, a conflict; a bad key, refused.
      expect((await generate()).structuredContent).not.toEqual(first.structuredContent);
      const conflict = await client.callTool({
        name: "id-generate",
        arguments: { kind: "ulid" },
        _meta: { "toolgate/idempotency-key": "retry-after-lost-answer" },
      });
      expect([
        conflict.isError,
        errorOf(conflict).error.code,
        errorOf(conflict).error.param,
      ]).toEqual([true, "idempotency_conflict", '_meta["toolgate/idempotency-key"]']);
      const bad = await client.callTool({
        name: "id-generate",
        arguments: { kind: "uuid-v4" },
        _meta: { "toolgate/idempotency-key": "no spaces allowed" },
      });
      expect([bad.isError, errorOf(bad).error.code, errorOf(bad).error.param]).toEqual([
        true,
        "validation_failed",
        '_meta["toolgate/idempotency-key"]',
      ]);
      expect(await balanceOf(gw.url, key)).toBe(98);
    } finally {
      await client.close();
    }
  });

  it("answers insufficient credits, invalid input and a failing worker as isError with the REST codes, uncharged", async () => {
    const { key } = await fundedAccount(gw.url, 25, "starter");
    const client = await connect(key, era);
    try {
      llm.state.status = 500;
      const failed = await client.callTool({ name: "summarize", arguments: { text: "x" } });
      llm.state.status = 200;
      expect(failed.isError).toBe(true);
      expect(failed.structuredContent).toBeUndefined();
      expect(errorOf(failed)).toMatchObject({ error: { code: "tool_failed" } });

      const invalid = await client.callTool({ name: "hash", arguments: { text: 42 } });
      expect(errorOf(invalid)).toMatchObject({
        error: { code: "validation_failed", param: "text" },
      });
      expect(await balanceOf(gw.url, key)).toBe(25);

      await client.callTool({ name: "ai-generate", arguments: { prompt: "one" } });
      await client.callTool({ name: "ai-generate", arguments: { prompt: "two" } });
      const poor = await client.callTool({ name: "ai-generate", arguments: { prompt: "three" } });
      expect(poor.isError).toBe(true);
      expect(errorOf(poor)).toMatchObject({
        error: { code: "insufficient_credits", type: "payment_error" },
      });
      expect(await balanceOf(gw.url, key)).toBe(5);

      expect(errorOf(await client.callTool({ name: "teleport", arguments: {} }))).toMatchObject({
        error: { code: "tool_not_found" },
      });
    } finally {
      await client.close();
    }
  });
});

describe("one call path for both doors", () => {
  it("the same tool call over MCP and over REST writes the same ledger entries and events", async () => {
    const viaMcp = await fundedAccount(gw.url, 100, "starter");
    const viaRest = await fundedAccount(gw.url, 100, "starter");
    const client = await connect(viaMcp.key, "2025 (legacy)");
    try {
      await client.callTool({ name: "hash", arguments: { text: "same" } });
      llm.state.status = 502;
      await client.callTool({ name: "ai-generate", arguments: { prompt: "fails" } });
      await callTool(gw.url, viaRest.key, "hash", { text: "same" });
      await callTool(gw.url, viaRest.key, "ai-generate", { prompt: "fails" });
    } finally {
      llm.state.status = 200;
      await client.close();
    }
    expect(await ledger(viaMcp.key)).toEqual(await ledger(viaRest.key));
    const events = async (accountId: string) =>
      (await eventsOf(gw.services.store, accountId, 2))
        .filter((e) => e.event !== "agent.registered")
        .map((e) => ({ event: e.event, data: { ...e.data, request_id: undefined } }));
    expect(await events(viaMcp.accountId)).toEqual(await events(viaRest.accountId));
    expect((await events(viaMcp.accountId)).map((e) => e.event)).toContain("tool.error");
  });
});

describe("before MCP runs", () => {
  const initialize = (headers: Record<string, string>) =>
    fetch(`${gw.url}/mcp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...headers,
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "raw", version: "1" },
        },
      }),
    });

  it("answers no key and a bad key with 401", async () => {
    for (const headers of [{}, { "x-api-key": "tg_live_nope" }] as Record<string, string>[]) {
      const res = await initialize(headers);
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code).toMatch(
        /missing_api_key|invalid_api_key/,
      );
    }
  });

  it("answers the Free tier with 403 feature_not_in_tier, naming the tier that has MCP", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    const res = await initialize({ "x-api-key": key });
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({
      error: { code: "feature_not_in_tier", required_tier: "starter" },
    });
  });

  it("counts a Free key's refused batch as one request, and answers it 403 even past its rate limit", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    const send = async (body: unknown) => {
      const { status, text } = await postMcp(gw.url, key, body);
      return [status, JSON.parse(text!).error.code];
    };
    const pings = Array.from({ length: 59 }, (_, i) => ({ jsonrpc: "2.0", id: i, method: "ping" }));
    expect(await send(pings)).toEqual([403, "feature_not_in_tier"]);
    // One request of the Free tier's 60 a minute, not 59: the account's REST calls go on.
    const account = await call(`${gw.url}/api/v1/account`, { key });
    expect([account.status, account.headers.get("ratelimit-remaining")]).toEqual([200, "58"]);
    // Past its limit, the refusal is still the tier's, not a rate limit a retry would wait out.
    for (let i = 0; i < 58; i++) await call(`${gw.url}/api/v1/account`, { key });
    expect(
      await send({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "hash", arguments: { text: "x" } },
      }),
    ).toEqual([403, "feature_not_in_tier"]);
  });

  it("counts a Free key's 403 in the account's window only, and shows that window", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    const from = { "x-forwarded-for": "198.51.100.201" }; // an address of its own
    const windowOf = (headers: Headers) =>
      [headers.get("ratelimit-policy"), headers.get("ratelimit-remaining")].join(" ");
    const before = await call(`${gw.url}/api/v1/account`, { key, headers: from });
    const left = Number(before.headers.get("ratelimit-remaining"));
    const refusals = [];
    for (let i = 1; i <= 3; i++) {
      const { status, headers } = await postMcp(
        gw.url,
        key,
        { jsonrpc: "2.0", id: i, method: "tools/list" },
        { headers: from },
      );
      refusals.push(`${status} ${windowOf(headers)}`);
    }
    // The account's window (60 a minute), one request each, not the address's anonymous one.
    expect(refusals).toEqual([1, 2, 3].map((n) => `403 60;w=60 ${left - n}`));
    // …which counted none of them: the address's first request without credentials leaves 599.
    const anonymous = await call(`${gw.url}/v1/tools/categories`, { headers: from });
    expect(windowOf(anonymous.headers)).toBe("600;w=60 599");
  });

  it("rejects a foreign Host header (DNS rebinding)", async () => {
    const { key } = await fundedAccount(gw.url, 100, "starter");
    const { request } = await import("node:http");
    const status = await new Promise<number>((resolve, reject) => {
      const url = new URL(`${gw.url}/mcp`);
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: "/mcp",
          method: "POST",
          headers: {
            host: "evil.example",
            "x-api-key": key,
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
          },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode!);
        },
      );
      req.on("error", reject);
      req.end(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }));
    });
    expect(status).toBe(403);
  });

  it("answers a body it cannot read as JSON-RPC: -32700 for JSON that does not parse, -32600 otherwise, with the HTTP status", async () => {
    const { key } = await fundedAccount(gw.url, 100, "starter");
    const post = (body: string, contentType = "application/json") =>
      fetch(`${gw.url}/mcp`, {
        method: "POST",
        headers: {
          "x-api-key": key,
          "content-type": contentType,
          accept: "application/json, text/event-stream",
        },
        body,
      });
    for (const [res, status, code] of [
      [await post("{nope"), 400, -32700],
      [await post("{}", "text/plain"), 415, -32600],
      [await post(JSON.stringify({ pad: "x".repeat(3_000_000) })), 413, -32600],
    ] as const) {
      expect([res.status, await res.json()]).toEqual([
        status,
        { jsonrpc: "2.0", error: { code, message: expect.any(String) }, id: null },
      ]);
    }
  });

  it("needs the Accept header of streamable HTTP", async () => {
    const { key } = await fundedAccount(gw.url, 100, "starter");
    const res = await initialize({ "x-api-key": key, accept: "application/json" });
    expect(res.status).toBe(406);
  });
});

describe("the rate limit over MCP", () => {
  /** Posts raw JSON-RPC; answers the status, what RateLimit-Remaining says, and the body. */
  const post = async (key: string, body: unknown) => {
    const { status, headers, text } = await postMcp(gw.url, key, body);
    return { status, remaining: Number(headers.get("ratelimit-remaining")), text: text! };
  };
  const ping = (id: number) => ({ jsonrpc: "2.0", id, method: "ping" });

  it("counts every message: each one of a batch, unknown tools, notifications and malformed messages", async () => {
    const { key } = await fundedAccount(gw.url, 100, "starter");
    const first = await post(key, ping(1));
    expect([first.status, first.remaining]).toEqual([200, 299]);
    const batch = await post(
      key,
      Array.from({ length: 100 }, (_, i) => ping(i)),
    );
    expect([batch.status, batch.remaining]).toEqual([200, 199]);
    const unknown = await post(key, {
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "teleport", arguments: {} },
    });
    expect([unknown.status, unknown.remaining, unknown.text.includes("tool_not_found")]).toEqual([
      200,
      198,
      true,
    ]);
    const notification = await post(key, {
      jsonrpc: "2.0",
      method: "tools/call",
      params: { name: "hash", arguments: { text: "x" } },
    });
    expect([notification.status, notification.remaining]).toEqual([202, 197]);
    const malformed = await post(key, { jsonrpc: "2.0" });
    expect([malformed.status, malformed.remaining]).toEqual([400, 196]);
    expect(await balanceOf(gw.url, key)).toBe(100); // that read counted too: 195 left
  });

  it("counts a tool call once, with its charge, whichever way it was named", async () => {
    const { key } = await fundedAccount(gw.url, 100, "starter");
    const call = await post(key, {
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "hash", arguments: { text: "x" } },
    });
    expect([call.status, call.remaining]).toEqual([200, 299]);
    const alias = await post(key, {
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "qr", arguments: { text: "x" } },
    });
    expect([alias.status, alias.remaining, alias.text.includes('"isError":true')]).toEqual([
      200,
      298,
      false,
    ]);
    expect(await balanceOf(gw.url, key)).toBe(98);
  });

  it("refuses a batch larger than what is left of the window, counting none of it", async () => {
    const { key } = await fundedAccount(gw.url, 100, "starter");
    const pings = (n: number) => Array.from({ length: n }, (_, i) => ping(i));
    expect((await post(key, pings(100))).remaining).toBe(200);
    // Over the 100 messages a batch may hold: refused whole before anything is counted.
    const tooLong = await post(key, pings(101));
    expect([tooLong.status, JSON.parse(tooLong.text).error]).toEqual([
      400,
      { code: -32600, message: "Invalid Request: Batch must not exceed 100 messages" },
    ]);
    expect((await post(key, pings(100))).remaining).toBe(100);
    expect((await post(key, pings(50))).remaining).toBe(50);
    const refused = await post(
      key,
      Array.from({ length: 51 }, (_, i) => ping(i)),
    );
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.text)).toMatchObject({ error: { code: "rate_limited" } });
    expect(
      (
        await post(
          key,
          Array.from({ length: 50 }, (_, i) => ping(i)),
        )
      ).remaining,
    ).toBe(0);
    expect((await post(key, ping(1))).status).toBe(429);
  });
});

describe("batches over MCP", () => {
  /** Posts a batch; answers the HTTP status and the JSON-RPC messages, or "no end" when the answer does not end within 3 s. */
  const batch = async (key: string, messages: unknown[]) => {
    const { status, text } = await postMcp(gw.url, key, messages, {
      signal: AbortSignal.timeout(3000),
    });
    return { status, messages: text === null ? "no end" : rpcMessagesOf(text) };
  };
  const hash = (id: number, text: string) => ({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name: "hash", arguments: { text } },
  });

  it("refuses a batch that repeats a request id, running and charging none of it", async () => {
    const { key } = await fundedAccount(gw.url, 100, "starter");
    const answer = await batch(key, [hash(1, "a"), hash(1, "b")]);
    expect(answer).toEqual({
      status: 400,
      messages: [
        {
          jsonrpc: "2.0",
          error: { code: -32600, message: "Bad Request: JSON-RPC batch repeats the request id 1" },
          id: null,
        },
      ],
    });
    expect(await balanceOf(gw.url, key)).toBe(100);
    // 1 and "1" are two ids: both calls are answered (and charged).
    const both = await batch(key, [hash(1, "a"), { ...hash(1, "b"), id: "1" }]);
    expect(Array.isArray(both.messages) && both.messages.map((m) => m.id)).toEqual([1, "1"]);
    expect(await balanceOf(gw.url, key)).toBe(98);
  });

  it("answers a call whose cancellation comes in the same batch, once charged", async () => {
    const { key } = await fundedAccount(gw.url, 100, "starter");
    const cancel = { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 7 } };
    const answer = await batch(key, [hash(7, "a"), cancel]);
    expect(answer.status).toBe(200);
    expect(answer.messages).toMatchObject([
      { id: 7, result: { structuredContent: { digest: expect.any(String) } } },
    ]);
    expect(await balanceOf(gw.url, key)).toBe(99);
  });

  it("answers a request that names the cancellation method (it has an id) like any unknown method: every id gets its response", async () => {
    const { key } = await fundedAccount(gw.url, 100, "starter");
    const request = {
      jsonrpc: "2.0",
      id: 1,
      method: "notifications/cancelled",
      params: { requestId: 2 },
    };
    const answer = await batch(key, [request, hash(2, "a")]);
    expect(answer.status).toBe(200);
    const messages = answer.messages as { id: unknown; error?: { code: number } }[];
    expect(messages.map((m) => m.id).sort()).toEqual([1, 2]);
    expect(messages.find((m) => m.id === 1)?.error?.code).toBe(-32601);
    expect(await balanceOf(gw.url, key)).toBe(99);
  });
});

describe("aliases over MCP", () => {
  it.each(Object.keys(ERAS) as (keyof typeof ERAS)[])(
    "calls a tool by its alias with the official client, %s",
    async (era) => {
      const { key } = await fundedAccount(gw.url, 100, "starter");
      const client = await connect(key, era);
      try {
        const byAlias = await client.callTool({
          name: "qr",
          arguments: { text: "hello", format: "svg" },
        });
        const byName = await client.callTool({
          name: "qr-code",
          arguments: { text: "hello", format: "svg" },
        });
        expect(byAlias.isError).toBeFalsy();
        expect(byAlias.structuredContent).toEqual(byName.structuredContent);
        expect((await ledger(key)).slice(0, 2).map((e) => e.tool)).toEqual(["qr-code", "qr-code"]);
      } finally {
        await client.close();
      }
    },
  );
});

describe("protocol revisions", () => {
  const rpc = async (key: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${gw.url}/mcp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "x-api-key": key,
        ...headers,
      },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    const data = text.startsWith("{")
      ? text
      : text
          .split("\n")
          .find((l) => l.startsWith("data: "))!
          .slice(6);
    return JSON.parse(data) as { result?: Record<string, unknown>; error?: unknown };
  };
  const initialize = (key: string, protocolVersion: string) =>
    rpc(key, {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion, capabilities: {}, clientInfo: { name: "raw", version: "1" } },
    });

  it.each(["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"])(
    "answers initialize at %s with that revision",
    async (version) => {
      const { key } = await fundedAccount(gw.url, 100, "starter");
      expect((await initialize(key, version)).result).toMatchObject({ protocolVersion: version });
    },
  );

  it("negotiates 2026-07-28 through server/discover, the newest revision the SDK serves", async () => {
    const { key } = await fundedAccount(gw.url, 100, "starter");
    const meta = {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
      "io.modelcontextprotocol/clientCapabilities": {},
    };
    const discovered = await rpc(
      key,
      { jsonrpc: "2.0", id: 1, method: "server/discover", params: { _meta: meta } },
      { "mcp-protocol-version": "2026-07-28", "mcp-method": "server/discover" },
    );
    expect(discovered.error).toBeUndefined();
    expect((discovered.result!.supportedVersions as string[])[0]).toBe("2026-07-28");
    const client = await connect(key, "2026-07-28");
    try {
      expect((await client.listTools()).tools.length).toBe(TOOLS.length + 1); // the catalogue and search_tools
    } finally {
      await client.close();
    }
  });

  it("answers initialize naming 2026-07-28 with 2025-11-25: that revision has no initialize, so the newest initialize-era one", async () => {
    const { key } = await fundedAccount(gw.url, 100, "starter");
    expect((await initialize(key, "2026-07-28")).result).toMatchObject({
      protocolVersion: "2025-11-25",
    });
  });
});
