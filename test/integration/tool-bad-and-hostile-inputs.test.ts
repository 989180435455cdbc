import { crc32, deflateRawSync, deflateSync } from "node:zlib";
import { unzipSync } from "fflate";
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

/**
 * What a caller sees when the input is wrong or hostile, for every tool of the catalogue:
 * - a bad input is 422 `validation_failed` with `param` naming the field, and nothing is charged
 *   (derived from each tool's published input schema, plus what only the tool itself can judge);
 * - a hostile input — a decompression-bomb image, a zip bomb, an endless script, a catastrophic
 *   pattern, markup nested to exhaust a parser — is cut off by the limits, refunded, and the
 *   workers go on serving.
 * One gateway, its providers (an OpenAI-compatible model, SearXNG) as local servers, so every
 * tool is available and its own validation answers; one heavy thread, so "keeps serving" is
 * asked of the very thread that met the hostile input.
 */
let gw: TestGateway;
let llm: Awaited<ReturnType<typeof startFakeLlm>>;
let searxng: Awaited<ReturnType<typeof startFakeSearxng>>;
let catalogue: Tool[];
let key: string;

interface Property {
  type?: string | string[];
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
}
interface Tool {
  name: string;
  input_schema: {
    properties: Record<string, Property>;
    required?: string[];
    examples: Record<string, unknown>[];
  };
}

beforeAll(async () => {
  llm = await startFakeLlm();
  llm.state.reply = scriptedModel;
  searxng = await startFakeSearxng([{ title: "A", url: "https://a.example/", content: "a" }]);
  gw = await startGateway({
    workerEnv: {
      AI_BASE_URL: `${llm.url}/v1`,
      AI_MODEL: "m",
      SEARXNG_URL: searxng.url,
      HEAVY_THREADS: "1",
    },
  });
  catalogue = (await call(`${gw.url}/v1/tools`)).body.data;
  ({ key } = await fundedAccount(gw.url, 100_000));
}, 60_000);
afterAll(async () => {
  await gw?.stop();
  await llm?.stop();
  await searxng?.stop();
});

/** A value of the wrong JSON type for a property; undefined (leave the field out) when its schema names no single type. */
function wrongType(property: Property): unknown {
  const type = Array.isArray(property.type) ? property.type[0] : property.type;
  return {
    string: 12345,
    number: "12",
    integer: "12",
    boolean: "yes",
    array: "not a list",
    object: "not an object",
  }[type ?? ""];
}

/** A refused call: what the caller saw, and whether the balance moved. */
async function refusal(tool: string, input: unknown) {
  const before = await balanceOf(gw.url, key);
  const res = await callTool(gw.url, key, tool, input);
  const charged = before - (await balanceOf(gw.url, key));
  return {
    status: res.status,
    code: res.body.error?.code as string | undefined,
    param: res.body.error?.param as string | undefined,
    charged,
  };
}

