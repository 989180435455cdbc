import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  balanceOf,
  call,
  callTool,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";
import { scriptedModel, startFakeLlm, startFakeSearxng } from "../helpers/fake-providers.js";

/** Tools whose worked example reads the public web: with no network here, they fail cleanly. */
const needsNetwork = (tool: { name: string; category: string }) =>
  (tool.category === "web" && tool.name !== "web-search") || tool.name === "ai-extract-url";

/**
 * What GET /v1/tools publishes is what the tools accept and return: each tool's worked example
 * succeeds and its answer validates against the published output schema (checked with Ajv,
 * independently of the zod definitions), and inputs the schema forbids are refused.
 */
let gw: TestGateway;
let llm: Awaited<ReturnType<typeof startFakeLlm>>;
let searxng: Awaited<ReturnType<typeof startFakeSearxng>>;
let catalogue: any[];
let key: string;
beforeAll(async () => {
  llm = await startFakeLlm();
  llm.state.reply = scriptedModel;
  searxng = await startFakeSearxng([{ title: "A", url: "https://a.example/", content: "a" }]);
  gw = await startGateway({
    workerEnv: { AI_BASE_URL: `${llm.url}/v1`, AI_MODEL: "m", SEARXNG_URL: searxng.url },
  });
  catalogue = (await call(`${gw.url}/v1/tools`)).body.data;
  ({ key } = await fundedAccount(gw.url, 5000));
});
afterAll(async () => {
  await gw.stop();
  await llm.stop();
  await searxng.stop();
});

describe("GET /v1/tools", () => {
  it("lists the 64 tools, publicly, each priced in credits and USD, with a category and tags", () => {
    expect(catalogue.length).toBe(64);
    expect(new Set(catalogue.map((t) => t.name)).size).toBe(64);
    for (const tool of catalogue) {
      expect(tool.price.credits).toBeGreaterThan(0);
      expect(BigInt(tool.price.usdc_atomic)).toBe(BigInt(tool.price.credits) * 2000n); // $0.002 a credit
      expect(tool.available).toBe(true);
      expect(tool.input_schema.examples?.length).toBeGreaterThan(0);
      expect(typeof tool.category).toBe("string");
      expect(tool.tags.length).toBeGreaterThan(0);
    }
    expect(catalogue.find((t) => t.name === "web-search").aliases).toContain("search-web");
  });

  it("shows one tool by name or alias", async () => {
    expect((await call(`${gw.url}/v1/tools/search-web`)).body.name).toBe("web-search");
    expect((await call(`${gw.url}/v1/tools/nothing`)).body.error.code).toBe("tool_not_found");
  });

  it("checks a key sent with it, as the list does: a bad or revoked key is 401, a good one is counted as its account's", async () => {
    for (const path of ["/v1/tools", "/v1/tools/hash"]) {
      const bogus = await call(`${gw.url}${path}`, { key: "tg_live_bogus" });
      expect([path, bogus.status, bogus.body.error.code]).toEqual([path, 401, "invalid_api_key"]);
    }
    const { key: own } = await fundedAccount(gw.url, 10);
    const spare = await call(`${gw.url}/api/v1/keys`, { key: own, body: { name: "spare" } });
    await call(`${gw.url}/api/v1/keys/${spare.body.id}`, { key: own, method: "DELETE" });
    const revoked = await call(`${gw.url}/v1/tools/hash`, { key: spare.body.key });
    expect([revoked.status, revoked.body.error.code]).toEqual([401, "api_key_revoked"]);
    const remaining = async () =>
      Number(
        (await call(`${gw.url}/api/v1/account`, { key: own })).headers.get("ratelimit-remaining"),
      );
    const before = await remaining();
    const shown = await call(`${gw.url}/v1/tools/hash`, { key: own });
    expect([shown.status, shown.body.name]).toEqual([200, "hash"]);
    // Counted in the account's window, not the per-address one.
    expect(Number(shown.headers.get("ratelimit-remaining"))).toBe(before - 1);
    expect(await remaining()).toBe(before - 2);
  });
});

describe("every tool", () => {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);

  it("describes every field of its input and output", () => {
    const undescribed: string[] = [];
    const walk = (schema: any, path: string) => {
      if (!schema || typeof schema !== "object") return;
      for (const [name, property] of Object.entries<any>(schema.properties ?? {})) {
        if (!property.description) undescribed.push(`${path}.${name}`);
      }
    };
    for (const tool of catalogue) {
      walk(tool.input_schema, `${tool.name} input`);
      walk(tool.output_schema, `${tool.name} output`);
    }
    expect(undescribed).toEqual([]);
  });

  it("answers its published example with 200 and an output matching its published schema", async () => {
    for (const tool of catalogue) {
      const before = await balanceOf(gw.url, key);
      const res = await callTool(gw.url, key, tool.name, tool.input_schema.examples[0]);
      if (needsNetwork(tool) && (res.status === 502 || res.status === 422)) {
        // No network on this machine: a clean failure, refunded. A name its DNS does not resolve
        // is refused as any name without a public address is (422).
        expect([tool.name, res.body.error.code, res.body.error.message]).toEqual([
          tool.name,
          res.status === 502 ? "tool_failed" : "validation_failed",
          res.status === 502
            ? expect.any(String)
            : expect.stringContaining("does not resolve to a public address"),
        ]);
        expect(await balanceOf(gw.url, key)).toBe(before);
        continue;
      }
      expect([tool.name, res.status], JSON.stringify(res.body).slice(0, 500)).toEqual([
        tool.name,
        200,
      ]);
      const validate = ajv.compile(tool.output_schema);
      expect([tool.name, validate(res.body) ? "valid" : ajv.errorsText(validate.errors)]).toEqual([
        tool.name,
        "valid",
      ]);
      expect(ajv.validate(tool.input_schema, tool.input_schema.examples[0])).toBe(true);
    }
  }, 300_000);

  it("refuses an unknown field and an empty body with 422, uncharged", async () => {
    const before = await balanceOf(gw.url, key);
    for (const tool of catalogue) {
      const unknown = await callTool(gw.url, key, tool.name, {
        ...tool.input_schema.examples[0],
        not_a_field: 1,
      });
      expect([tool.name, unknown.status, unknown.body.error.param]).toEqual([
        tool.name,
        422,
        "not_a_field",
      ]);
      const empty = await callTool(gw.url, key, tool.name, {});
      expect([tool.name, empty.status]).toEqual([tool.name, 422]);
      expect(ajv.validate(tool.input_schema, {})).toBe(false);
    }
    expect(await balanceOf(gw.url, key)).toBe(before);
  }, 120_000);
});
