import { createServer, type Server } from "node:http";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeLlm } from "../helpers/fake-providers.js";
import { type GatewayProcess, spawnService } from "../helpers/gateway.js";

/**
 * No call may hold the tool workers' shared event loop: the cheap tools answer on it, one after
 * another, so a call that keeps it busy delays every other caller's. Each hostile input is sent
 * to a real workers process (src/workers/main.ts, as deployed), and a trivial `hash` call made
 * while it runs must still answer promptly; bounds are generous (a shared, slow machine), each
 * far below what the input held the loop for before.
 */
let workers: GatewayProcess;
/** A web server on loopback (which the workers may read here) serving the pages the web tools read. */
let site: Server;
let siteUrl: string;
const pages = new Map<string, string>();
/** The AI provider ai-extract-url asks, as a local server speaking its API. */
let llm: Awaited<ReturnType<typeof startFakeLlm>>;

beforeAll(async () => {
  site = createServer((req, res) => {
    const page = pages.get(req.url ?? "");
    res.writeHead(page === undefined ? 404 : 200, { "content-type": "text/html" });
    res.end(page ?? "");
  });
  await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
  siteUrl = `http://127.0.0.1:${(site.address() as { port: number }).port}`;
  llm = await startFakeLlm();
  workers = await spawnService("src/workers/main.ts", "workers listening", {
    PORT: "0",
    LOG_LEVEL: "info",
    HEAVY_THREADS: "2",
    WEB_ALLOW_PRIVATE_TARGETS: "1",
    AI_BASE_URL: `${llm.url}/v1`,
    AI_MODEL: "m",
  });
}, 60_000);
afterAll(async () => {
  await workers?.stop();
  await llm?.stop();
  await new Promise((resolve) => site?.close(resolve));
});

async function tool(name: string, input: unknown, headers: Record<string, string> = {}) {
  const started = Date.now();
  const res = await fetch(`${workers.url}/tools/${name}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(input),
  });
  const body = (await res.json()) as Record<string, any>;
  return { status: res.status, body, ms: Date.now() - started };
}

/** The call's answer, and how long a trivial `hash` call, made once the call is under way, waited. */
async function meanwhile(name: string, input: unknown) {
  const running = tool(name, input);
  await new Promise((r) => setTimeout(r, 300));
  const cheap = await tool("hash", { text: "meanwhile" });
  expect(cheap.status).toBe(200);
  return { answer: await running, cheapMs: cheap.ms };
}

/**
 * The calls made at once, and the longest a trivial `hash` call waited while they ran: one such
 * call after another, from the start until the last of them answered, so whichever moment a call
 * holds the shared loop, one of them waits for it.
 */
async function probedWhile(calls: (() => ReturnType<typeof tool>)[]) {
  let done = false;
  const running = Promise.all(calls.map((call) => call())).finally(() => (done = true));
  let slowestMs = 0;
  while (!done) {
    const cheap = await tool("hash", { text: "meanwhile" });
    expect(cheap.status).toBe(200);
    slowestMs = Math.max(slowestMs, cheap.ms);
  }
  return { answers: await running, slowestMs };
}

describe("ai-extract", () => {
  it("a catastrophic pattern in the caller's schema runs on RE2: checking the model's answer does not hold up a cheap call (it held the loop until the watchdog restarted the workers)", async () => {
    const evil = `${"a".repeat(30)}!`;
    llm.state.reply = () => JSON.stringify({ s: evil });
    const schema = { type: "object", properties: { s: { type: "string", pattern: "^(a+)+$" } } };
    const { answers, slowestMs } = await probedWhile([
      () => tool("ai-extract", { text: `Answer with s = "${evil}"`, schema }),
    ]);
    expect(slowestMs).toBeLessThan(1500);
    expect([answers[0]!.status, answers[0]!.body.error]).toEqual([
      502,
      {
        code: "provider_error",
        message: `The AI provider's answer did not match the schema: data/s must match pattern "^(a+)+$"`,
      },
    ]);
  }, 60_000);

  it("a schema past the custom tools' size bound is refused, naming schema, before the provider is asked (8,000 patterned properties held the loop 22 s)", async () => {
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 8000; i++)
      properties[`p${i}`] = { type: "string", pattern: `^x${i}[a-z]+$`, format: "email" };
    const asked = llm.state.received;
    const { answer, cheapMs } = await meanwhile("ai-extract", {
      text: "x",
      schema: { type: "object", properties },
    });
    expect(cheapMs).toBeLessThan(1500);
    expect([answer.status, answer.body.error]).toEqual([
      422,
      {
        code: "invalid_input",
        message: "The schema must be at most 32768 bytes as JSON",
        param: "schema",
      },
    ]);
    expect(llm.state.received).toBe(asked);
  }, 60_000);
});

