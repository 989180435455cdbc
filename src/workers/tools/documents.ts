import { Readability } from "@mozilla/readability";
import { parseHTML } from "linkedom";
import { Marked } from "marked";
import ExcelJS from "exceljs";
import { XMLBuilder, XMLParser, XMLValidator } from "fast-xml-parser";
import Papa from "papaparse";
import { PDFDocument, StandardFonts } from "pdf-lib";
import sanitizeHtml from "sanitize-html";
import TurndownService from "turndown";
import { stringify as stringifyYaml } from "yaml";
import {
  csvConvert as csvConvertTool,
  htmlSanitize as htmlSanitizeTool,
  htmlToMarkdown as htmlToMarkdownTool,
  markdownToHtml as markdownToHtmlTool,
  pdfGenerate as pdfGenerateTool,
  readabilityExtract as readabilityExtractTool,
  spreadsheetWrite as spreadsheetWriteTool,
  xmlConvert as xmlConvertTool,
  yamlConvert as yamlConvertTool,
} from "../../tools/catalogue/documents.js";
import { jsonFit, jsonInteger } from "../heavy/json-fit.js";
import { WorkerError } from "../errors.js";
import { withTimeLimit } from "../time-limit.js";
import { implement } from "./implementation.js";
import { readYamlDocuments } from "./yaml-documents.js";

/**
 * The markup converters' cost grows faster than their input on hostile nesting (199,000 unclosed
 * <div>s take sanitize-html about 10 s, 100,000 about 2 s): each run is cut off after this long,
 * or when it recurses too deep, and answered 422 naming the field. The tools run in the heavy
 * pool's threads, and so does the web tools' page reading (web/readers.ts).
 */
const MARKUP_LIMIT_MS = 2000;

export function boundedMarkup<T>(what: string, param: string, fn: () => T): T {
  return withTimeLimit(MARKUP_LIMIT_MS, what, param, () => {
    try {
      return fn();
    } catch (err) {
      if (err instanceof RangeError)
        throw new WorkerError(
          422,
          "resource_limit",
          `${what} is nested too deeply to convert.`,
          param,
        );
      throw err;
    }
  });
}

export const turndown = new TurndownService({
  headingStyle: "atx",
  codeBlockStyle: "fenced",
  bulletListMarker: "-",
});
turndown.remove(["script", "style", "noscript"]);

export const htmlToMarkdown = implement(htmlToMarkdownTool, {
  async run(input) {
    return { markdown: boundedMarkup("This HTML", "html", () => turndown.turndown(input.html)) };
  },
});

