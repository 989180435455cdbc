import { createHash } from "node:crypto";
import jsQRModule from "jsqr";
import { PNG } from "pngjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  balanceOf,
  callTool,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";
import { startFakeBrave, startFakeLlm, startFakeSearxng } from "../helpers/fake-providers.js";

/** A keyed call to each tool, through the gateway to real workers, returns the tool's real result. */
// jsqr is CommonJS with an ES-style default in its types: take the function either way.
const jsQR = ((jsQRModule as unknown as { default?: unknown }).default ??
  jsQRModule) as unknown as typeof jsQRModule.default;

let gw: TestGateway;
let key: string;
let llm: Awaited<ReturnType<typeof startFakeLlm>>;
let searxng: Awaited<ReturnType<typeof startFakeSearxng>>;
beforeAll(async () => {
  llm = await startFakeLlm();
  searxng = await startFakeSearxng([
    {
      title: "x402 — payments over HTTP",
      url: "https://x402.org/",
      content: "An open protocol for internet-native payments.",
    },
    {
      title: "HTTP 402",
      url: "https://developer.mozilla.org/docs/Web/HTTP/Status/402",
      content: "Payment Required.",
    },
    { title: "Third", url: "https://example.com/3", content: "c" },
    { title: "Fourth", url: "https://example.com/4", content: "d" },
  ]);
  gw = await startGateway({
    workerEnv: {
      AI_BASE_URL: `${llm.url}/v1`,
      AI_MODEL: "test-model",
      AI_API_KEY: "sk-test",
      SEARXNG_URL: searxng.url,
    },
  });
  ({ key } = await fundedAccount(gw.url, 1000));
});
afterAll(async () => {
  await gw.stop();
  await llm.stop();
  await searxng.stop();
});