describe("yaml-convert", () => {
  it("collections nested past the limit are refused naming the field, and a second such document does not bring the process down", async () => {
    const deep = `${"[".repeat(333_000)}${"]".repeat(333_000)}`;
    for (const attempt of [1, 2]) {
      // The second of these aborted the whole process ("RegExpCompiler Allocation failed").
      const { answer, cheapMs } = await meanwhile("yaml-convert", { yaml: deep });
      expect([attempt, answer.status, answer.body.error]).toEqual([
        attempt,
        422,
        expect.objectContaining({ code: "resource_limit", param: "yaml" }),
      ]);
      expect(cheapMs).toBeLessThan(1500);
    }
    // At the limit it is served.
    const nested = await tool("yaml-convert", { yaml: `${"- ".repeat(256)}x` });
    expect(nested.status).toBe(200);
  }, 60_000);

  it("a map of 70,000 keys is read within the tool's deadline (its duplicate check was quadratic: 2 minutes), off the shared loop", async () => {
    const yaml = Array.from({ length: 70_000 }, (_, i) => `k${i}: ${i}`).join("\n");
    const { answer, cheapMs } = await meanwhile("yaml-convert", { yaml });
    expect(answer.status).toBe(200);
    expect(Object.keys(answer.body.json)).toHaveLength(70_000);
    expect(answer.ms).toBeLessThan(10_000);
    expect(cheapMs).toBeLessThan(1500);
    // A repeated key is still the caller's error, at its place.
    const repeated = await tool("yaml-convert", { yaml: "a: 1\nb: 2\na: 3" });
    expect([repeated.status, repeated.body.error]).toEqual([
      422,
      {
        code: "invalid_input",
        message: "Not valid YAML: Map keys must be unique at line 3, column 1",
        param: "yaml",
      },
    ]);
  }, 60_000);
});

describe("token-count", () => {
  it("one long word is counted within the tool's deadline (js-tiktoken's merge is quadratic in a word's length: 10,000 letters took 11 s)", async () => {
    const word = await tool("token-count", { text: "a".repeat(1_000_000) });
    expect([word.status, word.body.tokens]).toEqual([200, 125_000]);
    expect(word.ms).toBeLessThan(9000);
    let seed = 1;
    const letters = Array.from({ length: 300_000 }, () => {
      seed = (seed * 48_271) % 2_147_483_647;
      return String.fromCharCode(97 + (seed % 26));
    }).join("");
    const random = await tool("token-count", { text: letters, encoding: "cl100k_base" });
    expect(random.status).toBe(200);
    expect(random.body.tokens).toBeGreaterThan(50_000);
    expect(random.ms).toBeLessThan(9000);
  }, 60_000);
});

describe("the parsers, converters and matchers run off the shared loop", () => {
  it("nested markup and a catastrophic pattern, sent together, are each cut off at their time limit while a cheap call answers at once (they held the loop one after another, ~5 s)", async () => {
    const hostile = [
      ["markdown-to-html", { markdown: `${"> ".repeat(100_000)}x` }, "markdown"],
      ["html-sanitize", { html: "<div>".repeat(199_000) }, "html"],
      ["regex-test", { pattern: "^(a+)+$", text: `${"a".repeat(40)}!` }, "pattern"],
    ] as const;
    const running = hostile.map(([name, input]) => tool(name, input));
    await new Promise((r) => setTimeout(r, 300));
    const cheap = await tool("hash", { text: "meanwhile" });
    expect([cheap.status, cheap.ms < 1500]).toEqual([200, true]);
    const answers = await Promise.all(running);
    expect(answers.map((a) => [a.status, a.body.error?.code, a.body.error?.param])).toEqual(
      hostile.map(([, , param]) => [422, "resource_limit", param]),
    );
  }, 60_000);

  it("a large output is checked and written in the tool's thread, and served as before", async () => {
    const converted = await tool("csv-convert", { csv: "a,b\n1,x\n2,y", header: true });
    expect([converted.status, converted.body]).toEqual([
      200,
      {
        rows: [
          { a: 1, b: "x" },
          { a: 2, b: "y" },
        ],
        csv: null,
        columns: ["a", "b"],
        errors: [],
      },
    ]);
  }, 30_000);
});