describe("bad input, for every tool: 422 naming the field, uncharged", () => {
  it("a value of the wrong type (or none) in each required field", async () => {
    const before = await balanceOf(gw.url, key);
    const seen: unknown[] = [];
    const expected: unknown[] = [];
    for (const tool of catalogue) {
      const example = tool.input_schema.examples[0]!;
      // Tools whose input is one of several shapes (csv-convert: rows or csv) require nothing by
      // name: the fields of their worked example are the ones to spoil.
      const fields = tool.input_schema.required ?? Object.keys(example);
      expect([tool.name, fields.length]).not.toEqual([tool.name, 0]);
      for (const field of fields) {
        const bad = { ...example, [field]: wrongType(tool.input_schema.properties[field] ?? {}) };
        if (bad[field] === undefined) delete bad[field];
        const res = await callTool(gw.url, key, tool.name, bad);
        seen.push([tool.name, field, res.status, res.body.error?.code, res.body.error?.param]);
        expected.push([tool.name, field, 422, "validation_failed", field]);
      }
    }
    expect(seen).toEqual(expected);
    expect(seen.length).toBeGreaterThanOrEqual(64);
    expect(await balanceOf(gw.url, key)).toBe(before);
  }, 120_000);

  it("a value outside a field's published choices or bounds", async () => {
    const before = await balanceOf(gw.url, key);
    const seen: unknown[] = [];
    const expected: unknown[] = [];
    for (const tool of catalogue) {
      const example = tool.input_schema.examples[0]!;
      for (const [field, property] of Object.entries(tool.input_schema.properties)) {
        const outside = property.enum
          ? "none-of-the-choices"
          : property.maximum !== undefined
            ? property.maximum + 1
            : property.minimum !== undefined
              ? property.minimum - 1
              : undefined;
        if (outside === undefined) continue;
        const res = await callTool(gw.url, key, tool.name, { ...example, [field]: outside });
        seen.push([tool.name, field, res.status, res.body.error?.param]);
        expected.push([tool.name, field, 422, field]);
      }
    }
    expect(seen).toEqual(expected);
    expect(seen.length).toBeGreaterThan(40);
    // A web address of another scheme is told which are taken, in every web tool.
    for (const tool of catalogue.filter((t) => t.input_schema.examples[0]?.url !== undefined)) {
      const example = tool.input_schema.examples[0]!;
      const res = await callTool(gw.url, key, tool.name, {
        ...example,
        url: "ftp://files.example/a",
      });
      expect([tool.name, res.status, res.body.error.param]).toEqual([tool.name, 422, "url"]);
      expect(res.body.error.message).toContain("http:// or https://");
    }
    expect(await balanceOf(gw.url, key)).toBe(before);
  }, 120_000);

  it("input only the tool can judge: not the file, zone, unit, address or code it claims to be", async () => {
    const b64 = (text: string) => Buffer.from(text).toString("base64");
    const cases: [string, Record<string, unknown>, string][] = [
      ["image-transform", { image: b64("not an image"), width: 10 }, "image"],
      ["image-metadata", { image: b64("not an image") }, "image"],
      ["ocr", { image: b64("not an image") }, "image"],
      ["qr-decode", { image: b64("not an image") }, "image"],
      ["spreadsheet-read", { xlsx: b64("not a zip") }, "xlsx"],
      ["docx-to-text", { docx: b64("not a zip") }, "docx"],
      ["pdf-extract-text", { pdf: b64("not a pdf") }, "pdf"],
      ["svg-to-png", { svg: "not svg" }, "svg"],
      [
        "svg-to-png",
        {
          svg: '<svg xmlns="http://www.w3.org/2000/svg" width="2" height="2"/>',
          background: "abc",
        },
        "background",
      ],
      ["qr-code", { text: "a\ud800b" }, "text"],
      ["qr-code", { text: "😀".repeat(2000), error_correction: "H" }, "text"],
      ["chart-render", { spec: { mark: "nope" } }, "spec"],
      ["timezone-convert", { datetime: "2026-01-01T10:00:00Z", to_zone: "Mars/Base" }, "to_zone"],
      ["unit-convert", { value: 1, from: "m", to: "kg" }, "to"],
      // An unknown `from` is the `from`'s fault, not the `to`'s.
      ["unit-convert", { value: 1, from: "furlongz", to: "m" }, "from"],
      ["ip-cidr", { cidr: "300.1.1.1/33" }, "cidr"],
      ["encode-decode", { text: "zz", encoding: "hex", direction: "decode" }, "text"],
      ["json-schema-validate", { schema: { type: "nope" }, data: 1 }, "schema"],
      ["code-format", { code: "{ not json", language: "json" }, "code"],
      ["math-evaluate", { expression: "1 +" }, "expression"],
      ["sql-query", { query: "SELECT * FROM missing" }, "query"],
      ["yaml-convert", { yaml: "a: [" }, "yaml"],
      ["xml-convert", { xml: "<a><b></a>" }, "xml"],
      ["regex-test", { pattern: "(", text: "x" }, "pattern"],
      ["cron-explain", { expression: "not cron" }, "expression"],
      ["barcode-generate", { type: "ean13", text: "not digits" }, "text"],
      ["js-sandbox", { code: "for (;;) {}", time_limit_ms: 100 }, "code"],
      ["web-fetch", { url: "http://169.254.169.254/latest/meta-data/" }, "url"],
    ];
    const seen = [];
    for (const [tool, input, _param] of cases) seen.push([tool, await refusal(tool, input)]);
    expect(seen).toEqual(
      cases.map(([tool, , param]) => [
        tool,
        { status: 422, code: "validation_failed", param, charged: 0 },
      ]),
    );
  }, 60_000);
});

/** A PNG file: signature, then chunks with their CRCs. */
function png(width: number, height: number, idat: Buffer, extra: [string, Buffer][] = []): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
    const out = Buffer.alloc(body.length + 8);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc32(body) >>> 0, body.length + 4);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 0, 0, 0, 0], 8); // 8-bit greyscale
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    ...extra.map(([type, data]) => chunk(type, data)),
    chunk("IDAT", idat),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

