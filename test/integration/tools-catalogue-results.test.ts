import { createServer, type Server } from "node:http";
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import { PNG } from "pngjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  balanceOf,
  call,
  callTool,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";
import { scriptedModel, startFakeLlm } from "../helpers/fake-providers.js";

/**
 * The real result of each tool added with the 64-tool catalogue (tools-results.test.ts covers the
 * first sixteen): round trips between tools where one can check another (PDF written then read,
 * QR drawn then decoded, text rendered then OCRed), the web tools against a local site, and
 * hostile inputs cut off by the limits, refunded, with the workers still serving. One gateway.
 */
let gw: TestGateway;
let key: string;
let llm: Awaited<ReturnType<typeof startFakeLlm>>;
let site: Server;
let siteUrl: string;

const PAGE = `<!doctype html><html lang="en"><head><title>Toolgate news</title><meta name="description" content="What is new">
<meta property="og:title" content="Toolgate ships 64 tools"><meta name="twitter:card" content="summary"><link rel="canonical" href="/news">
</head><body><nav><a href="/">Home</a></nav><article><h1>Toolgate ships 64 tools</h1><p>The gateway now offers sixty-four tools. Most of them run with no provider at all, on the worker itself, and every call is refunded when it fails.</p><p>Read <a href="/docs">the docs</a> to start.</p></article></body></html>`;
const FEED = `<?xml version="1.0"?><rss version="2.0"><channel><title>Toolgate blog</title><link>https://toolgate.example/</link><description>News</description>
<item><title>64 tools</title><link>https://toolgate.example/64</link><pubDate>Sun, 22 Nov 2026 10:00:00 GMT</pubDate><guid>t64</guid><description>The catalogue grew.</description></item>
<item><title>x402</title><link>https://toolgate.example/x402</link><guid>x402</guid></item></channel></rss>`;
const SITEMAP = `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://toolgate.example/</loc><lastmod>2026-11-22</lastmod><priority>1.0</priority></url><url><loc>https://toolgate.example/docs</loc></url></urlset>`;

/** Pages served as they are, headers and bytes: other charsets, compressed against the request, not text. */
const SERVED: Record<string, { headers: Record<string, string>; body: Buffer }> = {
  "/latin1": {
    headers: { "content-type": "text/html; charset=iso-8859-1" },
    body: Buffer.from(
      "<html><head><title>Café</title></head><body><p>Café crème</p></body></html>",
      "latin1",
    ),
  },
  "/meta-charset": {
    headers: { "content-type": "text/html" },
    body: Buffer.from(
      '<html><head><meta charset="windows-1252"><title>Crème</title></head><body><p>Café crème</p></body></html>',
      "latin1",
    ),
  },
  "/http-equiv": {
    headers: { "content-type": "text/html" },
    body: Buffer.from(
      '<html><head><meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1"></head><body><p>Café crème</p></body></html>',
      "latin1",
    ),
  },
  // windows-1252's 0x80-0x9F: "€" (0x80), curly quotes (0x93, 0x94, 0x92), "…" (0x85), "—" (0x97).
  "/windows-1252": {
    headers: { "content-type": "text/html; charset=windows-1252" },
    body: Buffer.from(
      "<html><head><title>\x80 5</title></head><body><p>\x93Caf\xe9\x94 \x97 it\x92s \x80 5\x85</p></body></html>",
      "latin1",
    ),
  },
  "/iso-8859-1": {
    headers: { "content-type": "text/plain; charset=iso-8859-1" },
    body: Buffer.from("\x93Caf\xe9\x94 \x97 it\x92s \x80 5\x85", "latin1"),
  },
  "/gzip": {
    headers: { "content-type": "text/html", "content-encoding": "gzip" },
    body: gzipSync(PAGE),
  },
  "/deflate": {
    headers: { "content-type": "text/html", "content-encoding": "deflate" },
    body: deflateSync(PAGE),
  },
  "/br": {
    headers: { "content-type": "text/html", "content-encoding": "br" },
    body: brotliCompressSync(PAGE),
  },
  // 200 MB of text in about 200 KB: read up to the byte limit (1 MB here), no further.
  "/gzip-bomb": {
    headers: { "content-type": "text/plain", "content-encoding": "gzip" },
    body: gzipSync(Buffer.alloc(200_000_000, "a"), { level: 9 }),
  },
  "/zstd": {
    headers: { "content-type": "text/html", "content-encoding": "zstd" },
    body: Buffer.from("??"),
  },
  "/image": {
    headers: { "content-type": "image/png" },
    body: Buffer.from("89504e470d0a1a0a0000000d49484452", "hex"),
  },
};