describe("id-generate", () => {
  it("random strings are drawn in bulk: 24 calls of 1,000 × 1,024 characters do not hold up a cheap call behind them (one random draw per character took ~0.5 s each)", async () => {
    const input = { kind: "random", count: 1000, length: 1024, alphabet: "alphanumeric" };
    const running = Array.from({ length: 24 }, () => tool("id-generate", input));
    await new Promise((r) => setTimeout(r, 100));
    const cheap = await tool("hash", { text: "meanwhile" });
    // Measured here: ~0.5 s behind the 24 calls; 2.6 s when each character was its own draw.
    expect([cheap.status, cheap.ms < 1500]).toEqual([200, true]);
    const answers = await Promise.all(running);
    expect(answers.map((a) => a.status)).toEqual(Array(24).fill(200));
    // Uniform over the alphabet: each of the 62 symbols near 1/62 of 1,024,000 (±20% is ~130 σ).
    const counts = new Map<string, number>();
    for (const value of answers[0]!.body.values as string[]) {
      expect(value).toMatch(/^[A-Za-z0-9]{1024}$/);
      for (const c of value) counts.set(c, (counts.get(c) ?? 0) + 1);
    }
    expect(counts.size).toBe(62);
    for (const n of counts.values()) expect(Math.abs(n / (1_024_000 / 62) - 1)).toBeLessThan(0.2);
  }, 60_000);
});

describe("web-metadata", () => {
  it("a page of deeply nested markup is cut off at the markup time limit (it held the loop 5 minutes, then brought the process down)", async () => {
    pages.set("/nested", "<div>".repeat(980_000));
    const { answer, cheapMs } = await meanwhile("web-metadata", { url: `${siteUrl}/nested` });
    expect([answer.status, answer.body.error?.code, answer.body.error?.param]).toEqual([
      422,
      "resource_limit",
      "url",
    ]);
    // The page is read in a heavy thread: it took the loop up to its 2 s markup limit when read there.
    expect(cheapMs).toBeLessThan(1500);
    pages.set(
      "/plain",
      '<html lang="en"><head><title>T</title></head><body><a href="/a">A</a></body></html>',
    );
    const plain = await tool("web-metadata", { url: `${siteUrl}/plain` });
    expect([plain.status, plain.body.title, plain.body.language, plain.body.links]).toEqual([
      200,
      "T",
      "en",
      [{ url: `${siteUrl}/a`, text: "A", rel: null }],
    ]);
  }, 60_000);
});

describe("date-parse", () => {
  it("texts full of dates are read off the shared loop: six such calls do not hold up a cheap call (~0.6 s each on it)", async () => {
    const text = "from 1 to 2 may ".repeat(6000);
    const running = Array.from({ length: 6 }, () => tool("date-parse", { text }));
    await new Promise((r) => setTimeout(r, 100));
    const cheap = await tool("hash", { text: "meanwhile" });
    expect([cheap.status, cheap.ms < 1500]).toEqual([200, true]);
    const answers = await Promise.all(running);
    expect(answers.map((a) => [a.status, a.body.dates?.length ?? a.body.error?.message])).toEqual(
      Array(6).fill([200, 6000]),
    );
  }, 60_000);
});

describe("image-metadata", () => {
  it("an image's XMP text is read off the shared loop: the workers answer /healthz before any of four images with 64 KB of unclosed XMP tags (exifr scans to the end for each tag: ~0.25 s a call, one call after another on the loop)", async () => {
    // A JPEG whose one XMP segment is as large as a segment can be: under the 64 KB the tool reads.
    const jpeg = await sharp({
      create: { width: 8, height: 8, channels: 3, background: "#fff" },
    })
      .jpeg()
      .toBuffer();
    const head = Buffer.from("http://ns.adobe.com/xap/1.0/\0<x:xmpmeta><rdf:RDF><rdf:Description>");
    const payload = Buffer.concat([
      head,
      Buffer.from("<a:b>".repeat(Math.floor((65_533 - head.length) / 5))),
    ]);
    const segment = Buffer.alloc(4);
    segment.set([0xff, 0xe1]);
    segment.writeUInt16BE(payload.length + 2, 2);
    const image = Buffer.concat([jpeg.subarray(0, 2), segment, payload, jpeg.subarray(2)]);
    const answered: string[] = [];
    const running = Array.from({ length: 4 }, () =>
      tool("image-metadata", { image: image.toString("base64") }).finally(() =>
        answered.push("image-metadata"),
      ),
    );
    await new Promise((r) => setTimeout(r, 100));
    const health = await fetch(`${workers.url}/healthz`);
    answered.push("healthz");
    expect(health.status).toBe(200);
    const answers = await Promise.all(running);
    // On the loop, /healthz waited for at least the call under way when it arrived.
    expect(answered[0]).toBe("healthz");
    expect(answers.map((a) => [a.status, a.body.format, a.body.width])).toEqual(
      Array(4).fill([200, "jpeg", 8]),
    );
  }, 60_000);
});