/** A PDF of the given objects (numbered from 1, the first the catalog), with a correct xref table. */
function pdfOf(objects: string[]): string {
  let out = "%PDF-1.4\n";
  const offsets = objects.map((object, i) => {
    const at = out.length;
    out += `${i + 1} 0 obj\n${object}\nendobj\n`;
    return at;
  });
  const xref = out.length;
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const at of offsets) out += `${String(at).padStart(10, "0")} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, "latin1").toString("base64");
}

/** 150 MB of zeros, deflated once (~150 KB): the zip bombs' one entry. The budget is 100 MB. */
const BOMB_SIZE = 150_000_000;
let bombData: { deflated: Buffer; crc: number } | null = null;

/**
 * A ZIP holding `entry`, which inflates to 150 MB: as built, and with headers that claim 100
 * bytes (so only inflating it tells). Written by hand: one local header, its data, one central
 * directory record and the end record (APPNOTE 4.3).
 */
function zipBombs(entry: string): { honest: string; lying: string } {
  bombData ??= {
    deflated: deflateRawSync(Buffer.alloc(BOMB_SIZE), { level: 9 }),
    crc: crc32(Buffer.alloc(BOMB_SIZE)) >>> 0,
  };
  const { deflated, crc } = bombData;
  const name = Buffer.from(entry);
  const build = (claimed: number) => {
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt16LE(8, 8); // deflate
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(deflated.length, 18);
    local.writeUInt32LE(claimed, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(8, 10);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(deflated.length, 20);
    central.writeUInt32LE(claimed, 24);
    central.writeUInt16LE(name.length, 28);
    const centralAt = local.length + name.length + deflated.length;
    const end = Buffer.alloc(22);
    end.writeUInt32LE(0x06054b50, 0);
    end.writeUInt16LE(1, 8);
    end.writeUInt16LE(1, 10);
    end.writeUInt32LE(central.length + name.length, 12);
    end.writeUInt32LE(centralAt, 16);
    return Buffer.concat([local, name, deflated, central, name, end]).toString("base64");
  };
  return { honest: build(BOMB_SIZE), lying: build(100) };
}

describe("web tools and the gateway's own network", () => {
  it("say of a host name only that it does not resolve to a public address: a name of the gateway's network and a name that does not resolve are refused alike, uncharged", async () => {
    const refused = async (host: string) => {
      const before = await balanceOf(gw.url, key);
      const res = await callTool(gw.url, key, "web-fetch", { url: `http://${host}/admin` });
      return {
        status: res.status,
        code: res.body.error?.code,
        param: res.body.error?.param,
        message: String(res.body.error?.message).replaceAll(host, "<host>"),
        charged: before - (await balanceOf(gw.url, key)),
      };
    };
    const internal = await refused("localhost");
    expect(internal).toMatchObject({
      status: 422,
      code: "validation_failed",
      param: "url",
      charged: 0,
    });
    expect(internal.message).toBe(
      "Refused to connect to <host>: it does not resolve to a public address.",
    );
    // A 502 "Could not read …: ENOTFOUND" for this one told a prober which internal names exist.
    expect(await refused("no-such-host.invalid")).toEqual(internal);
  });
});