const escapeHtml = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
// Raw HTML in Markdown is shown as text, and only web and mail links are kept: the output is safe to embed.
const marked = new Marked({
  gfm: true,
  renderer: {
    html: ({ text }) => escapeHtml(text),
    link({ href, tokens }) {
      const text = this.parser.parseInline(tokens);
      return /^(https?:|mailto:|#|\/)/i.test(href)
        ? `<a href="${escapeHtml(href)}">${text}</a>`
        : text;
    },
    // Images from the web or the site only (`![i](javascript:…)` became <img src="javascript:…">);
    // no data: URLs, as html-sanitize keeps none (an SVG one runs script when opened). Any other
    // source leaves the alt text. `false` draws the image as marked does, escaping included.
    image({ href, text }) {
      return /^(https?:|\/)/i.test(href) ? false : escapeHtml(text);
    },
  },
});

export const markdownToHtml = implement(markdownToHtmlTool, {
  async run(input) {
    return {
      html: boundedMarkup("This Markdown", "markdown", () =>
        marked.parse(input.markdown, { async: false }),
      ),
    };
  },
});

/** Text with block boundaries kept as blank lines (textContent alone runs paragraphs together). */
export function plainText(html: string): string {
  const spaced = html
    .replace(/<\/(p|div|h[1-6]|li|blockquote|pre|tr|section|article|header|footer)>/gi, "$&\n\n")
    .replace(/<br\s*\/?>/gi, "\n");
  const { document } = parseHTML(`<!doctype html><html><body>${spaced}</body></html>`);
  return (document.body?.textContent ?? "")
    .replace(/[ \t]+\n/g, "\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

/**
 * The article Readability finds in a page, or null. Text without markup is a page too: linkedom
 * gives it no document element, which Readability refuses (it threw, answered 502).
 */
export function readArticle(html: string) {
  let { document } = parseHTML(html);
  if (!document.documentElement)
    ({ document } = parseHTML(`<!doctype html><html><body>${html}</body></html>`));
  return new Readability(document as unknown as Document).parse();
}

export const readabilityExtract = implement(readabilityExtractTool, {
  async run(input) {
    // Readability walks the whole tree, again per candidate: 199,000 unclosed <div>s held the
    // shared event loop for minutes (every light tool timed out meanwhile), so it is time-limited.
    const { article, text } = boundedMarkup("This HTML", "html", () => {
      const found = readArticle(input.html);
      return { article: found, text: plainText(found?.content ?? input.html) };
    });
    return {
      title: article?.title || null,
      byline: article?.byline || null,
      excerpt: article?.excerpt || null,
      site_name: article?.siteName || null,
      text,
      length: text.length,
    };
  },
});

const PAGE_SIZES = { A4: [595.28, 841.89], Letter: [612, 792] } as const;
/** Standard PDF fonts encode WinAnsi only: other characters become "?" instead of failing the call. */
const winAnsi = (s: string) =>
  s.replace(/[^\x20-\x7e\xa0-\xff\n\t€‘’“”•–—…™]/g, "?").replace(/\t/g, "    ");

export const pdfGenerate = implement(pdfGenerateTool, {
  async run(input) {
    const doc = await PDFDocument.create();
    if (input.title) doc.setTitle(winAnsi(input.title));
    doc.setProducer("Toolgate pdf-generate (pdf-lib)");
    const regular = await doc.embedFont(StandardFonts.Helvetica);
    const bold = await doc.embedFont(StandardFonts.HelveticaBold);
    const [width, height] = PAGE_SIZES[input.page_size];
    const margin = 56;
    let page = doc.addPage([width, height]);
    let y = height - margin;
    const write = (text: string, font: typeof regular, size: number, gapAfter: number) => {
      const lineHeight = size * 1.35;
      const fits = (s: string) => font.widthOfTextAtSize(s, size) <= width - 2 * margin;
      // \r\n and \r end lines as \n does (each \r was drawn as "?").
      for (const paragraph of winAnsi(text.replace(/\r\n?/g, "\n")).split("\n")) {
        const lines: string[] = [];
        let line = "";
        for (const word of paragraph.split(/ +/)) {
          const candidate = line ? `${line} ${word}` : word;
          if (fits(candidate)) {
            line = candidate;
            continue;
          }
          if (line) lines.push(line);
          line = "";
          // A word wider than the line (a long URL) is broken by characters: it was drawn whole,
          // off the page.
          for (const char of word) {
            if (line && !fits(line + char)) {
              lines.push(line);
              line = "";
            }
            line += char;
          }
        }
        lines.push(line);
        for (const l of lines) {
          if (y - lineHeight < margin) {
            page = doc.addPage([width, height]);
            y = height - margin;
          }
          y -= lineHeight;
          page.drawText(l, { x: margin, y, size, font });
        }
      }
      y -= gapAfter;
    };
    if (input.title) write(input.title, bold, input.font_size * 2, input.font_size);
    for (const block of input.blocks) {
      if (block.type === "heading")
        write(block.text, bold, input.font_size * 1.5, input.font_size * 0.4);
      else write(block.text, regular, input.font_size, input.font_size * 0.8);
    }
    const bytes = Buffer.from(await doc.save());
    return {
      mime_type: "application/pdf",
      data: bytes.toString("base64"),
      bytes: bytes.length,
      pages: doc.getPageCount(),
    };
  },
});

/**
 * Excel's column limit (XFD): ExcelJS throws past it, deep in the write, which answered 502 "The
 * tool failed"; checked up front to name the sheet. Excel's 1,048,576 rows need no check: the
 * schema allows 100,000 rows a sheet.
 */
const EXCEL_MAX_COLUMNS = 16_384;

function checkColumns(name: string, rows: readonly unknown[], header: readonly string[]): void {
  // A loop, not Math.max(...rows): a hundred thousand arguments can overflow the stack.
  let widest = header.length;
  for (const r of rows) if (Array.isArray(r) && r.length > widest) widest = r.length;
  if (widest > EXCEL_MAX_COLUMNS)
    throw new WorkerError(
      422,
      "invalid_input",
      `Sheet ${name} has a row of ${widest} columns; Excel allows at most ${EXCEL_MAX_COLUMNS}.`,
      "sheets",
    );
}

export const spreadsheetWrite = implement(spreadsheetWriteTool, {
  async run(input) {
    const book = new ExcelJS.Workbook();
    for (const sheet of input.sheets) {
      if (book.getWorksheet(sheet.name))
        throw new WorkerError(
          422,
          "invalid_input",
          `Two sheets are named ${sheet.name}.`,
          "sheets",
        );
      let ws: ExcelJS.Worksheet;
      try {
        ws = book.addWorksheet(sheet.name);
      } catch (err) {
        // ExcelJS refuses names the schema cannot know of ("History" is reserved): it threw, 502.
        throw new WorkerError(
          422,
          "invalid_input",
          `The sheet name ${sheet.name} cannot be used: ${(err as Error).message}`,
          "sheets",
        );
      }
      const objects = sheet.rows.filter((r) => !Array.isArray(r)) as Record<string, unknown>[];
      const columns = [...new Set(objects.flatMap((r) => Object.keys(r)))];
      checkColumns(sheet.name, sheet.rows, columns);
      if (objects.length) {
        ws.addRow(columns).font = { bold: true };
        for (const row of sheet.rows)
          ws.addRow(Array.isArray(row) ? row : columns.map((c) => row[c] ?? null));
      } else {
        ws.addRows(sheet.rows as unknown[][]);
      }
    }
    const bytes = Buffer.from(await book.xlsx.writeBuffer());
    return {
      mime_type: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
      data: bytes.toString("base64"),
      bytes: bytes.length,
    };
  },
});

/** Where papaparse puts a row's fields beyond the header's. */
const PAPA_SURPLUS = "__parsed_extra";

export const csvConvert = implement(csvConvertTool, {
  async run(input) {
    if (input.rows !== undefined) {
      const objects = input.rows.filter((r) => !Array.isArray(r)) as Record<string, unknown>[];
      const columns = objects.length ? [...new Set(objects.flatMap((r) => Object.keys(r)))] : [];
      const text = objects.length
        ? Papa.unparse(
            {
              fields: columns,
              data: input.rows.map((r) =>
                Array.isArray(r) ? r : columns.map((c) => r[c] ?? null),
              ),
            },
            { header: input.header, delimiter: input.delimiter ?? "," },
          )
        : Papa.unparse(input.rows as unknown[][], { delimiter: input.delimiter ?? "," });
      return { rows: null, csv: text, columns, errors: [] };
    }
    const parsed = Papa.parse<unknown>(input.csv!, {
      header: input.header,
      dynamicTyping: input.dynamic_typing,
      skipEmptyLines: true,
      delimiter: input.delimiter ?? "",
    });
    // A row longer than the header: papaparse keeps the surplus in an array under
    // `__parsed_extra`, a column no one sent (and not a cell: the answer failed its schema, 502).
    // The surplus is dropped and the row named in `errors` ("Too many fields"), as a short row is.
    if (input.header)
      for (const row of parsed.data as Record<string, unknown>[]) delete row[PAPA_SURPLUS];
    return {
      rows: parsed.data as (
        | Record<string, string | number | boolean | null>
        | (string | number | boolean | null)[]
      )[],
      csv: null,
      columns: parsed.meta.fields ?? [],
      errors: parsed.errors.map((e) => ({ row: e.row ?? null, message: e.message })),
    };
  },
});

/** XML 1.0's NameStartChar and NameChar, less ":" (an NCName: a name in a namespace-well-formed document). */
const NC_START =
  "A-Z_a-z\\u00C0-\\u00D6\\u00D8-\\u00F6\\u00F8-\\u02FF\\u0370-\\u037D\\u037F-\\u1FFF\\u200C\\u200D\\u2070-\\u218F\\u2C00-\\u2FEF\\u3001-\\uD7FF\\uF900-\\uFDCF\\uFDF0-\\uFFFD\\u{10000}-\\u{EFFFF}";
const NC_NAME = `[${NC_START}][${NC_START}\\-.0-9\\u00B7\\u0300-\\u036F\\u203F\\u2040]*`;
/** An element or attribute name: an NCName, or prefix:local. */
const XML_NAME = new RegExp(`^${NC_NAME}(?::${NC_NAME})?$`, "u");
const XML_ATTRIBUTE = "@_";
const XML_TEXT = "#text";

const isPrimitive = (v: unknown) =>
  typeof v === "string" || typeof v === "number" || typeof v === "boolean";
const refuse = (message: string, param: string): never => {
  throw new WorkerError(422, "invalid_input", message, param);
};

/** A character outside XML 1.0's Char production (most C0 controls, U+FFFE, U+FFFF): no escape writes it. */
const NOT_XML_CHAR = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;

function checkXmlChars(text: string, at: string): void {
  const bad = NOT_XML_CHAR.exec(text);
  if (bad)
    refuse(
      `XML cannot hold the character U+${bad[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}, not even escaped.`,
      at,
    );
}

/**
 * Refuse, naming the key (`json.a.item.1.b`), what the builder would write as XML that is not
 * well-formed: a key that is not an element name (`<1a>`, `<a b>`, `<>`), an attribute (`@_x`)
 * or text (`#text`) that is not a scalar, a list inside a list (its items have no name),
 * attributes or text beside the root element (they have no element to go in), a declaration
 * (`?xml`) anywhere but first, and text holding a character XML cannot (checkXmlChars).
 */
function checkXmlKeys(node: Record<string, unknown>, path: string, root: boolean): void {
  for (const [key, value] of Object.entries(node)) {
    const at = `${path}.${key}`;
    if (key === XML_TEXT || key.startsWith(XML_ATTRIBUTE)) {
      const what = key === XML_TEXT ? "Text (#text)" : `An attribute (${XML_ATTRIBUTE}name)`;
      if (typeof value === "string") checkXmlChars(value, at);
      if (root) refuse(`${what} needs an element: put it inside one of json's keys.`, at);
      if (key !== XML_TEXT && !XML_NAME.test(key.slice(XML_ATTRIBUTE.length)))
        refuse(`"${key.slice(XML_ATTRIBUTE.length)}" is not a valid XML attribute name.`, at);
      if (!isPrimitive(value) && !(key !== XML_TEXT && value === null))
        refuse(`${what} must be a string, a number or a boolean.`, at);
      continue;
    }
    // "?xml" and other processing instructions: their attributes are checked as an element's.
    // The declaration is the document's first thing or nothing (a parser refuses it elsewhere).
    const name = key.startsWith("?") ? key.slice(1) : key;
    if (key.startsWith("?") && /^xml$/i.test(name) && !(root && key === Object.keys(node)[0]))
      refuse(`The XML declaration (${key}) can only be json's first key.`, at);
    if (!XML_NAME.test(name))
      refuse(
        `"${key}" is not a valid XML element name (a letter or "_" first, then letters, digits, "-", "_" or ".").`,
        at,
      );
    const items = Array.isArray(value) ? value : [value];
    items.forEach((item, i) => {
      const itemAt = Array.isArray(value) ? `${at}.${i}` : at;
      if (Array.isArray(item))
        refuse(
          "A list inside a list cannot be written as XML: its items have no element name.",
          itemAt,
        );
      if (typeof item === "string") checkXmlChars(item, itemAt);
      if (item !== null && typeof item === "object")
        checkXmlKeys(item as Record<string, unknown>, itemAt, false);
    });
  }
}

export const xmlConvert = implement(xmlConvertTool, {
  async run(input) {
    if (input.json !== undefined) {
      // An object, as the tool's schema (checked before run) says; its keys are checked here.
      checkXmlKeys(input.json, "json", true);
      const builder = new XMLBuilder({
        ignoreAttributes: false,
        attributeNamePrefix: XML_ATTRIBUTE,
        format: input.pretty,
        suppressEmptyNode: true,
      });
      const xml = String(builder.build(input.json));
      if (!/<[^?!]/.test(xml))
        refuse("json has no element to write: give it a key, the root element's name.", "json");
      return { json: null, xml };
    }
    const valid = XMLValidator.validate(input.xml!);
    if (valid !== true)
      throw new WorkerError(
        422,
        "invalid_input",
        `Not well-formed XML: ${valid.err.msg} (line ${valid.err.line}).`,
        "xml",
      );
    // Entities stay as written: no DOCTYPE expansion, so no entity-expansion bomb.
    const parser = new XMLParser({
      ignoreAttributes: false,
      attributeNamePrefix: XML_ATTRIBUTE,
      processEntities: false,
      // A text is a number (or a boolean) only when it writes back the same: "01234", "0x1F",
      // "1.10" and integers past 2^53 stay strings (the parser's own reading changed them).
      parseTagValue: false,
      tagValueProcessor: (_name: string, text: string) => scalarOf(text),
    });
    try {
      return { json: parser.parse(input.xml!) as unknown, xml: null };
    } catch (err) {
      // The parser's own limits ("Maximum nested tags exceeded") are the document's: it threw, 502.
      throw new WorkerError(
        422,
        "resource_limit",
        `The XML could not be converted: ${(err as Error).message}`,
        "xml",
      );
    }
  },
});

/** `text` as the number or boolean it spells exactly, or null (kept as written). */
function scalarOf(text: string): number | boolean | null {
  if (text === "true" || text === "false") return text === "true";
  const n = Number(text);
  return Number.isFinite(n) && String(n) === text ? n : null;
}

export const yamlConvert = implement(yamlConvertTool, {
  async run(input) {
    if (input.json !== undefined)
      return { json: null, documents: 1, yaml: stringifyYaml(input.json) };
    const list = readYamlDocuments(input.yaml!, "yaml");
    let json: unknown;
    try {
      // maxAliasCount bounds alias expansion (the "billion laughs" document).
      json = list[0]?.toJS({ maxAliasCount: 1000 }) ?? null;
      // `a: &a [*a]` is valid YAML whose alias sits inside its own anchor: JSON has no cycles.
      if (jsonFit(json, Number.POSITIVE_INFINITY) === "cycle")
        throw new WorkerError(
          422,
          "invalid_input",
          "The YAML has an alias inside the node it refers to (a cycle), which JSON cannot express.",
          "yaml",
        );
      json = asJsonValue(json);
    } catch (err) {
      if (err instanceof WorkerError) throw err;
      throw new WorkerError(
        422,
        "invalid_input",
        `The YAML could not be expanded: ${(err as Error).message}`,
        "yaml",
      );
    }
    return { json, documents: list.length, yaml: null };
  },
});

/**
 * A YAML value as JSON can hold it, where JSON.stringify would change it unseen: bytes (!!binary, a
 * Buffer written as {"type":"Buffer","data":[…]}) as base64 text; an integer, read exactly as a
 * bigint, by `jsonInteger` (one past 2^53 came out rounded); .inf, -.inf and .nan, which JSON has
 * no number for (written as null), as that YAML text. Recursive: the document's depth is bounded
 * (MAX_YAML_DEPTH), and a stack overflow through aliases is the caller's 422, as in toJS.
 */
function asJsonValue(value: unknown): unknown {
  if (typeof value === "bigint") return jsonInteger(value);
  if (typeof value === "number" && !Number.isFinite(value))
    return Number.isNaN(value) ? ".nan" : value > 0 ? ".inf" : "-.inf";
  if (value instanceof Uint8Array) return Buffer.from(value).toString("base64");
  if (Array.isArray(value)) return value.map(asJsonValue);
  if (value !== null && typeof value === "object" && !(value instanceof Date))
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, asJsonValue(v)]));
  return value;
}