const run = async (name: string, body: unknown) => {
  const res = await callTool(gw.url, key, name, body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res;
};

describe("offline tools", () => {
  it("hash: the digest node's crypto computes", async () => {
    const { body } = await run("hash", {
      text: "hello wörld",
      algorithm: "sha3-256",
      encoding: "base64",
    });
    expect(body).toEqual({
      algorithm: "sha3-256",
      encoding: "base64",
      digest: createHash("sha3-256").update("hello wörld").digest("base64"),
    });
  });

  it("qr-code: a PNG that a QR decoder reads back, and an SVG", async () => {
    const { body } = await run("qr-code", { text: "https://toolgate.example/pay?x=1", size: 300 });
    const png = PNG.sync.read(Buffer.from(body.data, "base64"));
    expect(png.width).toBe(300);
    expect(jsQR(new Uint8ClampedArray(png.data), png.width, png.height)?.data).toBe(
      "https://toolgate.example/pay?x=1",
    );
    const svg = await run("qr", { text: "hi", format: "svg" });
    expect(svg.body).toMatchObject({ format: "svg", mime_type: "image/svg+xml" });
    expect(svg.body.data).toMatch(/^<svg[\s\S]*<\/svg>\s*$/);
  });

  it("html-to-markdown and markdown-to-html convert, and raw HTML is escaped", async () => {
    expect(
      (
        await run("html-to-markdown", {
          html: "<h2>Title</h2><p>A <a href='https://x.test'>link</a> and <code>code</code>.</p><script>alert(1)</script>",
        })
      ).body,
    ).toEqual({
      markdown: "## Title\n\nA [link](https://x.test) and `code`.",
    });
    const { body } = await run("markdown-to-html", {
      markdown:
        "# Hi\n\n<script>alert(1)</script>\n\n[ok](https://x.test) [bad](javascript:alert(1))",
    });
    expect(body.html).toContain("<h1>Hi</h1>");
    expect(body.html).toContain("&lt;script&gt;");
    expect(body.html).toContain('<a href="https://x.test">ok</a>');
    expect(body.html).not.toContain("javascript:");
  });

  it("readability-extract: the article's text, title and byline, without navigation", async () => {
    const html = `<html><head><title>Gateways</title></head><body><nav>Home | Pricing | Login</nav><article><h1>How gateways work</h1><p class="byline">By Ada Lovelace</p>${"<p>A gateway checks who is calling, counts what they use, and forwards the call to a worker that does the work.</p>".repeat(4)}</article><footer>Copyright</footer></body></html>`;
    const { body } = await run("readability-extract", { html });
    expect(body.title).toBe("Gateways"); // Readability prefers the document title
    expect(body.byline).toBe("By Ada Lovelace");
    expect(body.text).toContain("A gateway checks who is calling");
    expect(body.text.split("\n\n").length).toBeGreaterThanOrEqual(4);
    expect(body.text).not.toContain("Pricing");
    expect(body.length).toBe(body.text.length);
  });

  it("json-schema-validate: every error with its path, and valid data passes", async () => {
    const schema = {
      type: "object",
      properties: { age: { type: "integer", minimum: 0 }, name: { type: "string" } },
      required: ["name"],
    };
    expect((await run("json-schema-validate", { schema, data: { age: -1 } })).body).toEqual({
      valid: false,
      errors: [
        { path: "/", keyword: "required", message: "must have required property 'name'" },
        { path: "/age", keyword: "minimum", message: "must be >= 0" },
      ],
    });
    expect(
      (await run("json-schema-validate", { schema, data: { name: "Ada", age: 36 } })).body,
    ).toEqual({ valid: true, errors: [] });
  });

  it("text-diff: added and removed lines and a unified diff", async () => {
    const { body } = await run("text-diff", {
      old: "one\ntwo\nthree\n",
      new: "one\n2\nthree\nfour\n",
    });
    expect(body.changes).toEqual([
      { type: "unchanged", value: "one\n" },
      { type: "removed", value: "two\n" },
      { type: "added", value: "2\n" },
      { type: "unchanged", value: "three\n" },
      { type: "added", value: "four\n" },
    ]);
    expect([body.added, body.removed]).toEqual([2, 1]);
    expect(body.unified).toContain("-two\n+2\n");
  });

  it("regex-test: matches with indexes and named groups; a bad pattern is 422 and uncharged", async () => {
    const { body } = await run("regex-test", {
      pattern: "(?<user>\\w+)@(?<domain>[\\w.]+)",
      text: "ada@example.com, bob@test.org",
    });
    expect(body.matches).toEqual([
      {
        match: "ada@example.com",
        index: 0,
        groups: { user: "ada", domain: "example.com" },
        captures: ["ada", "example.com"],
      },
      {
        match: "bob@test.org",
        index: 17,
        groups: { user: "bob", domain: "test.org" },
        captures: ["bob", "test.org"],
      },
    ]);
    const before = await balanceOf(gw.url, key);
    const bad = await callTool(gw.url, key, "regex-test", { pattern: "(unclosed", text: "x" });
    expect([bad.status, bad.body.error.code, bad.body.error.param]).toEqual([
      422,
      "validation_failed",
      "pattern",
    ]);
    // The engine's reason, introduced once.
    expect(bad.body.error.message).toBe(
      "Invalid regular expression: /(unclosed/g: Unterminated group",
    );
    const slow = await callTool(gw.url, key, "regex-test", {
      pattern: "(a+)+$",
      text: `${"a".repeat(40)}!`,
    });
    expect([slow.status, slow.body.error.code]).toEqual([422, "validation_failed"]);
    expect(await balanceOf(gw.url, key)).toBe(before);
  });

  it("timezone-convert: Paris morning is New York night, across the offset", async () => {
    expect(
      (
        await run("timezone-convert", {
          datetime: "2026-11-21T09:30:00",
          from_zone: "Europe/Paris",
          to_zone: "America/New_York",
        })
      ).body,
    ).toEqual({
      input: "2026-11-21T09:30:00.000+01:00",
      output: "2026-11-21T03:30:00.000-05:00",
      from_zone: "Europe/Paris",
      to_zone: "America/New_York",
      offset_minutes: -300,
      utc: "2026-11-21T08:30:00.000Z",
    });
    expect(
      (
        await callTool(gw.url, key, "timezone-convert", {
          datetime: "2026-01-01T00:00:00Z",
          to_zone: "Mars/Olympus",
        })
      ).body.error.param,
    ).toBe("to_zone");
  });

  it("timezone-convert: a zone's local-mean-time era (offset with seconds) converts, offset exact in every string", async () => {
    // Paris kept +00:09:21 until 1911, New York -04:56:02 until 1883: offset_minutes rounds to a
    // whole minute (it is an integer), the strings keep the seconds so local time and offset agree.
    expect(
      (
        await run("timezone-convert", {
          datetime: "1800-01-01T00:00:00Z",
          from_zone: "UTC",
          to_zone: "Europe/Paris",
        })
      ).body,
    ).toEqual({
      input: "1800-01-01T00:00:00.000Z",
      output: "1800-01-01T00:09:21.000+00:09:21",
      from_zone: "UTC",
      to_zone: "Europe/Paris",
      offset_minutes: 9,
      utc: "1800-01-01T00:00:00.000Z",
    });
    expect(
      (
        await run("timezone-convert", {
          datetime: "1800-01-01T00:00:00",
          from_zone: "Europe/Paris",
          to_zone: "America/New_York",
        })
      ).body,
    ).toEqual({
      input: "1800-01-01T00:00:00.000+00:09:21",
      output: "1799-12-31T18:54:37.000-04:56:02",
      from_zone: "Europe/Paris",
      to_zone: "America/New_York",
      offset_minutes: -296,
      utc: "1799-12-31T23:50:39.000Z",
    });
  });

  it("unit-convert: a marathon in kilometres, and Fahrenheit in Celsius", async () => {
    expect(
      (await run("unit-convert", { value: 26.2, from: "mi", to: "km" })).body.result,
    ).toBeCloseTo(42.1648128, 9);
    expect(
      (await run("unit-convert", { value: 212, from: "degF", to: "degC" })).body.result,
    ).toBeCloseTo(100, 9);
    expect(
      (await callTool(gw.url, key, "unit-convert", { value: 1, from: "kg", to: "m" })).status,
    ).toBe(422);
  });

  it("language-detect: French, German and English", async () => {
    expect(
      (
        await run("language-detect", {
          text: "Le renard brun rapide saute par-dessus le chien paresseux.",
        })
      ).body.language,
    ).toBe("fra");
    expect(
      (
        await run("detect-language", {
          text: "Der schnelle braune Fuchs springt über den faulen Hund.",
        })
      ).body.language,
    ).toBe("deu");
    expect(
      (
        await run("language-detect", {
          text: "The quick brown fox jumps over the lazy dog near the river bank.",
        })
      ).body.language,
    ).toBe("eng");
  });
});

describe("provider tools", () => {
  it("web-search through SearXNG, by name and by its alias search-web", async () => {
    const { body } = await run("web-search", { query: "x402 protocol", max_results: 2 });
    expect(body).toEqual({
      provider: "searxng",
      results: [
        {
          title: "x402 — payments over HTTP",
          url: "https://x402.org/",
          snippet: "An open protocol for internet-native payments.",
        },
        {
          title: "HTTP 402",
          url: "https://developer.mozilla.org/docs/Web/HTTP/Status/402",
          snippet: "Payment Required.",
        },
      ],
    });
    expect(searxng.requests.at(-1)!.path).toBe("/search?q=x402+protocol&format=json");
    expect((await run("search-web", { query: "x402" })).body.results).toHaveLength(4);
  });

  it("ai-generate: the model's text and token usage from an OpenAI-compatible endpoint", async () => {
    llm.state.reply = () =>
      "Tolls at the gate / credits fall like autumn leaves / the call goes through";
    const { body } = await run("ai-generate", {
      prompt: "Write a haiku about toll gates.",
      max_tokens: 60,
      temperature: 0.2,
    });
    expect(body).toMatchObject({
      text: "Tolls at the gate / credits fall like autumn leaves / the call goes through",
      model: "test-model",
      finish_reason: "stop",
    });
    expect(body.usage.total_tokens).toBe(body.usage.prompt_tokens + body.usage.completion_tokens);
    const sent = llm.requests.at(-1)!;
    expect(sent.headers.authorization).toBe("Bearer sk-test");
    expect(sent.body).toEqual({
      model: "test-model",
      messages: [{ role: "user", content: "Write a haiku about toll gates." }],
      max_tokens: 60,
      temperature: 0.2,
    });
  });

  it("ai-summarize and ai-translate send the task to the model and return its answer", async () => {
    llm.state.reply = (req) =>
      String(req.messages[0]!.content).includes("Translate")
        ? "Bonjour, comment allez-vous ?"
        : "A gateway sells tool calls.";
    expect(
      (
        await run("ai-summarize", {
          text: "Toolgate is a gateway that sells tool calls.",
          max_words: 10,
        })
      ).body.summary,
    ).toBe("A gateway sells tool calls.");
    expect(llm.requests.at(-1)!.body.messages[0].content).toContain("at most 10 words");
    const t = await run("translate", {
      text: "Good morning, how are you?",
      target_language: "French",
    });
    expect(t.body).toMatchObject({
      translation: "Bonjour, comment allez-vous ?",
      target_language: "French",
    });
  });

  it("ai-extract: structured data validated against the caller's schema; a non-conforming answer fails, refunded", async () => {
    const schema = {
      type: "object",
      properties: { total: { type: "number" }, currency: { type: "string" } },
      required: ["total", "currency"],
      additionalProperties: false,
    };
    llm.state.reply = () => '{"total": 1250, "currency": "EUR"}';
    const { body } = await run("ai-extract", { text: "Total 1,250.00 EUR", schema });
    expect(body.data).toEqual({ total: 1250, currency: "EUR" });
    expect(llm.requests.at(-1)!.body.response_format).toEqual({
      type: "json_schema",
      json_schema: { name: "extraction", schema },
    });

    llm.state.reply = () => '{"total": "lots"}';
    const before = await balanceOf(gw.url, key);
    const bad = await callTool(gw.url, key, "ai-extract", { text: "Total 1,250.00 EUR", schema });
    expect([bad.status, bad.body.error.code]).toEqual([502, "tool_failed"]);
    expect(bad.body.error.message).toContain("did not match the schema");
    expect(await balanceOf(gw.url, key)).toBe(before);
  });

  it("ai-extract: a schema the custom tools' rules refuse (too large, a pattern RE2 cannot run) is a 422 naming schema, refunded, and the provider is never asked", async () => {
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 2000; i++) properties[`p${i}`] = { type: "string", pattern: `^x${i}` };
    const asked = llm.requests.length;
    const before = await balanceOf(gw.url, key);
    const large = await callTool(gw.url, key, "ai-extract", {
      text: "x",
      schema: { type: "object", properties },
    });
    expect([large.status, large.body.error.code, large.body.error.param]).toEqual([
      422,
      "validation_failed",
      "schema",
    ]);
    expect(large.body.error.message).toBe("The schema must be at most 32768 bytes as JSON");
    const lookbehind = await callTool(gw.url, key, "ai-extract", {
      text: "x",
      schema: { type: "object", properties: { s: { type: "string", pattern: "(?<=a)b" } } },
    });
    expect([lookbehind.status, lookbehind.body.error.code, lookbehind.body.error.param]).toEqual([
      422,
      "validation_failed",
      "schema",
    ]);
    expect(lookbehind.body.error.message).toMatch(/^The schema is not a valid JSON Schema: /);
    // ai-extract-url refuses it before fetching the page (this address is never asked).
    const url = await callTool(gw.url, key, "ai-extract-url", {
      url: "https://unreachable.invalid/",
      schema: { type: "object", properties },
    });
    expect([url.status, url.body.error.code, url.body.error.param]).toEqual([
      422,
      "validation_failed",
      "schema",
    ]);
    expect(await balanceOf(gw.url, key)).toBe(before);
    expect(llm.requests.length).toBe(asked);
  });

  it("web-search through the Brave Search API", async () => {
    const brave = await startFakeBrave("brave-token", [
      {
        title: "<strong>x402</strong> spec",
        url: "https://x402.org/spec",
        description: "The <strong>x402</strong> &amp; HTTP",
      },
    ]);
    const other = await startGateway({
      workerEnv: { BRAVE_SEARCH_API_KEY: "brave-token", BRAVE_SEARCH_URL: brave.url },
    });
    try {
      const account = await fundedAccount(other.url, 100);
      const res = await callTool(other.url, account.key, "web-search", {
        query: "x402",
        max_results: 3,
      });
      expect(res.body).toEqual({
        provider: "brave",
        results: [{ title: "x402 spec", url: "https://x402.org/spec", snippet: "The x402 & HTTP" }],
      });
      expect(brave.requests[0]!.path).toBe("/res/v1/web/search?q=x402&count=3");
    } finally {
      await other.stop();
      await brave.stop();
    }
  });
});