describe("hostile inputs: cut off by the limits, refunded, and the workers keep serving", () => {
  const cutOff = (param: string) => ({ status: 422, code: "validation_failed", param, charged: 0 });

  it("a decompression-bomb image: 8000 × 8000 pixels of real, valid data in 64 KB, and a header that claims 60000 × 60000", async () => {
    const rows = Buffer.alloc(8000 * 8001); // each row: filter byte + 8000 grey pixels, all zero
    const bomb = png(8000, 8000, deflateSync(rows, { level: 9 })).toString("base64");
    expect(bomb.length).toBeLessThan(200_000);
    const claims = png(60000, 60000, deflateSync(Buffer.alloc(2))).toString("base64");
    for (const image of [bomb, claims]) {
      for (const [tool, extra] of [
        ["image-transform", { width: 10 }],
        ["image-metadata", {}],
        ["ocr", {}],
        ["qr-decode", {}],
      ] as const) {
        expect([tool, await refusal(tool, { image, ...extra })]).toEqual([tool, cutOff("image")]);
      }
    }
  }, 60_000);

  it("an SVG that expands exponentially, or claims a canvas of ten billion pixels", async () => {
    const levels = Array.from(
      { length: 30 },
      (_, i) => `<g id="a${i + 1}"><use href="#a${i}"/><use href="#a${i}"/></g>`,
    ).join("");
    const expanding = `<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><defs><g id="a0"><rect width="1" height="1"/></g>${levels}</defs><use href="#a30"/></svg>`;
    expect(await refusal("svg-to-png", { svg: expanding })).toEqual(cutOff("svg"));
    expect(
      await refusal("svg-to-png", {
        svg: '<svg xmlns="http://www.w3.org/2000/svg" width="100000" height="100000"/>',
      }),
    ).toEqual(cutOff("svg"));
  }, 30_000);

  it("native work a thread's termination cannot stop, refused before it starts: a wide dilation filter, a small image turned and filled out to 64 megapixels", async () => {
    const started = Date.now();
    const dilated = `<svg xmlns="http://www.w3.org/2000/svg" width="1000" height="1000"><filter id="f" x="0" y="0" width="1" height="1"><feMorphology operator="dilate" radius="300"/></filter><rect width="1000" height="1000" filter="url(#f)"/></svg>`;
    expect(await refusal("svg-to-png", { svg: dilated })).toEqual(cutOff("svg"));
    const small = png(64, 64, deflateSync(Buffer.alloc(64 * 65))).toString("base64");
    const turned = {
      image: small,
      width: 8000,
      height: 8000,
      fit: "fill",
      rotate: 45,
      format: "avif",
    };
    expect(await refusal("image-transform", turned)).toEqual(cutOff("width"));
    expect(Date.now() - started).toBeLessThan(5000);
    // The same, small enough: served.
    expect(
      (await callTool(gw.url, key, "image-transform", { ...turned, width: 100, height: 100 })).body,
    ).toMatchObject({ format: "avif", width: 100, height: 100 });
  }, 60_000);

  it("a chart that generates fifty million rows", async () => {
    const spec = {
      data: { sequence: { start: 0, stop: 50_000_000 } },
      mark: "point",
      encoding: { x: { field: "data", type: "quantitative" } },
    };
    expect(await refusal("chart-render", { spec })).toEqual(cutOff("spec"));
  });

  it("charts whose few bytes exhaust the heap in one allocation (which ended the whole workers process): 422 naming the field, and other calls are served meanwhile", async () => {
    const values = [{ v: 0 }, { v: 1 }];
    const specs = [
      // The scale's bin boundaries: a hundred million of them, in one array.
      {
        data: { values },
        mark: "bar",
        encoding: {
          x: { field: "v", bin: { step: 1e-8 }, type: "quantitative" },
          y: { aggregate: "count" },
        },
      },
      // Vega's expression language builds arrays of any length.
      {
        data: { values },
        transform: [{ calculate: "sequence(0, 1e9)", as: "s" }],
        mark: "point",
        encoding: { x: { field: "v", type: "quantitative" } },
      },
    ];
    // Another account's call meanwhile (its charge is not the refusal's).
    const { key: other } = await fundedAccount(gw.url, 10);
    for (const spec of specs) {
      const [outcome, light] = await Promise.all([
        refusal("chart-render", { spec }),
        new Promise((r) => setTimeout(r, 500)).then(() =>
          callTool(gw.url, other, "hash", { text: "meanwhile" }),
        ),
      ]);
      // Its process dies once V8's last-resort collections fail (a few seconds): 422 naming the
      // field; on a loaded machine the deadline can come first (504). Uncharged either way.
      expect([outcome, light.status]).toEqual([
        outcome.status === 504
          ? { status: 504, code: "tool_timeout", param: undefined, charged: 0 }
          : cutOff("spec"),
        200,
      ]);
    }
    // The pool starts another process for the next call.
    const chart = await callTool(gw.url, key, "chart-render", {
      spec: {
        data: { values },
        mark: "point",
        encoding: { x: { field: "v", type: "quantitative" } },
      },
      format: "svg",
    });
    expect(chart.status).toBe(200);
  }, 120_000);

  it("a PDF whose 700 KB content stream inflates to 700 MB: its process is killed past twice the heap limit in resident memory (the heap limit does not count inflated buffers), 422", async () => {
    const text = Buffer.alloc(700 * 1024 * 1024, " ");
    text.write("BT /F1 12 Tf 72 720 Td (x) Tj ET");
    const stream = deflateSync(text, { level: 9 });
    const pdf = pdfOf([
      "<< /Type /Catalog /Pages 2 0 R >>",
      "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
      "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
      `<< /Filter /FlateDecode /Length ${stream.length} >>\nstream\n${stream.toString("latin1")}\nendstream`,
    ]);
    expect(await refusal("pdf-extract-text", { pdf })).toEqual(cutOff("pdf"));
  }, 60_000);

  it("zip bombs for the .docx and .xlsx readers, with honest headers and with lying ones", async () => {
    const docx = zipBombs("word/document.xml");
    const xlsx = zipBombs("xl/workbook.xml");
    expect(docx.honest.length).toBeLessThan(750_000);
    // A well-formed ZIP: a reader that trusts the headers takes the lying one for 100 bytes.
    unzipSync(Buffer.from(docx.lying, "base64"), {
      filter: (file) => {
        expect([file.name, file.originalSize]).toEqual(["word/document.xml", 100]);
        return false;
      },
    });
    for (const form of ["honest", "lying"] as const) {
      expect([form, await refusal("docx-to-text", { docx: docx[form] })]).toEqual([
        form,
        cutOff("docx"),
      ]);
      expect([form, await refusal("spreadsheet-read", { xlsx: xlsx[form] })]).toEqual([
        form,
        cutOff("xlsx"),
      ]);
    }
  }, 60_000);

  it("endless scripts in the sandbox: a loop that swallows its interruption, an endless await, unbounded recursion and memory", async () => {
    const scripts = [
      "for (;;) { try { for (;;) {} } catch (e) {} }",
      "(async () => { for (;;) await null })()",
      "Promise.resolve().then(function again() { return Promise.resolve().then(again) })",
      "(function down(n) { return down(n + 1) + 1 })(0)",
      "'x'.repeat(1e9)",
    ];
    for (const code of scripts) {
      const outcome = await refusal("js-sandbox", { code, time_limit_ms: 300 });
      // Recursion ends in the script's own RangeError (a 200 result naming it) or the limits; never charged past them.
      if (code.includes("down(")) continue;
      expect([code, outcome]).toEqual([code, cutOff("code")]);
    }
    const recursion = await callTool(gw.url, key, "js-sandbox", { code: scripts[3] });
    expect([recursion.status, recursion.body.error]).toEqual([
      200,
      expect.stringMatching(/stack|recursion/i),
    ]);
    // An async result that settles is the script's result.
    expect(
      (await callTool(gw.url, key, "js-sandbox", { code: "(async () => 6 * 7)()" })).body,
    ).toMatchObject({ result: 42, error: null });
  }, 60_000);

  it("catastrophic patterns, in a regular expression and in a JSON Schema", async () => {
    const evil = `${"a".repeat(40)}!`;
    expect(await refusal("regex-test", { pattern: "^(a+)+$", text: evil })).toEqual(
      cutOff("pattern"),
    );
    expect(
      await refusal("json-schema-validate", {
        schema: { type: "string", pattern: "^(a+)+$" },
        data: evil,
      }),
    ).toEqual(cutOff("schema"));
  }, 30_000);

  it("texts whose cost grows faster than their length: two unrelated texts to diff, markup nested 100,000 to 199,000 deep", async () => {
    const random = (n: number) =>
      Array.from({ length: n }, () =>
        String.fromCharCode(97 + Math.floor(Math.random() * 26)),
      ).join("");
    expect(
      await refusal("text-diff", { old: random(200_000), new: random(200_000), mode: "chars" }),
    ).toEqual(cutOff("new"));
    // 100,000 unclosed <div>s take sanitize-html about 2 s here, right at the limit: 199,000 (just
    // under the 1,000,000-character field limit) take about 10 s, far past it on any machine.
    expect(await refusal("html-sanitize", { html: "<div>".repeat(199_000) })).toEqual(
      cutOff("html"),
    );
    expect(await refusal("markdown-to-html", { markdown: `${"> ".repeat(100_000)}x` })).toEqual(
      cutOff("markdown"),
    );
    expect(await refusal("html-to-markdown", { html: "<div>".repeat(100_000) })).toEqual(
      cutOff("html"),
    );
  }, 60_000);

  it("a text with a run of more than 500 characters without a space is refused at once by the wink-nlp tools, uncharged: its tokenizing ran to the deadline", async () => {
    // One 200 KB word ran each of them to its 10 s deadline (refunded): one account's calls
    // held the heavy threads at no cost. Now refused before the tokenizer sees it.
    for (const tool of [
      "text-sentiment",
      "text-entities",
      "text-keywords",
      "sentence-split",
      "readability-score",
      "text-summarize-extractive",
    ]) {
      const started = Date.now();
      expect([tool, await refusal(tool, { text: `Hello. ${"b".repeat(200_000 - 7)}` })]).toEqual([
        tool,
        { status: 422, code: "validation_failed", param: "text", charged: 0 },
      ]);
      expect(Date.now() - started).toBeLessThan(3000);
    }
    const refused = await callTool(gw.url, key, "text-keywords", { text: `a ${"b".repeat(501)}` });
    expect(refused.body.error.message).toBe(
      "The text has 501 characters without a space at character 2: this tool reads runs of up to 500 characters.",
    );
    // A run of 500 is read.
    const url = `https://example.com/${"a".repeat(480)}`;
    expect(url.length).toBe(500);
    const read = await callTool(gw.url, key, "sentence-split", { text: `See ${url} now. Thanks.` });
    expect([read.status, read.body.sentence_count]).toEqual([200, 2]);
  }, 120_000);

  it("language texts whose analysis grows steeply run in their own thread: the general tools answer meanwhile; a 10,000-letter misspelling gets no suggestions", async () => {
    // One 200 KB word held the general worker's event loop ~28 s (every tool timed out, refunded);
    // such a word is refused now (above), and the slowest text allowed, runs of 500 characters
    // that the tokenizer splits at each slash, takes about a second.
    const before = await balanceOf(gw.url, key);
    const run = "http://x/".repeat(56).slice(0, 500);
    const word = callTool(gw.url, key, "text-sentiment", { text: `${run} `.repeat(399) });
    await new Promise((r) => setTimeout(r, 500));
    const asked = Date.now();
    expect((await callTool(gw.url, key, "hash", { text: "meanwhile" })).status).toBe(200);
    expect(Date.now() - asked).toBeLessThan(2000);
    const analysed = await word;
    // Done within its deadline (charged) or stopped at it (refunded): never the workers' time.
    expect([200, 504]).toContain(analysed.status);
    expect(before - (await balanceOf(gw.url, key))).toBe(analysed.status === 200 ? 2 : 1);
    // Suggestions for a 10,000-letter word ran the worker out of memory; none are looked for.
    const spelled = await callTool(gw.url, key, "spell-check", { text: "qwzx".repeat(2500) });
    expect(spelled.status).toBe(200);
    expect(spelled.body.misspelled).toEqual([
      { word: "qwzx".repeat(2500), offset: 0, suggestions: [] },
    ]);
  }, 60_000);

  it("SQL whose result or working memory would outgrow the thread: huge BLOBs, a string doubled forty times", async () => {
    for (const query of [
      "SELECT zeroblob(30000000) AS b",
      "SELECT zeroblob(9000000) AS b FROM (SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4)",
      "WITH RECURSIVE r(s, n) AS (SELECT 'xxxxxxxx', 1 UNION ALL SELECT s || s, n + 1 FROM r WHERE n < 40) SELECT max(length(s)) FROM r",
      // 17 M characters, but each control character is six in JSON, and the euro sign makes the
      // whole text two bytes a character: 200 MB of answer, weighed as 17 MB before.
      "SELECT '€' || replace(hex(zeroblob(8500000)), '0', char(1)) AS n",
    ]) {
      expect([query, await refusal("sql-query", { query })]).toEqual([query, cutOff("query")]);
    }
    // A 30 MB BLOB written as JSON (thirty million keys) aborted the whole workers process.
    expect((await callTool(gw.url, key, "hash", { text: "still up" })).status).toBe(200);
    // BLOBs come back as base64 text, not as objects keyed by byte index.
    expect(
      (
        await callTool(gw.url, key, "sql-query", {
          query: "SELECT x'00ff10' AS h, zeroblob(2) AS z",
        })
      ).body.rows,
    ).toEqual([{ h: "AP8Q", z: "AAA=" }]);
  }, 60_000);

  it("work that grows faster than its input, on the shared event loop: an image's XMP text, cron runs years apart; other calls are not held", async () => {
    // 700 KB of unclosed XMP tags: exifr's tag pattern scans to the end for each (27 s per call).
    const xmp = Buffer.concat([
      Buffer.from("XML:com.adobe.xmp\0\0\0\0\0", "latin1"),
      Buffer.from(`<x:xmpmeta>${"<a:b>".repeat(140_000)}</x:xmpmeta>`),
    ]);
    const image = png(8, 8, deflateSync(Buffer.alloc(8 * 9)), [["iTXt", xmp]]).toString("base64");
    const cron = {
      expression: "0 0 0 * 2 1#5",
      count: 100,
      timezone: "America/Santiago",
      from: "2026-01-01T00:00:00Z",
    };
    for (const [tool, input] of [
      ["image-metadata", { image }],
      ["cron-explain", cron],
    ] as const) {
      const started = Date.now();
      const [res, light] = await Promise.all([
        callTool(gw.url, key, tool, input),
        new Promise((r) => setTimeout(r, 100)).then(async () => {
          const sent = Date.now();
          await callTool(gw.url, key, "hash", { text: "meanwhile" });
          return Date.now() - sent;
        }),
      ]);
      expect([tool, res.status === 200 || res.status === 422]).toEqual([tool, true]);
      expect(Date.now() - started).toBeLessThan(3000);
      expect(light).toBeLessThan(1500);
    }
    // Looked for within 50 years, not for as long as a clock allows: the same answer under any load.
    const tooMany = await callTool(gw.url, key, "cron-explain", cron);
    expect([tooMany.status, tooMany.body.error.param]).toEqual([422, "count"]);
    expect(tooMany.body.error.message).toMatch(/runs 2 time\(s\) in the next 50 years/);
    const two = await callTool(gw.url, key, "cron-explain", { ...cron, count: 2 });
    expect(two.body.next_runs).toEqual([
      "2044-02-29T00:00:00.000-03:00",
      "2072-02-29T00:00:00.000-03:00",
    ]);
  }, 60_000);

  it("texts nested deeper than a library's recursion (the body's own depth is bounded at the door): 422, not 500", async () => {
    const payload = Buffer.from(`${"[".repeat(30_000)}${"]".repeat(30_000)}`).toString("base64url");
    const header = Buffer.from('{"alg":"none"}').toString("base64url");
    for (const [tool, input] of [
      ["jwt-decode", { token: `${header}.${payload}.` }],
      ["yaml-convert", { yaml: `${"[".repeat(50_000)}${"]".repeat(50_000)}` }],
    ] as const) {
      const { status, charged } = await refusal(tool, input);
      expect([tool, status, charged]).toEqual([tool, 422, 0]);
    }
  }, 60_000);

  it("afterwards every pool still serves, promptly", async () => {
    const started = Date.now();
    expect((await callTool(gw.url, key, "js-sandbox", { code: "40 + 2" })).body.result).toBe(42);
    expect((await callTool(gw.url, key, "hash", { text: "ok" })).body.digest).toHaveLength(64);
    expect(
      (await callTool(gw.url, key, "html-sanitize", { html: "<p>ok<script>x</script></p>" })).body
        .html,
    ).toBe("<p>ok</p>");
    expect(
      (await callTool(gw.url, key, "text-diff", { old: "a\nb", new: "a\nc" })).body,
    ).toMatchObject({ added: 1, removed: 1 });
    expect(Date.now() - started).toBeLessThan(10_000);
  }, 30_000);
});

