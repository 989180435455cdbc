import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TOOLS } from "../../src/tools/catalogue/index.js";
import { fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";
import { connectMcp, postMcp, rpcMessagesOf } from "../helpers/mcp.js";

/**
 * Params of the wrong type are the caller's mistake: JSON-RPC -32602 (invalid params) with one
 * short line naming the field, never -32603 (internal error) with the SDK's zod issue list.
 */
let gw: TestGateway;
let key: string;
beforeAll(async () => {
  gw = await startGateway();
  ({ key } = await fundedAccount(gw.url, 100, "starter"));
});
afterAll(() => gw.stop());

/** Posts raw JSON-RPC; answers the HTTP status and the JSON-RPC messages (from JSON or an event stream). */
async function rpc(body: unknown, headers: Record<string, string> = {}) {
  const { status, text } = await postMcp(gw.url, key, body, { headers });
  return { status, text: text!, messages: rpcMessagesOf(text!) };
}

const clientInfo = { name: "raw", version: "1" };
const initialize = (params: unknown) => ({ jsonrpc: "2.0", id: 1, method: "initialize", params });
const listTools = (params: unknown) => ({ jsonrpc: "2.0", id: 1, method: "tools/list", params });
const huge = "k".repeat(50_000);

describe("ill-typed params over MCP", () => {
  it.each([
    [
      "initialize without protocolVersion",
      initialize({ capabilities: {}, clientInfo }),
      "Invalid params for initialize: params.protocolVersion: expected string, received undefined.",
    ],
    [
      "initialize with a number for protocolVersion",
      initialize({ protocolVersion: 20250618, capabilities: {}, clientInfo }),
      "Invalid params for initialize: params.protocolVersion: expected string, received number.",
    ],
    [
      "initialize with an array for capabilities",
      initialize({ protocolVersion: "2025-06-18", capabilities: [], clientInfo }),
      "Invalid params for initialize: params.capabilities: expected object, received array.",
    ],
    [
      "initialize with an array for clientInfo",
      initialize({ protocolVersion: "2025-06-18", capabilities: {}, clientInfo: [clientInfo] }),
      "Invalid params for initialize: params.clientInfo: expected object, received array.",
    ],
    [
      "initialize with a huge object for protocolVersion",
      initialize({ protocolVersion: { [huge]: huge }, capabilities: {}, clientInfo }),
      "Invalid params for initialize: params.protocolVersion: expected string, received object.",
    ],
    [
      "initialize with a huge array for the client's name",
      initialize({
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: Array.from({ length: 20_000 }, (_, i) => i), version: "1" },
      }),
      "Invalid params for initialize: params.clientInfo.name: expected string, received array.",
    ],
    [
      "tools/list with a number for cursor",
      listTools({ cursor: 5 }),
      "Invalid params for tools/list: params.cursor: expected string, received number.",
    ],
    [
      "tools/list with an array for cursor",
      listTools({ cursor: [huge] }),
      "Invalid params for tools/list: params.cursor: expected string, received array.",
    ],
    [
      "tools/list with a cursor it never issued",
      listTools({ cursor: huge }),
      "Invalid params for tools/list: unknown cursor (the list is one page; it issues none).",
    ],
    [
      "tools/call with a number for name",
      { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: 5, arguments: {} } },
      "Invalid params for tools/call: params.name: expected string, received number.",
    ],
  ])("%s: -32602 with one short line", async (_, body, message) => {
    const answer = await rpc(body);
    expect(answer.status).toBe(200);
    expect(answer.messages).toEqual([{ jsonrpc: "2.0", id: 1, error: { code: -32602, message } }]);
    // Nothing of zod's dump, nor the huge value sent, comes back.
    expect(answer.text).not.toMatch(/invalid_type|"path"|kkkkkkkkkk/);
    expect(answer.text.length).toBeLessThan(400);
  });

  it("answers each message of a batch on its own: the ill-typed one -32602, the next one served", async () => {
    const answer = await rpc(
      [listTools({ cursor: 5 }), { jsonrpc: "2.0", id: 2, method: "ping" }],
      {
        "mcp-protocol-version": "2025-03-26",
      },
    );
    expect(answer.messages).toEqual([
      {
        jsonrpc: "2.0",
        id: 1,
        error: {
          code: -32602,
          message:
            "Invalid params for tools/list: params.cursor: expected string, received number.",
        },
      },
      { jsonrpc: "2.0", id: 2, result: {} },
    ]);
  });

  it("answers ill-typed params of 2026-07-28 the same way", async () => {
    const meta = {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientInfo": clientInfo,
      "io.modelcontextprotocol/clientCapabilities": {},
    };
    const answer = await rpc(listTools({ _meta: meta, cursor: 5 }), {
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "tools/list",
    });
    expect(answer.messages).toEqual([
      {
        jsonrpc: "2.0",
        id: 1,
        error: {
          code: -32602,
          message:
            "Invalid params for tools/list: params.cursor: expected string, received number.",
        },
      },
    ]);
  });

  it.each([
    ["2025 (legacy)", {}],
    ["2026-07-28", { versionNegotiation: { mode: { pin: "2026-07-28" } } }],
  ] as const)(
    "still serves the official client, %s: it connects, lists and calls",
    async (_, options) => {
      const client = await connectMcp(gw.url, key, options);
      try {
        expect((await client.listTools()).tools.length).toBe(TOOLS.length + 1); // and search_tools
        const result = await client.callTool({ name: "hash", arguments: { text: "abc" } });
        expect(result.isError).toBeFalsy();
        expect(result.structuredContent).toMatchObject({ algorithm: "sha256" });
      } finally {
        await client.close();
      }
    },
  );
});
