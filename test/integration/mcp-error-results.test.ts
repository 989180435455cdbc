import {
  Client as ClientV2,
  StreamableHTTPClientTransport as TransportV2,
} from "@modelcontextprotocol/client";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TOOLS } from "../../src/tools/catalogue/index.js";
import { jsonSchemasOf } from "../../src/tools/views.js";
import { fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";

/**
 * Results every official MCP client accepts: the 1.x TypeScript SDK (`@modelcontextprotocol/sdk`,
 * the one most agents use) validates `structuredContent` against the tool's output schema even
 * on an error result, so an error result carrying the REST error body there made it throw
 * instead of returning the error. Both clients call every tool — its worked example, and a call
 * with bad arguments — plus an unknown tool, an unavailable tool, a call with no credits left and one over the rate limit.
 */
let gw: TestGateway;
beforeAll(async () => {
  // No search provider configured: web-search is listed unavailable, and refused as such.
  gw = await startGateway();
});
afterAll(async () => {
  await gw?.stop();
});

interface AnyClient {
  callTool(params: {
    name: string;
    arguments: Record<string, unknown>;
  }): Promise<{ isError?: boolean; content?: unknown; structuredContent?: unknown }>;
  close(): Promise<void>;
}

const CLIENTS: Record<string, (key: string) => Promise<AnyClient>> = {
  "official 1.x client (@modelcontextprotocol/sdk)": async (key) => {
    const client = new ClientV1({ name: "toolgate-test", version: "1.0.0" });
    await client.connect(
      new TransportV1(new URL(`${gw.url}/mcp`), { requestInit: { headers: { "x-api-key": key } } }),
    );
    return client as unknown as AnyClient;
  },
  "official v2 client (@modelcontextprotocol/client)": async (key) => {
    const client = new ClientV2({ name: "toolgate-test", version: "1.0.0" });
    await client.connect(
      new TransportV2(new URL(`${gw.url}/mcp`), { requestInit: { headers: { "x-api-key": key } } }),
    );
    return client as unknown as AnyClient;
  },
};

/** A readable error result: isError, the REST error body as JSON text, nothing the output schema could refuse. */
function expectErrorResult(result: Awaited<ReturnType<AnyClient["callTool"]>>, code: string) {
  expect(result.isError).toBe(true);
  expect(result.structuredContent).toBeUndefined();
  const body = JSON.parse((result.content as { type: string; text: string }[])[0]!.text);
  expect(body).toMatchObject({
    error: { code, message: expect.any(String), request_id: expect.stringMatching(/^req_/) },
  });
}

describe.each(Object.keys(CLIENTS))("the %s", (name) => {
  it("calls every tool: its worked example is answered (or refused readably), bad arguments are a readable error", async () => {
    const { key } = await fundedAccount(gw.url, 1000, "starter");
    const client = await CLIENTS[name]!(key);
    try {
      for (const tool of TOOLS) {
        const example =
          ((jsonSchemasOf(tool).input as { examples?: Record<string, unknown>[] }).examples ??
            [])[0] ?? {};
        const result = await client.callTool({ name: tool.name, arguments: example });
        // The AI tools have no provider configured here either: their refusal must be readable too.
        if (result.isError)
          expectErrorResult(
            result,
            JSON.parse((result.content as { text: string }[])[0]!.text).error.code,
          );
        else
          expect(result.structuredContent).toEqual(
            JSON.parse((result.content as { text: string }[])[0]!.text),
          );
        // A tool without its provider is refused as unavailable before its arguments are looked at.
        const refusal = gw.services.pools.unavailableReason(tool.name)
          ? "tool_unavailable"
          : "validation_failed";
        expectErrorResult(
          await client.callTool({ name: tool.name, arguments: { no_such_argument: [1, 2, 3] } }),
          refusal,
        );
      }
      expectErrorResult(
        await client.callTool({ name: "teleport", arguments: {} }),
        "tool_not_found",
      );
      // A name of any length is repeated clipped, never whole (a 100,000-character one was).
      const long = await client.callTool({ name: "x".repeat(100_000), arguments: {} });
      expectErrorResult(long, "tool_not_found");
      expect((long.content as { text: string }[])[0]!.text.length).toBeLessThan(1000);
      expectErrorResult(
        await client.callTool({ name: "web-search", arguments: { query: "x402" } }),
        "tool_unavailable",
      );
    } finally {
      await client.close();
    }
  }, 60_000);

  it("answers a call with no credits left as a readable error", async () => {
    const { key } = await fundedAccount(gw.url, 0, "starter");
    const client = await CLIENTS[name]!(key);
    try {
      for (let i = 0; i < 25; i++)
        await client.callTool({ name: "hash", arguments: { text: String(i) } });
      expectErrorResult(
        await client.callTool({ name: "hash", arguments: { text: "one more" } }),
        "insufficient_credits",
      );
    } finally {
      await client.close();
    }
  }, 30_000);

  it("answers a call over the key's rate limit as a readable error, and runs nothing", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 100, "starter");
    const client = await CLIENTS[name]!(key);
    try {
      // Use up the rest of the key's minute (Starter: 300 requests) with JSON-RPC batches of pings
      // (at most 100 messages each: a larger batch is refused before it is counted).
      const post = (body: unknown) =>
        fetch(`${gw.url}/mcp`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            "x-api-key": key,
          },
          body: JSON.stringify(body),
        });
      let left = Number(
        (await post({ jsonrpc: "2.0", id: 1, method: "ping" })).headers.get("ratelimit-remaining"),
      );
      while (left > 0) {
        const pings = Array.from({ length: Math.min(left, 100) }, (_, i) => ({
          jsonrpc: "2.0",
          id: i + 1,
          method: "ping",
        }));
        left = Number((await post(pings)).headers.get("ratelimit-remaining"));
      }
      expect(left).toBe(0);
      const limited = await client.callTool({
        name: "hash",
        arguments: { text: "over the limit" },
      });
      expectErrorResult(limited, "rate_limited");
      expect(JSON.parse((limited.content as { text: string }[])[0]!.text).error.message).toMatch(
        /retry after \d+ s/,
      );
      expect((await gw.services.store.getAccount(accountId))?.balance).toBe(100); // (the REST account read would be rate limited too)
    } finally {
      await client.close();
    }
  }, 30_000);
});
