import ExcelJS from "exceljs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  balanceOf,
  callTool,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";

/**
 * Tools on data a probe found odd: each answers the exact result or a 422 naming the field it
 * cannot take (uncharged), never a 502 for the caller's data, output that silently differs from
 * what was sent, or state one call leaves behind for the next. One gateway.
 */
let gw: TestGateway;
let key: string;

beforeAll(async () => {
  gw = await startGateway();
  ({ key } = await fundedAccount(gw.url, 1000));
});
afterAll(() => gw.stop());

const run = async (name: string, body: unknown) => {
  const res = await callTool(gw.url, key, name, body);
  expect([name, res.status], JSON.stringify(res.body).slice(0, 400)).toEqual([name, 200]);
  return res.body;
};
/** A refused call: its status, code and param (its message checked to contain `words`), and nothing charged. */
const refused = async (name: string, body: unknown, words: string) => {
  const before = await balanceOf(gw.url, key);
  const res = await callTool(gw.url, key, name, body);
  expect(await balanceOf(gw.url, key)).toBe(before);
  const { code, param, message } = res.body.error ?? {};
  return { status: res.status, code, param, said: String(message).includes(words) || message };
};

describe("math-evaluate", () => {
  it("an expression cannot change how later expressions evaluate, anyone's (config is switched off)", async () => {
    // Sent several times, as the heavy pool's children take calls in turn.
    for (let i = 0; i < 4; i++)
      expect(
        await refused(
          "math-evaluate",
          { expression: 'config({number: "BigNumber", precision: 4})' },
          "config is disabled",
        ),
      ).toEqual({ status: 422, code: "validation_failed", param: "expression", said: true });
    const other = await fundedAccount(gw.url, 10);
    for (let i = 0; i < 4; i++) {
      const res = await callTool(gw.url, other.key, "math-evaluate", { expression: "2^40 + 1" });
      expect([res.status, res.body.value]).toEqual([200, 1099511627777]);
    }
  });
});

describe("regex-test", () => {
  it("with the u flag, an empty match before a character outside the BMP moves on by a code point", async () => {
    const found = async (pattern: string, flags: string, text: string) =>
      (await run("regex-test", { pattern, flags, text })).matches.map(
        (m: { index: number; match: string }) => [m.index, m.match],
      );
    const expected = (pattern: string, flags: string, text: string) =>
      [...text.matchAll(new RegExp(pattern, flags))].map((m) => [m.index, m[0]]);
    for (const [pattern, flags, text] of [
      ["a?", "gu", "😀a"],
      ["x*", "gu", "😀😀"],
      ["x*", "gv", "a😀b"],
      ["a?", "g", "😀a"],
    ] as const)
      expect([pattern, flags, await found(pattern, flags, text)]).toEqual([
        pattern,
        flags,
        expected(pattern, flags, text),
      ]);
  });
});

describe("sql-query", () => {
  it("a table SQLite cannot make is a 422 naming it, with SQLite's reason", async () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ a: [{ x: 1 }], A: [{ x: 2 }] }, "tables.A", "already exists"],
      [{ t: [{ a: 1, A: 2 }] }, "tables.t", "duplicate column name"],
      [{ sqlite_x: [{ a: 1 }] }, "tables.sqlite_x", "reserved"],
    ];
    for (const [tables, param, words] of cases)
      expect(await refused("sql-query", { query: "SELECT 1", tables }, words)).toEqual({
        status: 422,
        code: "validation_failed",
        param,
        said: true,
      });
  });

  it("CSV with a row longer than its header or a quote left open is a 422 naming the table; a short row has NULLs", async () => {
    for (const [csv, words] of [
      ["name,city\nAda,London,UK\nBob,Paris\n", "Too many fields"],
      ['name,city\nAda,"London\nBob,Paris\n', "Quoted field unterminated"],
    ] as const)
      expect(
        await refused("sql-query", { query: "SELECT * FROM t", tables: { t: csv } }, words),
      ).toEqual({ status: 422, code: "validation_failed", param: "tables.t", said: true });
    const short = await run("sql-query", {
      query: "SELECT * FROM t",
      tables: { t: "name,city\nAda\nBob,Paris\n" },
    });
    expect([short.columns, short.rows]).toEqual([
      ["name", "city"],
      [
        { name: "Ada", city: null },
        { name: "Bob", city: "Paris" },
      ],
    ]);
  });

  it("an integer beyond 2^53 comes back exact, as decimal text; smaller ones and reals stay numbers", async () => {
    const result = await run("sql-query", {
      query:
        "SELECT 9007199254740993 AS big, CAST(n AS INTEGER) + 1 AS next, -9223372036854775808 AS least, 9007199254740991 AS safe, 42 AS small, 1.5 AS real FROM t",
      tables: { t: [{ n: "9007199254740993" }, { n: "41" }] },
    });
    expect(result.rows).toEqual([
      {
        big: "9007199254740993",
        next: "9007199254740994",
        least: "-9223372036854775808",
        safe: 9007199254740991,
        small: 42,
        real: 1.5,
      },
      {
        big: "9007199254740993",
        next: 42,
        least: "-9223372036854775808",
        safe: 9007199254740991,
        small: 42,
        real: 1.5,
      },
    ]);
  });
});