describe("a heavy tool's input", () => {
  it("is parsed and checked against the tool's schema in its thread: eight calls of 100,000 rows to write as CSV do not hold up cheap calls (~0.25 s each on the shared loop)", async () => {
    // A sheet of 100,000 rows of ten cells, most of them empty: the schema's checks per cell cost
    // more than reading the JSON, so the check's share stands out.
    const rows = Array.from({ length: 100_000 }, (_, i) => [i, ...Array(9).fill(null)]);
    // Eight calls of ~2 s each in two threads: the last ends near csv-convert's own 10 s deadline,
    // so they are given the time the gateway gives a slower tool (the deadline is not the point).
    const deadline = { "x-toolgate-deadline-ms": "30000" };
    const { answers, slowestMs } = await probedWhile(
      Array.from({ length: 8 }, () => () => tool("csv-convert", { rows }, deadline)),
    );
    // Measured here, six runs each on a busy machine: 0.15-0.36 s with the body parsed and checked
    // in the thread; 0.19-1.15 s with it parsed on the loop (and copied to the thread as objects);
    // 2.8-4.4 s with it checked on the loop too.
    expect(slowestMs).toBeLessThan(1500);
    expect(answers.map((a) => [a.status, a.body.csv?.split("\n").length])).toEqual(
      Array(8).fill([200, 100_000]),
    );
  }, 60_000);

  it('that does not match the schema is refused from the thread as before: 422 naming the field, "" for the body as a whole', async () => {
    const refusals = await Promise.all(
      [
        { rows: [{ a: 1 }], csv: "a" },
        { rows: [{ a: 1 }, { a: { b: 1 } }] },
        { csv: "a", extra: 1 },
        [1],
      ].map((input) => tool("csv-convert", input)),
    );
    expect(refusals.map((r) => [r.status, r.body])).toEqual([
      [
        422,
        {
          error: {
            code: "invalid_input",
            message: "Send exactly one of csv or rows",
            param: "csv",
          },
        },
      ],
      [422, { error: { code: "invalid_input", message: "Invalid input", param: "rows.1" } }],
      [422, { error: { code: "invalid_input", message: 'Unrecognized key: "extra"', param: "" } }],
      [
        422,
        {
          error: {
            code: "invalid_input",
            message: "Invalid input: expected object, received array",
            param: "",
          },
        },
      ],
    ]);
    // A body that is not JSON (the gateway never sends one) is the caller's 422 too, from the thread.
    const garbled = await fetch(`${workers.url}/tools/csv-convert`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"rows": [',
    });
    expect([garbled.status, await garbled.json()]).toEqual([
      422,
      { error: { code: "invalid_input", message: "The body is not valid JSON.", param: "" } },
    ]);
  }, 30_000);
});

/** Text of about `bytes` characters: `head`, then `unit(0)`, `unit(1)`… as many as fit, then `tail`. */
function filled(head: string, unit: (i: number) => string, tail: string, bytes: number): string {
  const parts = [head];
  let size = head.length + tail.length;
  for (let i = 0; size + unit(i).length <= bytes; i++) {
    parts.push(unit(i));
    size += unit(i).length;
  }
  parts.push(tail);
  return parts.join("");
}