describe("inputs a library could not take, and work that held the shared event loop", () => {
  const refused = (param: string, code = "validation_failed") => ({
    status: 422,
    code,
    param,
    charged: 0,
  });

  it("an input the tool's library chokes on is the caller's 422 naming the field (or a plain answer), never a 502", async () => {
    const token = (payload: object) =>
      [{ alg: "HS256", typ: "JWT" }, payload]
        .map((part) => Buffer.from(JSON.stringify(part)).toString("base64url"))
        .join(".")
        .concat(".sig");
    const refusals: [string, Record<string, unknown>, string][] = [
      ["readability-score", { text: "\u0000" }, "text"],
      ["unit-convert", { value: 1e308, from: "km", to: "nm" }, "value"],
      [
        "timezone-convert",
        { datetime: "+275760-09-13T00:00:00Z", to_zone: "Pacific/Kiritimati" },
        "datetime",
      ],
      ["spreadsheet-write", { sheets: [{ name: "History", rows: [[1]] }] }, "sheets"],
      // Wider than Excel's 16,384 columns: ExcelJS threw deep in the write.
      [
        "spreadsheet-write",
        { sheets: [{ name: "W", rows: [Array.from({ length: 20_000 }, (_, i) => i)] }] },
        "sheets",
      ],
      // A PDF that opens, whose page tree is its own child: reading page 1 threw.
      [
        "pdf-extract-text",
        {
          pdf: pdfOf([
            "<< /Type /Catalog /Pages 2 0 R >>",
            "<< /Type /Pages /Kids [2 0 R] /Count 1 >>",
          ]),
        },
        "pdf",
      ],
      ["xml-convert", { xml: `${"<a>".repeat(90_000)}${"</a>".repeat(90_000)}` }, "xml"],
      // Valid YAML whose alias sits inside its own anchor: a cycle, which JSON cannot express.
      ["yaml-convert", { yaml: "a: &a [*a]" }, "yaml"],
      // A schema that compiles, then recurses on every value until the stack runs out.
      ["json-schema-validate", { schema: { $ref: "#" }, data: {} }, "schema"],
      ["yaml-convert", { yaml: "a: &a\n  b: *a\n" }, "yaml"],
    ];
    const seen = [];
    for (const [tool, input] of refusals) {
      const { status, param, charged } = await refusal(tool, input);
      seen.push([tool, { status, param, charged }]);
    }
    expect(seen).toEqual(
      refusals.map(([tool, , param]) => [tool, { status: 422, param, charged: 0 }]),
    );

    const served = async (tool: string, input: unknown) => {
      const res = await callTool(gw.url, key, tool, input);
      expect([tool, res.status]).toEqual([tool, 200]);
      return res.body;
    };
    expect(await served("jsonpath-query", { json: null, path: "$.a" })).toEqual({
      values: [],
      paths: [],
    });
    expect((await served("readability-extract", { html: "just words, no markup" })).text).toBe(
      "just words, no markup",
    );
    expect((await served("jwt-decode", { token: token({ exp: 1e300 }) })).expires_at).toBeNull();
    expect((await served("js-sandbox", { code: "2n ** 70n" })).result).toBe(
      "1180591620717411303424",
    );
    expect((await served("js-sandbox", { code: "Symbol('s')" })).result).toBe("Symbol(s)");
    // Inside an object too (the result read "[object Object]"), and in the console.
    expect(
      await served("js-sandbox", { code: "console.log({ n: 2n }); ({ a: 1, big: 1n })" }),
    ).toMatchObject({ result: { a: 1, big: "1" }, console: ['{"n":"2"}'], error: null });
    // A value JSON cannot write is said to be one, promptly, even when its toJSON never returns.
    for (const code of ["const o = {}; o.self = o; o", "({ toJSON() { for (;;) {} } })"]) {
      const started = Date.now();
      expect([code, await served("js-sandbox", { code })]).toEqual([
        code,
        expect.objectContaining({
          result: null,
          error: expect.stringContaining("cannot be written as JSON"),
        }),
      ]);
      expect(Date.now() - started).toBeLessThan(5000);
    }
  }, 60_000);

  it("a math expression that asks for a gigantic matrix is refused before it allocates; the workers stay up", async () => {
    for (const expression of [
      "zeros(1e9)",
      "1:1e9",
      "ones(1e8)",
      "random([1e9])",
      // An assignment past the end grows the value to reach it, in one allocation.
      "a = [1]; a[100000000] = 1",
      "x = sparse([1]); x[100000000] = 1",
      's = "a"; s[100000000] = "b"',
    ]) {
      expect([expression, await refusal("math-evaluate", { expression })]).toEqual([
        expression,
        refused("expression"),
      ]);
    }
    // zeros(1e9) aborted the whole worker process (V8's out-of-memory in a thread): everything 503 until it restarted.
    expect((await callTool(gw.url, key, "hash", { text: "still up" })).status).toBe(200);
    expect(
      (await callTool(gw.url, key, "math-evaluate", { expression: "sum(1:4)" })).body.result,
    ).toBe("10");
  }, 60_000);

  it("readability on deeply nested HTML is cut off, and a large PDF, workbook or SQL format runs off the shared loop: light tools answer meanwhile", async () => {
    const asked = async () => {
      await new Promise((r) => setTimeout(r, 300));
      const started = Date.now();
      const res = await callTool(gw.url, key, "hash", { text: "meanwhile" });
      return { status: res.status, prompt: Date.now() - started < 2500 };
    };
    const nested = callTool(gw.url, key, "readability-extract", { html: "<div>".repeat(199_000) });
    expect(await asked()).toEqual({ status: 200, prompt: true });
    const cut = await nested;
    expect([cut.status, cut.body.error?.param]).toEqual([422, "html"]);
    const heavy: [string, unknown][] = [
      [
        "pdf-generate",
        {
          blocks: Array.from({ length: 2000 }, () => ({
            type: "paragraph",
            text: "word ".repeat(90),
          })),
        },
      ],
      [
        "spreadsheet-write",
        {
          sheets: [{ name: "A", rows: Array.from({ length: 40_000 }, (_, i) => [i, "x", i / 3]) }],
        },
      ],
      [
        "code-format",
        {
          language: "sql",
          code: Array.from(
            { length: 20_000 },
            (_, i) => `SELECT a${i}, b FROM t${i} WHERE x = ${i};`,
          ).join("\n"),
        },
      ],
    ];
    for (const [tool, input] of heavy) {
      const running = callTool(gw.url, key, tool, input);
      expect([tool, await asked()]).toEqual([tool, { status: 200, prompt: true }]);
      await running; // served or stopped at its deadline in its own thread: either way not the light tools' time
    }
  }, 120_000);
});
