import { connectMcp } from "../helpers/mcp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  balanceOf,
  call,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";

/** Finding tools: ranked search over REST, the categories, and the MCP search_tools tool. */
let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw.stop();
});

describe("GET /v1/tools?q=", () => {
  it("puts the PDF tools first for 'pdf'", async () => {
    const { body } = await call(`${gw.url}/v1/tools?q=pdf`);
    expect(
      body.data
        .slice(0, 2)
        .map((t: any) => t.name)
        .sort(),
    ).toEqual(["pdf-extract-text", "pdf-generate"]);
  });

  it("ranks by every word and filters by category", async () => {
    const ocr = await call(`${gw.url}/v1/tools?q=read+text+image`);
    expect(ocr.body.data[0].name).toBe("ocr");
    const images = await call(`${gw.url}/v1/tools?category=images`);
    expect(images.body.data.length).toBe(8);
    expect(images.body.data.every((t: any) => t.category === "images")).toBe(true);
    const qrInImages = await call(`${gw.url}/v1/tools?q=qr&category=images`);
    expect(qrInImages.body.data.map((t: any) => t.name).sort()).toEqual(["qr-code", "qr-decode"]);
    expect((await call(`${gw.url}/v1/tools?q=zzzz-no-such-thing`)).body.data).toEqual([]);
    const bad = await call(`${gw.url}/v1/tools?category=nope`);
    expect([bad.status, bad.body.error.param]).toEqual([422, "category"]);
  });

  it("holds every query word to being found, whatever its script: a word of no ASCII letter, or a query of no word, finds nothing", async () => {
    // 翻訳, é, an emoji, "*", a zero-width space: each once read as "no words", the whole catalogue.
    for (const q of [
      "%E7%BF%BB%E8%A8%B3",
      "%C3%A9",
      "%F0%9F%98%80",
      "*",
      "%E2%80%8B",
      "pdf+%C3%A9",
    ]) {
      const res = await call(`${gw.url}/v1/tools?q=${q}`);
      expect([res.status, res.body.data], q).toEqual([200, []]);
    }
    // A word next to non-ASCII letters is still a word; a blank query is still no search.
    const pdf = await call(`${gw.url}/v1/tools?q=%E2%80%94pdf%E2%80%94`);
    expect(
      pdf.body.data
        .slice(0, 2)
        .map((t: any) => t.name)
        .sort(),
    ).toEqual(["pdf-extract-text", "pdf-generate"]);
    for (const q of ["", "%20%20"]) {
      expect((await call(`${gw.url}/v1/tools?q=${q}`)).body.data.length, q).toBe(64);
    }
  });

  it("refuses an unknown parameter (422 naming it), as every listing does, rather than list everything", async () => {
    for (const query of ["categry=ai", "q=pdf&limit=5"]) {
      const res = await call(`${gw.url}/v1/tools?${query}`);
      const param = query.split("&").at(-1)!.split("=")[0];
      expect([res.status, res.body.error?.code, res.body.error?.param]).toEqual([
        422,
        "validation_failed",
        param,
      ]);
      expect(res.body.error.message).toBe(`Unknown field "${param}" in the query.`);
    }
  });

  it("lists the categories with their tool counts, 64 in all", async () => {
    const { body } = await call(`${gw.url}/v1/tools/categories`);
    expect(body.data.map((c: any) => c.name)).toContain("documents");
    expect(body.data.reduce((n: number, c: any) => n + c.tools, 0)).toBe(64);
  });
});

/** The official MCP client, connected with `key`. */
const mcpClient = (key: string) => connectMcp(gw.url, key);

describe("MCP search_tools", () => {
  it("returns the matching tools with their schemas, free of charge", async () => {
    const { key } = await fundedAccount(gw.url, 100, "starter");
    const client = await mcpClient(key);
    try {
      const result = await client.callTool({
        name: "search_tools",
        arguments: { query: "pdf", limit: 2 },
      });
      const tools = (result.structuredContent as { tools: any[] }).tools;
      expect(tools.map((t) => t.name).sort()).toEqual(["pdf-extract-text", "pdf-generate"]);
      expect(tools[0].inputSchema).toMatchObject({ type: "object" });
      expect(tools[0].outputSchema).toMatchObject({ type: "object" });
      expect(await balanceOf(gw.url, key)).toBe(100);
    } finally {
      await client.close();
    }
  });

  it("finds nothing for a query of no ASCII word or of no word at all, as the REST search", async () => {
    const { key } = await fundedAccount(gw.url, 100, "starter");
    const client = await mcpClient(key);
    try {
      for (const query of ["翻訳", "é", "😀", "*", "\u200b"]) {
        const result = await client.callTool({
          name: "search_tools",
          arguments: { query, limit: 64 },
        });
        expect((result.structuredContent as { tools: any[] }).tools, query).toEqual([]);
      }
    } finally {
      await client.close();
    }
  });

  it("holds its arguments to the schema it lists: a missing query, a wrong type, an unknown category or field is an error naming it", async () => {
    const { key } = await fundedAccount(gw.url, 100, "starter");
    const client = await mcpClient(key);
    try {
      const listed = (await client.listTools()).tools.find((t) => t.name === "search_tools")!;
      expect(listed.inputSchema).toMatchObject({
        required: ["query"],
        additionalProperties: false,
        properties: { category: { enum: expect.arrayContaining(["documents", "web"]) } },
      });
      for (const [args, param] of [
        [{}, "query"],
        [{ query: 5 }, "query"],
        [{ query: "pdf", category: "nonsense" }, "category"],
        [{ query: "pdf", limit: 65 }, "limit"],
        [{ query: "pdf", bogus: 1 }, "bogus"],
      ] as const) {
        const result = await client.callTool({ name: "search_tools", arguments: args });
        expect(result.isError, JSON.stringify(args)).toBe(true);
        const body = JSON.parse((result.content as { text: string }[])[0]!.text);
        expect([body.error.code, body.error.param]).toEqual(["validation_failed", param]);
      }
    } finally {
      await client.close();
    }
  });
});