describe("the web tools fetch on the shared loop and read the page in a heavy thread", () => {
  it("a 4.9 MB feed, sitemap and robots.txt, and a page of nested markup, read together, do not hold up cheap calls (they held the loop 0.3-2 s each, one after another)", async () => {
    const size = 4_900_000;
    pages.set(
      "/big-feed.xml",
      filled(
        '<?xml version="1.0"?><rss version="2.0"><channel><title>Big</title>',
        (i) =>
          `<item><title>Item ${i}</title><link>https://a.example/${i}</link><guid>g${i}</guid><description>Entry ${i}, about the weather.</description></item>`,
        "</channel></rss>",
        size,
      ),
    );
    pages.set(
      "/big-sitemap.xml",
      filled(
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">',
        (i) => `<url><loc>https://a.example/p/${i}</loc><lastmod>2026-11-22</lastmod></url>`,
        "</urlset>",
        size,
      ),
    );
    pages.set(
      "/robots.txt",
      filled("User-agent: *\n", (i) => `Disallow: /p/${i}/\n`, "", size),
    );
    pages.set("/nested-page", "<div>".repeat(980_000));
    const { answers, slowestMs } = await probedWhile([
      () => tool("rss-read", { url: `${siteUrl}/big-feed.xml`, max_items: 2 }),
      () => tool("sitemap-read", { url: `${siteUrl}/big-sitemap.xml`, max_urls: 1 }),
      () => tool("robots-check", { url: `${siteUrl}/p/7/x` }),
      () => tool("web-fetch", { url: `${siteUrl}/nested-page` }),
      () => tool("web-metadata", { url: `${siteUrl}/nested-page` }),
    ]);
    // Measured here: 0.14-0.18 s; 4-4.9 s with the pages read on the loop (alone, each held it
    // 0.25-0.65 s, web-fetch and web-metadata 2 s).
    expect(slowestMs).toBeLessThan(1500);
    const [feed, sitemap, robots, page, metadata] = answers.map((a) => a.body);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 422, 422]);
    expect(feed!.items.map((item: { title: string }) => item.title)).toEqual(["Item 0", "Item 1"]);
    expect([sitemap!.total > 60_000, sitemap!.entries]).toEqual([
      true,
      [{ loc: "https://a.example/p/0", lastmod: "2026-11-22", changefreq: null, priority: null }],
    ]);
    expect([robots!.found, robots!.allowed]).toEqual([true, false]);
    for (const refused of [page, metadata])
      expect(refused!.error).toEqual({
        code: "resource_limit",
        message: "The page took longer than 2000 ms and was stopped.",
        param: "url",
      });
  }, 60_000);

  it("ai-extract-url reads its page in a thread too: nested markup is cut off there while cheap calls answer (it held the loop 2 s), and a long page's text reaches the model cut to 100,000 characters", async () => {
    pages.set("/nested-page", "<div>".repeat(980_000));
    const schema = { type: "object", properties: { title: { type: "string" } } };
    const { answers, slowestMs } = await probedWhile([
      () => tool("ai-extract-url", { url: `${siteUrl}/nested-page`, schema }),
    ]);
    expect(slowestMs).toBeLessThan(1500);
    expect([answers[0]!.status, answers[0]!.body.error]).toEqual([
      422,
      {
        code: "resource_limit",
        message: "The page took longer than 2000 ms and was stopped.",
        param: "url",
      },
    ]);

    pages.set(
      "/long-article",
      `<html><head><title>Long</title></head><body><article><h1>Long read</h1><p>${"word ".repeat(40_000)}</p><p>THE END</p></article></body></html>`,
    );
    let prompt = "";
    llm.state.reply = (req) => {
      prompt = JSON.stringify(req.messages);
      return JSON.stringify({ title: "Long read" });
    };
    const long = await tool("ai-extract-url", { url: `${siteUrl}/long-article`, schema });
    expect([long.status, long.body.data, long.body.url]).toEqual([
      200,
      { title: "Long read" },
      `${siteUrl}/long-article`,
    ]);
    expect(prompt).toContain("word word");
    expect(prompt).not.toContain("THE END");
  }, 60_000);

  it("a sitemap nested past its parser's limit is refused as nested markup is, naming url; one it cannot parse is not a sitemap (both answered 500)", async () => {
    pages.set(
      "/deep-sitemap.xml",
      `<urlset>${"<url>".repeat(101)}${"</url>".repeat(101)}</urlset>`,
    );
    const deep = await tool("sitemap-read", { url: `${siteUrl}/deep-sitemap.xml` });
    expect([deep.status, deep.body]).toEqual([
      422,
      {
        error: {
          code: "resource_limit",
          message: "The sitemap is nested deeper than 100 elements; it was refused.",
          param: "url",
        },
      },
    ]);
    // One the parser cannot read at all is not a sitemap, as a page that is not a feed is for rss-read.
    pages.set("/broken-sitemap.xml", "<urlset><url><loc>x</loc></url></urlset");
    const broken = await tool("sitemap-read", { url: `${siteUrl}/broken-sitemap.xml` });
    expect([broken.status, broken.body]).toEqual([
      502,
      {
        error: {
          code: "fetch_failed",
          message: `${siteUrl}/broken-sitemap.xml is not an XML sitemap: Closing Tag is not closed.`,
        },
      },
    ]);
    // Within the limit it is read.
    pages.set(
      "/nested-sitemap.xml",
      `<urlset>${"<url>".repeat(90)}${"</url>".repeat(90)}</urlset>`,
    );
    const nested = await tool("sitemap-read", { url: `${siteUrl}/nested-sitemap.xml` });
    expect([nested.status, nested.body.kind]).toEqual([200, "urlset"]);
  }, 30_000);
});
