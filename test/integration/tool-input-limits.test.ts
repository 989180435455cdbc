import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import {
  balanceOf,
  call,
  callTool,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";

/**
 * The door's limits on a body (size, JSON depth) and the tools' own limits agree.
 * Every length a tool's published schema allows can be sent: a text at its maximum fits in the
 * body limit and is served; one character more is 422 naming the field; only a body past the
 * limit is 413.
 */
let gw: TestGateway;
let key: string;
beforeAll(async () => {
  gw = await startGateway();
  ({ key } = await fundedAccount(gw.url, 100, "business"));
});
afterAll(async () => {
  await gw?.stop();
});

describe("tool input limits and the body limit", () => {
  it("every tool's text limits, all at their maximum at once, fit in the default body limit", async () => {
    const limit = loadConfig({ NODE_ENV: "test" }).bodyLimitBytes;
    const tools = (await call(`${gw.url}/v1/tools`)).body.data as {
      name: string;
      input_schema: { properties: Record<string, { type?: string; maxLength?: number }> };
    }[];
    const tooLarge: string[] = [];
    for (const tool of tools) {
      const longest = Object.fromEntries(
        Object.entries(tool.input_schema.properties)
          .filter(([, p]) => p.type === "string")
          .map(([name, p]) => [name, "a".repeat(p.maxLength ?? 0)]),
      );
      const bytes = Buffer.byteLength(JSON.stringify(longest));
      if (bytes > limit) tooLarge.push(`${tool.name}: ${bytes} bytes > ${limit}`);
    }
    expect(tooLarge).toEqual([]);
  });

  it("hash: a text at its published maximum is served, one character more is 422 on text, a body past the limit is 413", async () => {
    const tool = (await call(`${gw.url}/v1/tools/hash`)).body;
    const max = tool.input_schema.properties.text.maxLength as number;
    expect(max).toBeGreaterThanOrEqual(1_000_000);

    const atMax = await callTool(gw.url, key, "hash", { text: "a".repeat(max) });
    expect(atMax.status).toBe(200);

    const before = await balanceOf(gw.url, key);
    const over = await callTool(gw.url, key, "hash", { text: "a".repeat(max + 1) });
    expect([over.status, over.body.error.code, over.body.error.param]).toEqual([
      422,
      "validation_failed",
      "text",
    ]);

    const limit = loadConfig({ NODE_ENV: "test" }).bodyLimitBytes;
    const huge = await callTool(gw.url, key, "hash", { text: "a".repeat(limit) });
    expect([huge.status, huge.body.error.code, huge.body.error.message]).toEqual([
      413,
      "body_too_large",
      `The request body is larger than the limit of ${limit} bytes.`,
    ]);
    expect(await balanceOf(gw.url, key)).toBe(before);
  });

  it("JSON nested 64 levels deep is served; 65 levels is 413 body_too_deep, uncharged", async () => {
    const nested = (depth: number) =>
      `{"schema":{},"data":${"[".repeat(depth - 1)}${"]".repeat(depth - 1)}}`;
    const ok = await call(`${gw.url}/v1/tools/json-schema-validate`, { key, rawBody: nested(64) });
    expect([ok.status, ok.body.valid]).toEqual([200, true]);
    const before = await balanceOf(gw.url, key);
    const deep = await call(`${gw.url}/v1/tools/json-schema-validate`, {
      key,
      rawBody: nested(65),
    });
    expect([deep.status, deep.body.error.code]).toEqual([413, "body_too_deep"]);
    expect(await balanceOf(gw.url, key)).toBe(before);
  });

  it("a body limit too small for the tools' limits is refused at start-up", () => {
    expect(() => loadConfig({ NODE_ENV: "test", BODY_LIMIT_BYTES: "65536" })).toThrow(
      /BODY_LIMIT_BYTES must be at least 1048576/,
    );
  });
});