beforeAll(async () => {
  llm = await startFakeLlm();
  llm.state.reply = scriptedModel;
  site = createServer((req, res) => {
    const routes: Record<string, [string, string]> = {
      "/news": ["text/html", PAGE],
      "/feed.xml": ["application/rss+xml", FEED],
      "/sitemap.xml": ["application/xml", SITEMAP],
      "/robots.txt": [
        "text/plain",
        "User-agent: *\nDisallow: /private\nCrawl-delay: 2\nSitemap: https://toolgate.example/sitemap.xml\n",
      ],
      "/big": ["text/html", `<p>${"x".repeat(3_000_000)}</p>`],
    };
    if (req.url === "/moved") return res.writeHead(302, { location: "/news" }).end();
    if (req.url === "/bad-redirect") return res.writeHead(302, { location: "http://[::1" }).end();
    const served = SERVED[req.url ?? ""];
    if (served) return res.writeHead(200, served.headers).end(served.body);
    const route = routes[req.url ?? ""];
    if (!route) return res.writeHead(404).end("not found");
    res.writeHead(200, { "content-type": route[0] }).end(route[1]);
  });
  await new Promise<void>((r) => site.listen(0, "127.0.0.1", r));
  siteUrl = `http://127.0.0.1:${(site.address() as { port: number }).port}`;
  gw = await startGateway({
    workerEnv: {
      AI_BASE_URL: `${llm.url}/v1`,
      AI_MODEL: "test-model",
      WEB_ALLOW_PRIVATE_TARGETS: "1",
      WEB_MAX_BYTES: "1000000",
    },
  });
  ({ key } = await fundedAccount(gw.url, 5000));
});
afterAll(async () => {
  await gw.stop();
  await llm.stop();
  site.closeAllConnections();
  await new Promise((r) => site.close(r));
});

const run = async (name: string, body: unknown) => {
  const res = await callTool(gw.url, key, name, body);
  expect([name, res.status], JSON.stringify(res.body).slice(0, 400)).toEqual([name, 200]);
  return res.body;
};
/** A refused call: its status, code and param, and proof that nothing was charged. */
const refused = async (name: string, body: unknown) => {
  const before = await balanceOf(gw.url, key);
  const res = await callTool(gw.url, key, name, body);
  expect(await balanceOf(gw.url, key)).toBe(before);
  const { code, param, message } = res.body.error ?? {};
  return { status: res.status, code, param, message };
};
const pngSize = (base64: string) => {
  const png = PNG.sync.read(Buffer.from(base64, "base64"));
  return [png.width, png.height];
};