/**
 * Tags html-sanitize keeps for no caller, whatever `allowed_tags` lists (it kept
 * `<svg><script>alert(1)</script></svg>` when asked to, though the tool removes scripts): those
 * that run script or restyle the page (script, style), load other documents or plugins (iframe,
 * frame, frameset, object, embed, applet), change where URLs lead or load resources (base, link,
 * meta), and those whose content the browser parses otherwise than the sanitizer, the known
 * routes to mutation XSS (noscript, template, and svg and math, which switch to foreign content).
 */
const UNSAFE_TAGS = new Set([
  "script",
  "style",
  "iframe",
  "frame",
  "frameset",
  "object",
  "embed",
  "applet",
  "base",
  "link",
  "meta",
  "noscript",
  "template",
  "svg",
  "math",
]);

export const htmlSanitize = implement(htmlSanitizeTool, {
  async run(input) {
    const unsafe = (input.allowed_tags ?? []).filter((tag) => UNSAFE_TAGS.has(tag));
    if (unsafe.length)
      throw new WorkerError(
        422,
        "invalid_input",
        `These tags can run script or load content and are never kept: ${[...new Set(unsafe)].join(", ")}.`,
        "allowed_tags",
      );
    const allowedTags = [
      ...(input.allowed_tags ?? sanitizeHtml.defaults.allowedTags),
      ...(input.allow_images ? ["img"] : []),
    ];
    const clean = boundedMarkup("This HTML", "html", () =>
      sanitizeHtml(input.html, {
        allowedTags,
        allowedAttributes: {
          ...sanitizeHtml.defaults.allowedAttributes,
          img: ["src", "alt", "title", "width", "height"],
        },
        allowedSchemes: ["http", "https", "mailto"],
        allowedSchemesByTag: { img: ["http", "https"] },
      }),
    );
    return { html: clean, removed: clean !== input.html };
  },
});