describe("csv-convert", () => {
  it("a row longer than its header keeps the header's columns and is named in errors", async () => {
    const out = await run("csv-convert", { csv: "name,city\nAda,London,UK\nBob,Paris\n" });
    expect([out.columns, out.rows]).toEqual([
      ["name", "city"],
      [
        { name: "Ada", city: "London" },
        { name: "Bob", city: "Paris" },
      ],
    ]);
    expect(out.errors).toEqual([{ row: 0, message: expect.stringContaining("Too many fields") }]);
  });
});

describe("xml-convert", () => {
  it("refuses JSON whose XML would not be well-formed: a declaration inside the document, characters XML cannot hold", async () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ r: { "?xml": { "@_version": "1.0" }, a: 1 } }, "json.r.?xml", "first key"],
      [{ r: 1, "?xml": { "@_version": "1.0" } }, "json.?xml", "first key"],
      [{ r: "a\u0000b" }, "json.r", "U+0000"],
      [{ r: { "@_x": "\u0001" } }, "json.r.@_x", "U+0001"],
      [{ r: { "#text": "\uffff", a: 1 } }, "json.r.#text", "U+FFFF"],
      [{ r: { a: ["ok", "\u0008"] } }, "json.r.a.1", "U+0008"],
    ];
    for (const [json, param, words] of cases)
      expect([param, await refused("xml-convert", { json }, words)]).toEqual([
        param,
        { status: 422, code: "validation_failed", param, said: true },
      ]);
    // The declaration first, tabs and line breaks in text, and characters beyond the BMP still write.
    expect(
      (
        await run("xml-convert", {
          json: { "?xml": { "@_version": "1.0" }, r: { a: "x\ty\n😀" } },
          pretty: false,
        })
      ).xml,
    ).toBe('<?xml version="1.0"?><r><a>x\ty\n😀</a></r>');
  });

  it("reads a text as a number or boolean only when it writes back the same", async () => {
    const xml =
      "<r><zip>01234</zip><hex>0x1F</hex><version>1.10</version><big>9007199254740993</big>" +
      "<n>42</n><f>-1.5</f><t>true</t><inf>Infinity</inf></r>";
    expect((await run("xml-convert", { xml })).json).toEqual({
      r: {
        zip: "01234",
        hex: "0x1F",
        version: "1.10",
        big: "9007199254740993",
        n: 42,
        f: -1.5,
        t: true,
        inf: "Infinity",
      },
    });
  });
});

describe("yaml-convert", () => {
  it("writes !!binary as its base64 text, not a Buffer's JSON", async () => {
    expect((await run("yaml-convert", { yaml: "g: !!binary aGVsbG8=\nh: [1]\n" })).json).toEqual({
      g: "aGVsbG8=",
      h: [1],
    });
  });

  it("keeps what JSON has no number for: integers beyond 2^53 exact as text, infinities and NaN as YAML spells them", async () => {
    const yaml =
      "id: 12345678901234567891\nhex: 0x20000000000001\nsmall: -42\nratio: 0.5\nup: .inf\ndown: -.Inf\nnone: .nan\nlist: [9007199254740993, 7]\n";
    expect((await run("yaml-convert", { yaml })).json).toEqual({
      id: "12345678901234567891",
      hex: "9007199254740993",
      small: -42,
      ratio: 0.5,
      up: ".inf",
      down: "-.inf",
      none: ".nan",
      list: ["9007199254740993", 7],
    });
  });
});

describe("spreadsheet-read", () => {
  it("a date cell beyond any calendar is a 422 naming the cell", async () => {
    const book = new ExcelJS.Workbook();
    const sheet = book.addWorksheet("S");
    sheet.addRow(["when"]);
    sheet.getCell("A2").value = 1e12;
    sheet.getCell("A2").numFmt = "yyyy-mm-dd";
    const xlsx = Buffer.from(await book.xlsx.writeBuffer()).toString("base64");
    expect(await refused("spreadsheet-read", { xlsx }, 'Cell A2 of sheet "S"')).toEqual({
      status: 422,
      code: "validation_failed",
      param: "xlsx",
      said: true,
    });
  });
});

describe("sentence-split", () => {
  it("counts paragraphs, as its description says", async () => {
    const out = await run("sentence-split", {
      text: "One. Two.\n\nThree.\r\n \r\nFour.\nStill four.",
    });
    expect([out.sentence_count, out.paragraph_count]).toEqual([5, 3]);
  });
});