describe("documents", () => {
  it("a generated PDF is read back by pdf-extract-text", async () => {
    const pdf = await run("pdf-generate", {
      title: "Report",
      blocks: [
        { type: "heading", text: "Totals" },
        { type: "paragraph", text: "Refunds stayed under one percent. ".repeat(200) },
      ],
    });
    expect(pdf.pages).toBeGreaterThan(1);
    const read = await run("pdf-extract-text", { pdf: pdf.data });
    expect(read.page_count).toBe(pdf.pages);
    expect(read.pages[0]).toContain("Totals");
    expect(read.info.Title).toBe("Report");
    expect(
      await refused("pdf-extract-text", { pdf: Buffer.from("not a pdf").toString("base64") }),
    ).toMatchObject({ status: 422, param: "pdf" });
  });

  it("a word wider than the line is broken by characters, and \\r\\n or \\r end lines: every character is read back", async () => {
    const url = `https://toolgate.example/${"a/".repeat(200)}end`;
    const blocks = [
      { type: "paragraph", text: "W".repeat(100_000) },
      { type: "paragraph", text: `See ${url} now.` },
      { type: "paragraph", text: "first\r\nsecond\rthird" },
    ];
    const pdf = await run("pdf-generate", { blocks });
    const read = await run("pdf-extract-text", { pdf: pdf.data, max_pages: 2000 });
    const chars = (text: string) => text.replace(/\s+/g, "");
    expect(chars(read.text)).toBe(chars(blocks.map((b) => b.text).join("")));
    // Drawn as lines that fit the page: 46 Ws to a line of A4 at 11 points, not one of 100,000.
    const ws = read.text.split("\n").filter((l: string) => /^W+$/.test(l));
    expect(Math.max(...ws.map((l: string) => l.length))).toBe(46);
    expect(read.text).toContain("first\nsecond\nthird");
  }, 60_000);

  it("a written spreadsheet is read back, and docx becomes Markdown", async () => {
    const book = await run("spreadsheet-write", {
      sheets: [
        {
          name: "Q1",
          rows: [
            { sku: "A1", units: 3 },
            { sku: "B2", units: 5 },
          ],
        },
      ],
    });
    const read = await run("spreadsheet-read", { xlsx: book.data });
    expect(read.sheets[0]).toMatchObject({
      name: "Q1",
      columns: ["sku", "units"],
      rows: [
        { sku: "A1", units: 3 },
        { sku: "B2", units: 5 },
      ],
      row_count: 2,
    });
    const { docx } = await call64("docx-to-text");
    expect((await run("docx-to-text", { docx, format: "markdown" })).content).toBe(
      "# Meeting notes\n\nThe gateway ships on **Monday**.",
    );
    expect((await run("docx-to-text", { docx, format: "text" })).content).toBe(
      "Meeting notes\n\nThe gateway ships on Monday.",
    );
  });

  it("csv, xml and yaml convert both ways and back", async () => {
    const rows = [
      { name: "Ada", age: 36 },
      { name: "Alan, T.", age: 41 },
    ];
    const csv = await run("csv-convert", { rows });
    expect((await run("csv-convert", { csv: csv.csv })).rows).toEqual(rows);
    const xml = await run("xml-convert", {
      json: { order: { "@_id": "7", item: ["Pen", "Ink"] } },
    });
    const back = (await run("xml-convert", { xml: xml.xml })).json;
    expect([String(back.order["@_id"]), back.order.item]).toEqual(["7", ["Pen", "Ink"]]);
    const yaml = await run("yaml-convert", { json: { a: [1, 2], b: { c: true } } });
    expect((await run("yaml-convert", { yaml: yaml.yaml })).json).toEqual({
      a: [1, 2],
      b: { c: true },
    });
    expect(await refused("xml-convert", { xml: "<a><b></a>" })).toMatchObject({
      status: 422,
      param: "xml",
    });
  });

  it("xml-convert refuses JSON it cannot write as well-formed XML, naming the field", async () => {
    const element = "not a valid XML element name";
    const cases: [unknown, string, string][] = [
      [null, "json", "must be an object"],
      ["x", "json", "must be an object"],
      [5, "json", "must be an object"],
      [true, "json", "must be an object"],
      [[], "json", "must be an object"],
      [[{ a: 1 }], "json", "must be an object"],
      [{}, "json", "no element to write"],
      [{ a: [] }, "json", "no element to write"],
      [{ "1a": 1 }, "json.1a", element],
      [{ ok: 1, "a b": 2 }, "json.a b", element],
      [{ "": 3 }, "json.", element],
      [{ a: { b: [{ c: 1 }, { "c d": 1 }] } }, "json.a.b.1.c d", element],
      [{ a: { "@_1x": 1 } }, "json.a.@_1x", "not a valid XML attribute name"],
      [{ a: { "@_x": { y: 1 } } }, "json.a.@_x", "must be a string, a number or a boolean"],
      [{ "@_x": 1, a: 1 }, "json.@_x", "needs an element"],
      [{ "#text": "x" }, "json.#text", "needs an element"],
      [{ a: [[1]] }, "json.a.0", "A list inside a list"],
    ];
    const seen = [];
    for (const [json, , message] of cases) {
      const r = await refused("xml-convert", { json });
      seen.push([
        json,
        r.status,
        r.code,
        r.param,
        r.message?.includes(message) ? message : r.message,
      ]);
    }
    expect(seen).toEqual(
      cases.map(([json, param, message]) => [json, 422, "validation_failed", param, message]),
    );
    // Names XML allows still write: non-ASCII letters, a prefix, "-", "." and "_".
    expect(
      (await run("xml-convert", { json: { "é-x": { "p:q": 1, _a: { "b.c": 2 } } }, pretty: false }))
        .xml,
    ).toBe("<é-x><p:q>1</p:q><_a><b.c>2</b.c></_a></é-x>");
  });

  it("html-sanitize drops scripts and javascript: links", async () => {
    const out = await run("html-sanitize", {
      html: '<p>ok<script>alert(1)</script><a href="javascript:x()">x</a><img src=x onerror=alert(1)></p>',
    });
    expect(out.html).toBe("<p>ok<a>x</a></p>");
  });

  it("html-sanitize refuses to keep tags that run script or load content, whatever allowed_tags lists", async () => {
    for (const allowed_tags of [["svg", "script"], ["p", "iframe"], ["style"], ["math"]])
      expect([
        allowed_tags,
        await refused("html-sanitize", {
          html: "<svg><script>alert(1)</script></svg>",
          allowed_tags,
        }),
      ]).toEqual([allowed_tags, expect.objectContaining({ status: 422, param: "allowed_tags" })]);
    expect(
      (await run("html-sanitize", { html: "<p><b>ok</b><i>x</i></p>", allowed_tags: ["p", "b"] }))
        .html,
    ).toBe("<p><b>ok</b>x</p>");
  });

  it("markdown-to-html keeps images from the web or the site only", async () => {
    const { html } = await run("markdown-to-html", {
      markdown:
        "![js](javascript:alert(2)) ![data](data:image/svg+xml,<svg/onload=alert(3)>) ![web](https://toolgate.example/a.png) ![site](/b.png)",
    });
    expect(html).toBe(
      '<p>js data <img src="https://toolgate.example/a.png" alt="web"> <img src="/b.png" alt="site"></p>\n',
    );
  });
});

describe("images", () => {
  it("a QR code drawn by qr-code is decoded by qr-decode; a barcode is a PNG", async () => {
    const qr = await run("qr-code", { text: "toolgate:64", size: 200 });
    expect((await run("qr-decode", { image: qr.data })).text).toBe("toolgate:64");
    const barcode = await run("barcode-generate", { type: "code128", text: "TG-0064" });
    expect(pngSize(barcode.data)[0]).toBeGreaterThan(50);
    expect(await refused("barcode-generate", { type: "ean13", text: "not digits" })).toMatchObject({
      status: 422,
      param: "text",
    });
  });

  it("OCR reads the text of an image rendered by svg-to-png", async () => {
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="420" height="70"><rect width="100%" height="100%" fill="white"/><text x="14" y="48" font-family="DejaVu Sans" font-size="32">Refund 4096 credits</text></svg>`;
    const png = await run("svg-to-png", { svg });
    expect(pngSize(png.data)).toEqual([420, 70]);
    expect((await run("ocr", { image: png.data })).text).toContain("Refund 4096 credits");
  });

  it("a chart is a PNG of the requested size; resize and metadata agree", async () => {
    const spec = {
      data: {
        values: [
          { x: "a", y: 1 },
          { x: "b", y: 3 },
        ],
      },
      mark: "line",
      encoding: { x: { field: "x", type: "nominal" }, y: { field: "y", type: "quantitative" } },
    };
    expect(pngSize((await run("chart-render", { spec, width: 321, height: 123 })).data)).toEqual([
      321, 123,
    ]);
    expect((await run("chart-render", { spec, format: "svg" })).data).toContain("<svg");
    expect(
      await refused("chart-render", {
        spec: { ...spec, data: { url: "https://example.com/data.csv" } },
      }),
    ).toMatchObject({ status: 422, param: "spec" });
    const { image: photo } = await call64("image-metadata");
    expect((await run("image-metadata", { image: photo })).exif).toMatchObject({
      Artist: "Ada Lovelace",
    });
    const qr = await run("qr-code", { text: "x", size: 300 });
    const small = await run("image-transform", { image: qr.data, width: 64, format: "jpeg" });
    expect(small).toMatchObject({ width: 64, height: 64, format: "jpeg", mime_type: "image/jpeg" });
    expect(await run("image-metadata", { image: small.data })).toMatchObject({
      format: "jpeg",
      width: 64,
      height: 64,
    });
  });
});

describe("language, data, code, security, geo", () => {
  it("analyses English text locally", async () => {
    expect((await run("text-sentiment", { text: "I love this. It is wonderful." })).label).toBe(
      "positive",
    );
    expect((await run("text-sentiment", { text: "This is terrible and I hate it." })).label).toBe(
      "negative",
    );
    expect(
      (await run("text-entities", { text: "Mail ada@example.com today." })).entities,
    ).toContainEqual(expect.objectContaining({ type: "EMAIL", value: "ada@example.com" }));
    expect(
      (
        await run("text-keywords", {
          text: "Refunds, refunds and more refunds for the gateway.",
          limit: 1,
        })
      ).keywords[0].keyword,
    ).toBe("refund");
    expect(
      (await run("sentence-split", { text: "Mr. Smith paid $3.50. He left." })).sentence_count,
    ).toBe(2);
    const easy = await run("readability-score", { text: "The cat sat. The dog ran. We had fun." });
    const hard = await run("readability-score", {
      text: "Notwithstanding considerable organisational complexity, institutional accountability necessitates comprehensive documentation.",
    });
    expect(easy.flesch_reading_ease).toBeGreaterThan(hard.flesch_reading_ease);
    expect(
      (await run("spell-check", { text: "It recieves paymnets." })).misspelled.map(
        (m: any) => m.word,
      ),
    ).toEqual(["recieves", "paymnets"]);
    expect(
      (
        await run("token-count", {
          text: "hello world",
          encoding: "cl100k_base",
          return_tokens: true,
        })
      ).token_ids,
    ).toEqual([15339, 1917]);
    const summary = await run("text-summarize-extractive", {
      text: "Cats purr. Dogs bark loudly at night. Birds sing.",
      sentences: 1,
    });
    expect(summary.sentences).toHaveLength(1);
    // Its worked example (shown on /docs) picks by importance, not merely the first sentences.
    const example = (await call(`${gw.url}/v1/tools/text-summarize-extractive`)).body.input_schema
      .examples[0];
    const picked = await run("text-summarize-extractive", example);
    expect(picked.sentences.map((s: { index: number }) => s.index)).not.toEqual([0, 1]);
    expect(picked.sentences.every((s: { importance: number }) => s.importance > 0)).toBe(true);
  });

  it("queries, computes and converts data", async () => {
    expect(
      (
        await run("jsonpath-query", {
          json: { a: [{ n: 1 }, { n: 5 }] },
          path: "$.a[?(@.n > 2)].n",
        })
      ).values,
    ).toEqual([5]);
    for (const path of ["$[[[", "$.a[", "$.a]", "$['a'", "$.a.", "$[?(@.n > 2]", "a.b"])
      expect(await refused("jsonpath-query", { json: { a: 1 }, path })).toMatchObject({
        status: 422,
        param: "path",
      });
    expect(
      (await run("jsonpath-query", { json: { "a (b)": [1, 2] }, path: "$['a (b)'][1]" })).values,
    ).toEqual([2]);
    const sql = await run("sql-query", {
      query: "SELECT city, COUNT(*) AS n FROM people GROUP BY city ORDER BY n DESC",
      tables: { people: "name,city\nAda,London\nAlan,London\nGrace,NYC\n" },
    });
    expect(sql.rows).toEqual([
      { city: "London", n: 2 },
      { city: "NYC", n: 1 },
    ]);
    expect(await refused("sql-query", { query: "SELEC nonsense" })).toMatchObject({
      status: 422,
      param: "query",
    });
    expect((await run("math-evaluate", { expression: ["x = 2^10", "x / 4"] })).value).toBe(256);
    expect(await refused("math-evaluate", { expression: "import({}, {})" })).toMatchObject({
      status: 422,
      param: "expression",
    });
    expect(
      (await run("date-parse", { text: "tomorrow at noon", reference: "2026-11-22T10:00:00Z" }))
        .dates[0].start,
    ).toBe("2026-11-23T12:00:00.000Z");
    expect(
      (
        await run("cron-explain", {
          expression: "0 0 * * *",
          from: "2026-11-22T10:00:00Z",
          count: 2,
        })
      ).next_runs,
    ).toEqual(["2026-11-23T00:00:00.000Z", "2026-11-24T00:00:00.000Z"]);
    expect(await refused("cron-explain", { expression: "not cron" })).toMatchObject({
      status: 422,
      param: "expression",
    });
    // The parser's own words, once: it throws strings that begin "Error: ".
    expect((await refused("cron-explain", { expression: "61 * * * *" })).message).toBe(
      "Not a valid cron expression: minutes part must be >= 0 and <= 59",
    );
  });

  it("formats code and runs JavaScript in the sandbox", async () => {
    expect(
      (await run("code-format", { code: "select a,b from t where a=1", language: "sql" })).code,
    ).toBe("select\n  a,\n  b\nfrom\n  t\nwhere\n  a = 1\n");
    expect(
      await refused("code-format", { code: "const = ;", language: "javascript" }),
    ).toMatchObject({ status: 422, param: "code" });
    expect(
      await run("js-sandbox", { code: "input.reduce((a, b) => a + b, 0)", input: [1, 2, 3] }),
    ).toMatchObject({ result: 6, error: null });
    expect(
      (await run("js-sandbox", { code: "typeof process + typeof require + typeof fetch" })).result,
    ).toBe("undefinedundefinedundefined");
  });

  it("decodes tokens, encodes text, generates ids, computes networks and distances", async () => {
    const example = (await call64("jwt-decode")).token;
    expect(await run("jwt-decode", { token: example, secret: "wrong" })).toMatchObject({
      verified: false,
      payload: { sub: "acc_123" },
    });
    const encoded = await run("encode-decode", {
      text: "€ & <b>",
      encoding: "hex",
      direction: "encode",
    });
    expect(
      (await run("encode-decode", { text: encoded.result, encoding: "hex", direction: "decode" }))
        .result,
    ).toBe("€ & <b>");
    const ids = await run("id-generate", { kind: "random", count: 3, length: 20, alphabet: "hex" });
    expect(ids.values.every((v: string) => /^[0-9a-f]{20}$/.test(v))).toBe(true);
    expect(
      (
        await run("ip-cidr", { cidr: "10.0.0.0/30", contains: ["10.0.0.3", "10.0.0.4"] })
      ).contains.map((c: any) => c.inside),
    ).toEqual([true, false]);
    expect((await run("ip-cidr", { cidr: "2001:db8::/126" })).size).toBe("4");
    expect(
      Math.round(
        (
          await run("geo-distance", {
            points: [
              { lat: 48.8566, lon: 2.3522 },
              { lat: 51.5074, lon: -0.1278 },
            ],
          })
        ).distance,
      ),
    ).toBe(344);
    expect(
      (await run("geo-timezone", { lat: 35.68, lon: 139.69, at: "2026-11-22T00:00:00Z" })).timezone,
    ).toBe("Asia/Tokyo");
    // A local-mean-time era (Paris +00:09:21 before 1911, New York -04:56:02 before 1883):
    // offset_minutes rounded to the minute, local_time with the exact offset.
    expect(
      await run("geo-timezone", { lat: 48.85, lon: 2.35, at: "1900-01-01T00:00:00Z" }),
    ).toEqual({
      timezone: "Europe/Paris",
      offset_minutes: 9,
      local_time: "1900-01-01T00:09:21.000+00:09:21",
    });
    expect(
      await run("geo-timezone", { lat: 40.7128, lon: -74.006, at: "1800-01-01T00:00:00Z" }),
    ).toEqual({
      timezone: "America/New_York",
      offset_minutes: -296,
      local_time: "1799-12-31T19:03:58.000-04:56:02",
    });
  });
});

/** A tool's worked example, as published. */
async function call64(name: string) {
  const res = await fetch(`${gw.url}/v1/tools/${name}`);
  return ((await res.json()) as { input_schema: { examples: any[] } }).input_schema.examples[0];
}

describe("web tools (a local site, private targets allowed by the development setting)", () => {
  it("fetch, metadata, feed, robots and sitemap read the real documents", async () => {
    const page = await run("web-fetch", { url: `${siteUrl}/moved` });
    expect(page).toMatchObject({
      url: `${siteUrl}/news`,
      title: "Toolgate ships 64 tools",
      truncated: false,
    });
    expect(page.content).toContain("sixty-four tools");
    expect(page.content).not.toContain("Home");
    const meta = await run("web-metadata", { url: `${siteUrl}/news` });
    expect(meta).toMatchObject({
      title: "Toolgate news",
      description: "What is new",
      canonical: `${siteUrl}/news`,
      language: "en",
      open_graph: { title: "Toolgate ships 64 tools" },
      twitter: { card: "summary" },
    });
    expect(meta.links.map((l: any) => l.url)).toEqual([`${siteUrl}/`, `${siteUrl}/docs`]);
    const feed = await run("rss-read", { url: `${siteUrl}/feed.xml` });
    expect(feed.items[0]).toMatchObject({
      title: "64 tools",
      link: "https://toolgate.example/64",
      published: "2026-11-22T10:00:00.000Z",
      id: "t64",
    });
    expect(await run("robots-check", { url: `${siteUrl}/private/x` })).toMatchObject({
      found: true,
      allowed: false,
      crawl_delay: 2,
      sitemaps: ["https://toolgate.example/sitemap.xml"],
    });
    expect((await run("robots-check", { url: `${siteUrl}/public` })).allowed).toBe(true);
    const sitemap = await run("sitemap-read", { url: `${siteUrl}/sitemap.xml` });
    expect(sitemap).toMatchObject({
      kind: "urlset",
      total: 2,
      entries: [
        { loc: "https://toolgate.example/", lastmod: "2026-11-22", priority: 1 },
        { loc: "https://toolgate.example/docs" },
      ],
    });
    expect(
      (await run("web-fetch", { url: `${siteUrl}/big`, format: "text", main_content: false }))
        .truncated,
    ).toBe(true);
  });

  it("a page that is missing is a refunded 502; metadata addresses are refused even in development", async () => {
    expect(await refused("web-fetch", { url: `${siteUrl}/nothing` })).toMatchObject({
      status: 502,
      code: "tool_failed",
    });
    expect(
      await refused("web-fetch", { url: "http://169.254.169.254/latest/meta-data/" }),
    ).toMatchObject({ status: 422, param: "url" });
  });

  it("a page in another charset is decoded by its declared one (header, meta, http-equiv)", async () => {
    const text = async (path: string) =>
      (await run("web-fetch", { url: `${siteUrl}${path}`, format: "text", main_content: false }))
        .content;
    expect(await text("/latin1")).toBe("CaféCafé crème"); // the title, then the paragraph
    expect(await text("/meta-charset")).toBe("CrèmeCafé crème");
    expect(await text("/http-equiv")).toBe("Café crème");
    expect((await run("web-metadata", { url: `${siteUrl}/latin1` })).title).toBe("Café");
  });

  it("a windows-1252 page (or one labelled Latin-1, which WHATWG reads as windows-1252) keeps its €, curly quotes and dashes", async () => {
    const text = async (path: string) =>
      (await run("web-fetch", { url: `${siteUrl}${path}`, format: "text", main_content: false }))
        .content;
    expect(await text("/windows-1252")).toBe("€ 5“Café” — it’s € 5…"); // the title, then the paragraph
    expect(await text("/iso-8859-1")).toBe("“Café” — it’s € 5…");
    expect((await run("web-metadata", { url: `${siteUrl}/windows-1252` })).title).toBe("€ 5");
  });

  it("a page compressed although identity was asked is decompressed, up to the byte limit; an encoding it cannot undo is a refunded 502", async () => {
    for (const path of ["/gzip", "/deflate", "/br"]) {
      const page = await run("web-fetch", { url: `${siteUrl}${path}` });
      expect([path, page.title, page.content]).toEqual([
        path,
        "Toolgate ships 64 tools",
        expect.stringContaining("sixty-four tools"),
      ]);
    }
    const bomb = await run("web-fetch", { url: `${siteUrl}/gzip-bomb`, format: "text" });
    expect([bomb.truncated, bomb.content.length]).toEqual([true, 1_000_000]);
    expect(await refused("web-fetch", { url: `${siteUrl}/zstd` })).toMatchObject({
      status: 502,
      code: "tool_failed",
      message: expect.stringContaining("compressed as zstd"),
    });
  }, 30_000);

  it("a page that is not text, or a redirect to an invalid URL, is a refunded 502", async () => {
    for (const tool of ["web-fetch", "web-metadata"])
      expect(await refused(tool, { url: `${siteUrl}/image` })).toMatchObject({
        status: 502,
        code: "tool_failed",
        message: expect.stringContaining("image/png, which is not text"),
      });
    expect(await refused("web-fetch", { url: `${siteUrl}/bad-redirect` })).toMatchObject({
      status: 502,
      code: "tool_failed",
      message: expect.stringContaining("redirected to an invalid URL"),
    });
  });

  it("ai-extract-url reads the page and extracts with the model", async () => {
    const out = await run("ai-extract-url", {
      url: `${siteUrl}/news`,
      schema: { type: "object", properties: { title: { type: "string" } }, required: ["title"] },
    });
    expect(out.data).toEqual({ title: "Example Domain" });
    expect(JSON.stringify(llm.requests.at(-1)!.body.messages)).toContain("sixty-four tools");
  });
});

describe("AI tools through the OpenAI-compatible provider", () => {
  it("classify, embeddings, image generation, vision and code review speak the provider's API", async () => {
    expect(
      (await run("ai-classify", { text: "charged twice", labels: ["billing", "other"] })).label,
    ).toBe("billing");
    const emb = await run("ai-embeddings", { texts: ["aaa", "bbb"], dimensions: 8 });
    expect([emb.embeddings.length, emb.dimensions]).toEqual([2, 8]);
    expect(llm.requests.at(-1)).toMatchObject({
      path: "/v1/embeddings",
      body: { model: "test-model", input: ["aaa", "bbb"], dimensions: 8 },
    });
    const image = await run("ai-image-generate", { prompt: "a gate", size: "256x256" });
    expect(pngSize(image.data)).toEqual([2, 2]);
    expect(image.revised_prompt).toBe("a gate (revised)");
    const qr = await run("qr-code", { text: "x", size: 64 });
    await run("ai-image-describe", { image: qr.data, question: "What is this?" });
    expect(llm.requests.at(-1)!.body.messages[0].content[1].image_url.url).toMatch(
      /^data:image\/png;base64,/,
    );
    const review = await run("ai-code-review", {
      code: "let s = 0;\nconst n = xs.length;\nfor (i = 0; i <= n; i++) s += xs[i];",
    });
    expect(review.findings[0]).toMatchObject({ severity: "major", line: 3 });
  });

  it("ai-code-review: a severity word of the model's own is mapped to the nearest of the four, one it cannot place fails the call (it was shown as info); a line the code does not have is null", async () => {
    llm.state.reply = () =>
      JSON.stringify({
        summary: "Two issues.",
        findings: [
          { severity: "Low", line: 0, message: "a", suggestion: null },
          { severity: "high", line: 2, message: "b", suggestion: null },
          { severity: "medium", line: 3, message: "c", suggestion: null },
        ],
      });
    try {
      const review = await run("ai-code-review", { code: "one\ntwo" });
      expect(
        review.findings.map((f: { severity: string; line: number | null }) => [f.severity, f.line]),
      ).toEqual([
        ["major", 2],
        ["minor", null],
        ["info", null],
      ]);
      llm.state.reply = () =>
        JSON.stringify({ summary: "x", findings: [{ severity: "spicy", line: 1, message: "a" }] });
      expect(await refused("ai-code-review", { code: "one" })).toMatchObject({
        status: 502,
        code: "tool_failed",
        message: expect.stringContaining('the severity "spicy"'),
      });
    } finally {
      llm.state.reply = scriptedModel;
    }
  });

  it("ai-summarize: a summary longer than max_words is cut to max_words words, marked with an ellipsis", async () => {
    llm.state.reply = () => "one two three four five six seven eight";
    try {
      const out = await run("ai-summarize", { text: "a long text", max_words: 5 });
      expect(out.summary).toBe("one two three four five…");
      llm.state.reply = () => "one two  three";
      expect((await run("ai-summarize", { text: "a long text", max_words: 5 })).summary).toBe(
        "one two  three",
      );
    } finally {
      llm.state.reply = scriptedModel;
    }
  });
});

describe("hostile inputs are cut off by the limits, refunded, and the workers keep serving", () => {
  it("an infinite loop, a huge image, a zip bomb and a catastrophic pattern", async () => {
    expect(await refused("js-sandbox", { code: "for (;;) {}", time_limit_ms: 200 })).toMatchObject({
      status: 422,
      code: "validation_failed",
      param: "code",
    });
    expect(
      await refused("js-sandbox", {
        code: "const a = []; for (;;) a.push({ i: a.length, s: 'abcdefgh' + a.length });",
        memory_limit_mb: 4,
      }),
    ).toMatchObject({ status: 422, param: "code" });
    // A 1x1 PNG whose header says 60000 x 60000 pixels.
    const png = new PNG({ width: 1, height: 1 });
    const huge = PNG.sync.write(png);
    huge.writeUInt32BE(60000, 16);
    huge.writeUInt32BE(60000, 20);
    const { crc32 } = await import("node:zlib").then((z) => ({
      crc32: (z as unknown as { crc32?: (b: Buffer) => number }).crc32,
    }));
    if (crc32) huge.writeUInt32BE(crc32(huge.subarray(12, 29)) >>> 0, 29);
    expect(
      (await refused("image-transform", { image: huge.toString("base64"), width: 10 })).status,
    ).toBe(422);
    // A .docx whose single entry inflates to 200 MB of zeros.
    const { zipSync } = await import("fflate");
    const bomb = Buffer.from(
      zipSync({ "word/document.xml": new Uint8Array(200_000_000) }, { level: 9 }),
    );
    expect(bomb.length).toBeLessThan(1_000_000);
    expect(await refused("docx-to-text", { docx: bomb.toString("base64") })).toMatchObject({
      status: 422,
      param: "docx",
    });
    expect(
      await refused("regex-test", { pattern: "^(a+)+$", text: `${"a".repeat(40)}!` }),
    ).toMatchObject({ status: 422 });
    // Still serving, heavy and light alike.
    expect((await run("js-sandbox", { code: "40 + 2" })).result).toBe(42);
    expect((await run("hash", { text: "ok" })).digest).toHaveLength(64);
  });
});
