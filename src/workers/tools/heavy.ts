import { createRequire } from "node:module";
import { dirname } from "node:path";
import type ExcelJS from "exceljs";
import type { QRCode } from "jsqr";
import type { QuickJSHandle } from "quickjs-emscripten";
import type { Sharp } from "sharp";
import type { Worker as TesseractWorker } from "tesseract.js";
import type * as Vega from "vega";
import {
  codeFormat as codeFormatTool,
  jsSandbox as jsSandboxTool,
} from "../../tools/catalogue/code.js";
import {
  dateParse as dateParseTool,
  jsonpathQuery as jsonpathQueryTool,
  mathEvaluate as mathEvaluateTool,
  sqlQuery as sqlQueryTool,
} from "../../tools/catalogue/data.js";
import {
  csvConvert as csvConvertTool,
  docxToText as docxToTextTool,
  htmlSanitize as htmlSanitizeTool,
  htmlToMarkdown as htmlToMarkdownTool,
  markdownToHtml as markdownToHtmlTool,
  pdfExtractText as pdfExtractTextTool,
  pdfGenerate as pdfGenerateTool,
  readabilityExtract as readabilityExtractTool,
  spreadsheetRead as spreadsheetReadTool,
  spreadsheetWrite as spreadsheetWriteTool,
  xmlConvert as xmlConvertTool,
  yamlConvert as yamlConvertTool,
} from "../../tools/catalogue/documents.js";
import {
  barcodeGenerate as barcodeGenerateTool,
  chartRender as chartRenderTool,
  imageMetadata as imageMetadataTool,
  imageTransform as imageTransformTool,
  ocr as ocrTool,
  qrDecode as qrDecodeTool,
  svgToPng as svgToPngTool,
} from "../../tools/catalogue/images.js";
import {
  jsonSchemaValidate as jsonSchemaValidateTool,
  qrCode as qrCodeTool,
  regexTest as regexTestTool,
  textDiff as textDiffTool,
} from "../../tools/catalogue/utilities.js";
import type { ToolDefinition } from "../../tools/definition.js";
import { lazy } from "../../lib/lazy-require.js";
import { WorkerError } from "../errors.js";
import { jsonInteger, jsonStringBytes } from "../heavy/json-fit.js";
import { checkZipBudget, decodeBase64, MAX_INPUT_PIXELS } from "./files.js";
import { implement, type ToolImplementation } from "./implementation.js";
import * as language from "./language.js";

/**
 * The heavy tools' implementations. They run only inside the heavy pool's threads
 * (src/workers/heavy), under its memory limit and deadline. Each tool loads its libraries on its
 * first call, so a fresh thread (after a runaway call was stopped) is ready in the time its
 * next tool needs, not the time all of them need.
 */
const require = createRequire(import.meta.url);
/** CommonJS packages whose types promise an ES default: take the export either way. */
const defaultOf = <T>(m: T): T extends { default: infer D } ? D : T =>
  ((m as { default?: unknown }).default ?? m) as never;

type JsQR = (data: Uint8ClampedArray, width: number, height: number) => QRCode | null;

const lib = {
  resvg: lazy(() => import("@resvg/resvg-js")),
  exceljs: lazy(() => import("exceljs").then(defaultOf)),
  jsqr: lazy(() =>
    import("jsqr").then((m) => ((m.default as { default?: unknown }).default ?? m.default) as JsQR),
  ),
  mammoth: lazy(() => import("mammoth").then(defaultOf)),
  papaparse: lazy(() => import("papaparse").then(defaultOf)),
  quickjs: lazy(() => import("quickjs-emscripten")),
  sharp: lazy(() => import("sharp").then(defaultOf)),
  sqljs: lazy(() =>
    import("sql.js").then((m) =>
      defaultOf(m)({
        locateFile: (file: string) => `${dirname(require.resolve("sql.js"))}/${file}`,
      }),
    ),
  ),
  tesseract: lazy(() => import("tesseract.js")),
  turndown: lazy(() =>
    import("turndown").then(
      (m) => new (defaultOf(m))({ headingStyle: "atx", bulletListMarker: "-" }),
    ),
  ),
  unpdf: lazy(() => import("unpdf")),
  vega: lazy(() => import("vega")),
  vegaLite: lazy(() => import("vega-lite")),
  math: lazy(() => import("mathjs").then(limitedMath)),
  // Modules of tools that live with their category but run here: loaded on their first call.
  documents: lazy(() => import("./documents.js")),
  code: lazy(() => import("./code.js")),
  data: lazy(() => import("./data.js")),
  utilities: lazy(() => import("./utilities.js")),
  images: lazy(() => import("./images.js")),
};

const invalid = (message: string, param: string) =>
  new WorkerError(422, "invalid_input", message, param);
const reason = (err: unknown) =>
  (err instanceof Error ? err.message : String(err)).split("\n")[0]!.slice(0, 300);

/** sharp, refusing images whose header claims more pixels than the budget. */
async function image(bytes: Buffer): Promise<Sharp> {
  return (await lib.sharp())(bytes, { limitInputPixels: MAX_INPUT_PIXELS, failOn: "error" });
}
async function decodeImage<T>(param: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof WorkerError) throw err; // the work's own refusal, already said
    const message = reason(err);
    if (/pixel limit/i.test(message))
      throw new WorkerError(
        422,
        "resource_limit",
        `The image is larger than ${MAX_INPUT_PIXELS / 1_000_000} megapixels; it was refused.`,
        param,
      );
    throw invalid(`The image could not be read: ${message}`, param);
  }
}

const pdfExtractText = implement(pdfExtractTextTool, {
  async run(input) {
    const bytes = decodeBase64(input.pdf, "pdf");
    // Opening, and then each page (a page tree that cycles, a broken content stream), can fail:
    // the document's fault, not the tool's (a page's failure answered 502 "The tool failed").
    let pdf;
    const pages: string[] = [];
    try {
      pdf = await (await lib.unpdf()).getDocumentProxy(new Uint8Array(bytes), {
        stopAtErrors: true,
      });
      for (let n = 1; n <= Math.min(pdf.numPages, input.max_pages); n++) {
        const content = await (await pdf.getPage(n)).getTextContent();
        pages.push(
          content.items
            .map((item) => ("str" in item ? item.str + (item.hasEOL ? "\n" : "") : ""))
            .join("")
            .trim(),
        );
      }
    } catch (err) {
      throw invalid(`Not a readable PDF: ${reason(err)}`, "pdf");
    }
    const { info } = await pdf.getMetadata().catch(() => ({ info: {} }));
    await pdf.cleanup();
    return {
      pages,
      text: pages.join("\n\n"),
      page_count: pdf.numPages,
      info: JSON.parse(JSON.stringify(info ?? {})) as Record<string, unknown>,
    };
  },
});

const docxToText = implement(docxToTextTool, {
  async run(input) {
    const buffer = decodeBase64(input.docx, "docx");
    checkZipBudget(buffer, "docx", ".docx document");
    const mammoth = await lib.mammoth();
    try {
      if (input.format === "text") {
        const result = await mammoth.extractRawText({ buffer });
        return {
          format: "text" as const,
          content: result.value.trim(),
          warnings: result.messages.map((m) => m.message),
        };
      }
      const result = await mammoth.convertToHtml({ buffer });
      const content =
        input.format === "html" ? result.value : (await lib.turndown()).turndown(result.value);
      return { format: input.format, content, warnings: result.messages.map((m) => m.message) };
    } catch (err) {
      throw invalid(`Not a readable .docx document: ${reason(err)}`, "docx");
    }
  },
});

type Cell = string | number | boolean | null;
/** An ExcelJS cell value as plain JSON: formulas give their result, rich text its text, dates ISO 8601. */
function plainCell(value: ExcelJS.CellValue, where: () => string): Cell {
  if (value === null || value === undefined) return null;
  if (typeof value === "string" || typeof value === "number" || typeof value === "boolean")
    return value;
  if (value instanceof Date) {
    // A date-formatted number beyond any calendar (Excel shows #####): toISOString threw, 502.
    if (Number.isNaN(value.getTime()))
      throw invalid(`${where()} holds a date outside the range of dates.`, "xlsx");
    return value.toISOString();
  }
  if (typeof value === "object") {
    if ("result" in value) return plainCell(value.result as ExcelJS.CellValue, where);
    if ("richText" in value) return value.richText.map((r) => r.text).join("");
    if ("text" in value) return String(value.text);
    if ("error" in value) return String(value.error);
  }
  return String(value);
}

const spreadsheetRead = implement(spreadsheetReadTool, {
  async run(input) {
    const buffer = decodeBase64(input.xlsx, "xlsx");
    checkZipBudget(buffer, "xlsx", ".xlsx workbook");
    const book = new (await lib.exceljs()).Workbook();
    try {
      await book.xlsx.load(buffer as unknown as ExcelJS.Buffer);
    } catch (err) {
      throw invalid(`Not a readable .xlsx workbook: ${reason(err)}`, "xlsx");
    }
    return {
      sheets: book.worksheets.map((sheet) => {
        const grid: Cell[][] = [];
        sheet.eachRow({ includeEmpty: false }, (row) => {
          const values = (row.values as ExcelJS.CellValue[]).slice(1); // ExcelJS rows are 1-based
          grid.push(
            Array.from({ length: values.length }, (_, i) =>
              plainCell(
                values[i],
                () => `Cell ${row.getCell(i + 1).address} of sheet "${sheet.name}"`,
              ),
            ),
          );
        });
        const columns =
          input.header && grid.length
            ? grid[0]!.map((c, i) => (c === null ? `column_${i + 1}` : String(c)))
            : [];
        const data = input.header ? grid.slice(1) : grid;
        const rows = data
          .slice(0, input.max_rows)
          .map((r) =>
            input.header ? Object.fromEntries(columns.map((c, i) => [c, r[i] ?? null])) : r,
          );
        return { name: sheet.name, columns, rows, row_count: data.length };
      }),
    };
  },
});

const MAX_RESULT_ROWS = 10_000;
/**
 * The most a query's result may weigh as JSON. Past it the query is the caller's 422: a 30 MB
 * BLOB written as JSON (an object of thirty million keys) exhausted the thread's heap inside
 * JSON.stringify, which V8 cannot recover from: the whole workers process aborted.
 */
const MAX_RESULT_BYTES = 32 * 1024 * 1024;

/**
 * A result value as JSON can carry it, and its weight there: a BLOB as base64 text (sql.js gives
 * a Uint8Array, which JSON writes as an object keyed by index), checked against what is left of
 * the result's allowance before it is encoded. Integers are read as bigints (`jsonInteger`): one
 * past 2^53 read as a double came out rounded (9007199254740993 read …992).
 */
function sqlValue(value: unknown, allowance: number): { value: unknown; bytes: number } {
  if (typeof value === "bigint") return { value: jsonInteger(value), bytes: 24 };
  if (value instanceof Uint8Array) {
    const bytes = Math.ceil(value.length / 3) * 4 + 2;
    return { value: bytes > allowance ? null : Buffer.from(value).toString("base64"), bytes };
  }
  if (typeof value === "string") return { value, bytes: jsonStringBytes(value) };
  return { value, bytes: 24 };
}

/** A result row with its integers as bigints: sql.js's `get(params, {useBigInt})`, which its types leave out. */
function rowWithBigInts(statement: { get(params?: undefined): unknown[] }): unknown[] {
  const get = statement.get as (params: undefined, config: { useBigInt: boolean }) => unknown[];
  return get.call(statement, undefined, { useBigInt: true });
}

/**
 * A table sent as CSV text, its header naming the columns. A row with more fields than the header
 * or a quote left open is refused (422 naming the table): papaparse keeps the surplus in a
 * `__parsed_extra` array (bound by SQLite as a BLOB of garbage) and lets an open quote swallow
 * the rest of the text into one cell. A row with fewer fields has NULL in the missing columns.
 */
function csvTable(
  Papa: typeof import("papaparse"),
  text: string,
  name: string,
): Record<string, Cell>[] {
  const parsed = Papa.parse<Record<string, Cell>>(text, {
    header: true,
    dynamicTyping: true,
    skipEmptyLines: true,
  });
  const broken = parsed.errors.find((e) => e.code !== "TooFewFields" && e.type !== "Delimiter");
  if (broken)
    throw invalid(
      `Table ${name} is not CSV this tool can read: ${broken.message}${broken.row === undefined ? "" : ` (data row ${broken.row + 1})`}.`,
      `tables.${name}`,
    );
  return parsed.data;
}

const sqlQuery = implement(sqlQueryTool, {
  async run(input, { config }) {
    const Papa = await lib.papaparse();
    const db = new (await lib.sqljs()).Database();
    // SQLite's own memory (WebAssembly, outside the thread's JS heap limit) is bounded too: a
    // query that builds huge strings or BLOBs fails with "out of memory", the caller's 422.
    db.run(`PRAGMA hard_heap_limit = ${Math.floor((config.heavy.memoryMb / 2) * 1024 * 1024)}`);
    const tooLarge = () =>
      new WorkerError(
        422,
        "resource_limit",
        `The query's result is larger than ${MAX_RESULT_BYTES / 1024 / 1024} MB as JSON; select fewer rows or smaller values.`,
        "query",
      );
    try {
      for (const [name, source] of Object.entries(input.tables)) {
        const param = `tables.${name}`;
        const rows = typeof source === "string" ? csvTable(Papa, source, name) : source;
        const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
        if (columns.length === 0) throw invalid(`Table ${name} has no columns.`, param);
        const quoted = columns.map((c) => `"${c.replace(/"/g, '""')}"`);
        // What SQLite refuses here is the caller's table, not a fault of the tool: two names
        // equal but for case, a name it reserves (sqlite_…), a column name it cannot read.
        try {
          db.run(`CREATE TABLE "${name}" (${quoted.join(", ")})`);
          const insert = db.prepare(
            `INSERT INTO "${name}" VALUES (${columns.map(() => "?").join(", ")})`,
          );
          for (const row of rows)
            insert.run(
              columns.map((c) => (typeof row[c] === "boolean" ? Number(row[c]) : (row[c] ?? null))),
            );
          insert.free();
        } catch (err) {
          if (/out of memory/i.test(reason(err)))
            throw new WorkerError(
              422,
              "resource_limit",
              `Table ${name} needs more memory than the query may use; send fewer or smaller rows.`,
              param,
            );
          throw invalid(`Table ${name} cannot be made: ${reason(err)}`, param);
        }
      }
      let columns: string[] = [];
      let rows: Record<string, unknown>[] = [];
      let total = 0;
      try {
        for (const statement of db.iterateStatements(input.query)) {
          const names = statement.getColumnNames();
          const collected: Record<string, unknown>[] = [];
          let count = 0;
          let weight = 0;
          while (statement.step()) {
            if (collected.length < MAX_RESULT_ROWS) {
              const row: Record<string, unknown> = {};
              rowWithBigInts(statement).forEach((raw, i) => {
                const { value, bytes } = sqlValue(raw, MAX_RESULT_BYTES - weight);
                weight += bytes + names[i]!.length + 4;
                if (weight > MAX_RESULT_BYTES) throw tooLarge();
                row[names[i]!] = value;
              });
              collected.push(row);
            }
            count++;
          }
          if (names.length) [columns, rows, total] = [names, collected, count];
        }
      } catch (err) {
        if (err instanceof WorkerError) throw err;
        if (/out of memory/i.test(reason(err)))
          throw new WorkerError(
            422,
            "resource_limit",
            "The query needed more memory than it may use; build smaller strings or BLOBs.",
            "query",
          );
        throw invalid(`SQL error: ${reason(err)}`, "query");
      }
      return { columns, rows, row_count: total };
    } finally {
      db.close();
    }
  },
});

/** The output's size: the input (oriented) turned (its bounding box), then resized as `fit` says, as sharp does. */
function transformedSize(
  from: { width: number; height: number },
  to: { width?: number; height?: number; fit: string; rotate: number },
): [number, number] {
  const turn = (to.rotate * Math.PI) / 180;
  const [cos, sin] = [Math.abs(Math.cos(turn)), Math.abs(Math.sin(turn))];
  let [w, h] = [from.width * cos + from.height * sin, from.width * sin + from.height * cos];
  if (to.width && to.height) {
    const scale =
      to.fit === "outside"
        ? Math.max(to.width / w, to.height / h)
        : to.fit === "inside"
          ? Math.min(to.width / w, to.height / h)
          : 0;
    [w, h] = scale ? [w * scale, h * scale] : [to.width, to.height];
  } else if (to.width) [w, h] = [to.width, (h * to.width) / w];
  else if (to.height) [w, h] = [(w * to.height) / h, to.height];
  return [w, h];
}

const imageTransform = implement(imageTransformTool, {
  async run(input) {
    const bytes = decodeBase64(input.image, "image");
    return decodeImage("image", async () => {
      let pipeline = (await image(bytes)).rotate();
      // libvips works on threads of its own, which terminating this one at the deadline does not
      // stop: an 8000 × 8000 fill turned 45° (128 megapixels, as AVIF) held a core for minutes
      // after its 504. The output's size is known before any work: refused past the cap.
      const meta = await pipeline.metadata();
      const [width, height] = transformedSize(
        meta.autoOrient ?? { width: meta.width ?? 0, height: meta.height ?? 0 },
        input,
      );
      if (width * height > MAX_OUTPUT_PIXELS)
        throw new WorkerError(
          422,
          "resource_limit",
          `The image would be ${Math.round(width)} × ${Math.round(height)}, larger than ${MAX_OUTPUT_PIXELS / 1_000_000} megapixels; it was refused.`,
          "width",
        );
      if (input.rotate % 360 !== 0) pipeline = pipeline.rotate(input.rotate);
      if (input.width || input.height)
        pipeline = pipeline.resize({
          width: input.width,
          height: input.height,
          fit: input.fit,
          withoutEnlargement: false,
        });
      if (input.grayscale) pipeline = pipeline.grayscale();
      const { data, info } = await pipeline
        .toFormat(input.format, { quality: input.quality })
        .toBuffer({ resolveWithObject: true });
      return {
        mime_type: `image/${input.format}`,
        data: data.toString("base64"),
        bytes: data.length,
        format: input.format,
        width: info.width,
        height: info.height,
      };
    });
  },
});

/** External references an SVG may not make: the renderer would read local files for them. */
const EXTERNAL_REFERENCE =
  /(?:xlink:)?href\s*=\s*["'](?!data:|#)[^"']*["']|@import|url\(\s*["']?(?!data:|#)/i;
const MAX_OUTPUT_PIXELS = 40_000_000;

const ONE_PIXEL_SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>';

/** The most filter work one render may take: pixels × the costliest filter's window (~2 s here). */
const MAX_FILTER_WORK = 2e9;

/**
 * The window each pixel of the costliest filter reads: (2r + 1)² for a morphology of radius r,
 * order² for a convolution (their values scaled to the output; 1 without either).
 */
function filterWorkPerPixel(svg: string, scale: number): number {
  let most = 1;
  const numbers = (value: string) =>
    value
      .split(/[\s,]+/)
      .map(Number)
      .filter(Number.isFinite);
  for (const [, radius] of svg.matchAll(/<feMorphology\b[^>]*\bradius\s*=\s*["']([^"']*)["']/gi))
    for (const r of numbers(radius!)) most = Math.max(most, (2 * Math.abs(r) * scale + 1) ** 2);
  for (const [, order] of svg.matchAll(/<feConvolveMatrix\b[^>]*\border\s*=\s*["']([^"']*)["']/gi))
    for (const n of numbers(order!)) most = Math.max(most, Math.abs(n) ** 2);
  return most;
}

async function renderSvg(
  svg: string,
  param: string,
  options: { width?: number; background?: string },
) {
  if (EXTERNAL_REFERENCE.test(svg))
    throw invalid(
      "The SVG refers to an external file or URL; only data: URLs and #fragments are allowed.",
      param,
    );
  const { Resvg } = await lib.resvg();
  // resvg reads the background only when it paints: tried on one pixel first, so a colour it
  // cannot read is the caller's 422 naming it, not a failed render (502).
  if (options.background !== undefined) {
    try {
      new Resvg(ONE_PIXEL_SVG, { background: options.background }).render();
    } catch (err) {
      throw invalid(`The background is not a colour: ${reason(err)}`, "background");
    }
  }
  let resvg: InstanceType<typeof Resvg>;
  try {
    resvg = new Resvg(svg, {
      fitTo: options.width ? { mode: "width", value: options.width } : { mode: "original" },
      background: options.background,
      font: { loadSystemFonts: true, defaultFontFamily: "DejaVu Sans" },
    });
  } catch (err) {
    throw invalid(`Not a renderable SVG: ${reason(err)}`, param);
  }
  const scale = options.width ? options.width / resvg.width : 1;
  const pixels = resvg.width * scale * resvg.height * scale;
  if (pixels > MAX_OUTPUT_PIXELS) {
    throw new WorkerError(
      422,
      "resource_limit",
      `The image would be larger than ${MAX_OUTPUT_PIXELS / 1_000_000} megapixels; it was refused.`,
      param,
    );
  }
  // render() is one synchronous native call: terminating the thread at the deadline waits for
  // it, so a filter whose work grows with the square of its size (a dilation of radius 300 over
  // a million pixels) held a core long after its call was answered 504. Refused before.
  if (pixels * filterWorkPerPixel(svg, scale) > MAX_FILTER_WORK)
    throw new WorkerError(
      422,
      "resource_limit",
      "The SVG's filters (feMorphology radius, feConvolveMatrix order) would take too long to render at this size; it was refused.",
      param,
    );
  const png = resvg.render();
  return { png: png.asPng(), width: png.width, height: png.height };
}

const svgToPng = implement(svgToPngTool, {
  async run(input) {
    const { png, width, height } = await renderSvg(input.svg, "svg", {
      width: input.width,
      background: input.background,
    });
    return {
      mime_type: "image/png",
      data: png.toString("base64"),
      bytes: png.length,
      width,
      height,
    };
  },
});

/** Vega's loader, refusing every fetch and file read: charts draw only the data they are sent. */
const noLoader = (vega: typeof Vega) =>
  Object.assign(vega.loader(), {
    load: () => Promise.reject(new Error("remote data is not allowed; send data.values")),
    sanitize: () => Promise.reject(new Error("remote data is not allowed; send data.values")),
  });

/** Rows a chart may generate itself (a `sequence` data source, imputed key values). */
const MAX_GENERATED_ROWS = 100_000;

/**
 * Refuses a specification that generates more rows than the budget: `{"sequence": {"start": 0,
 * "stop": 5e7}}` is a few bytes that expand to 50 million objects, past the thread's heap limit —
 * and a V8 heap exhausted in some allocation paths aborts the whole worker process, not only the
 * thread, so this is checked before anything is built.
 */
function checkGeneratedRows(spec: unknown): void {
  const walk = (node: unknown): void => {
    if (!node || typeof node !== "object") return;
    if (Array.isArray(node)) {
      for (const child of node) walk(child);
      return;
    }
    const o = node as Record<string, unknown>;
    if (typeof o.start === "number" && typeof o.stop === "number") {
      const step = typeof o.step === "number" && o.step !== 0 ? Math.abs(o.step) : 1;
      if (Math.abs(o.stop - o.start) / step > MAX_GENERATED_ROWS)
        throw invalid(
          `The chart would generate more than ${MAX_GENERATED_ROWS} rows; it was refused.`,
          "spec",
        );
    }
    if (typeof o.maxbins === "number" && o.maxbins > 10_000)
      throw invalid("The chart asks for more than 10000 bins; it was refused.", "spec");
    Object.values(o).forEach(walk);
  };
  walk(spec);
}

const chartRender = implement(chartRenderTool, {
  async run(input) {
    if (JSON.stringify(input.spec).includes('"url"'))
      throw invalid(
        "The chart may not load data or images from URLs; send the data inline as data.values.",
        "spec",
      );
    checkGeneratedRows(input.spec);
    const [vega, { compile: compileVegaLite }] = await Promise.all([lib.vega(), lib.vegaLite()]);
    let view: Vega.View;
    try {
      const spec = {
        ...input.spec,
        width: input.width,
        height: input.height,
        autosize: { type: "fit", contains: "padding" },
      };
      const compiled = compileVegaLite(spec as never).spec;
      view = new vega.View(vega.parse(compiled), {
        renderer: "none",
        loader: noLoader(vega) as never,
      });
      await view.runAsync();
    } catch (err) {
      throw invalid(`Not a Vega-Lite specification this tool can draw: ${reason(err)}`, "spec");
    }
    const svgText = await view.toSVG();
    view.finalize();
    if (input.format === "svg") {
      return {
        format: "svg" as const,
        mime_type: "image/svg+xml",
        encoding: "utf8" as const,
        data: svgText,
        width: input.width,
        height: input.height,
      };
    }
    const { png, width, height } = await renderSvg(svgText, "spec", {
      width: input.width,
      background: "white",
    });
    return {
      format: "png" as const,
      mime_type: "image/png",
      encoding: "base64" as const,
      data: png.toString("base64"),
      width,
      height,
    };
  },
});

let tesseract: Promise<TesseractWorker> | null = null;

const ocr = implement(ocrTool, {
  async run(input) {
    const bytes = decodeBase64(input.image, "image");
    // Normalised to a bounded PNG first: Tesseract itself has no pixel limit.
    const png = await decodeImage("image", async () =>
      (await image(bytes)).rotate().png().toBuffer(),
    );
    tesseract ??= (await lib.tesseract()).createWorker("eng", 1, {
      langPath: `${dirname(require.resolve("@tesseract.js-data/eng/package.json"))}/4.0.0_best_int`,
      gzip: true,
      cacheMethod: "none",
    });
    const worker = await tesseract;
    const { data } = await worker.recognize(png, {}, { text: true, blocks: true });
    const lines = (data.blocks ?? []).flatMap((b) =>
      b.paragraphs.flatMap((p) =>
        p.lines.map((l) => ({ text: l.text.trim(), confidence: l.confidence })),
      ),
    );
    return { text: data.text.trim(), confidence: data.confidence, lines };
  },
});

const qrDecode = implement(qrDecodeTool, {
  async run(input) {
    const bytes = decodeBase64(input.image, "image");
    const { data, info } = await decodeImage("image", async () =>
      (await image(bytes)).rotate().ensureAlpha().raw().toBuffer({ resolveWithObject: true }),
    );
    const code = (await lib.jsqr())(
      new Uint8ClampedArray(data.buffer, data.byteOffset, data.length),
      info.width,
      info.height,
    );
    if (!code) return { found: false, text: null, corners: [] };
    const l = code.location;
    return {
      found: true,
      text: code.data,
      corners: [l.topLeftCorner, l.topRightCorner, l.bottomRightCorner, l.bottomLeftCorner],
    };
  },
});

/**
 * This thread's QuickJS instance. Freeing a runtime that an interrupted script left with live
 * promise jobs can fail QuickJS's own assertion, which aborts the WebAssembly instance for good:
 * the instance is then dropped and the next call starts a fresh one.
 */
let quickjs: Promise<import("quickjs-emscripten").QuickJSWASMModule> | null = null;

/**
 * A script's value as JSON text, written inside the sandbox: a BigInt as its digits and a symbol
 * as its description (JSON has neither), undefined as null. Reading the value out first
 * (`vm.dump`) fell back to "[object Object]" for any object holding a BigInt, or a cycle.
 */
const WRITE_JSON = `(value) => JSON.stringify(value === undefined ? null : value,
  (_key, v) => typeof v === "bigint" || typeof v === "symbol" ? v.toString() : v)`;

/** How long writing the script's result as JSON may take (its own `toJSON` methods included). */
const WRITE_JSON_MS = 250;

/** A logged value as the console shows it: its JSON, or why it has none. */
const consoleText = (json: { text: string | null } | { error: string }) =>
  "text" in json ? (json.text ?? "null") : `[${json.error}]`;

const jsSandbox = implement(jsSandboxTool, {
  async run(input) {
    const { newQuickJSWASMModule, shouldInterruptAfterDeadline } = await lib.quickjs();
    const QuickJS = await (quickjs ??= newQuickJSWASMModule());
    const runtime = QuickJS.newRuntime();
    runtime.setMemoryLimit(input.memory_limit_mb * 1024 * 1024);
    runtime.setMaxStackSize(1024 * 1024);
    const vm = runtime.newContext();
    const lines: string[] = [];
    let writeJson: QuickJSHandle | undefined;
    /** A value as JSON text (WRITE_JSON; null when JSON has no text for it), or why it has none. */
    const jsonOf = (handle: QuickJSHandle): { text: string | null } | { error: string } => {
      const written = vm.callFunction(writeJson!, vm.undefined, handle);
      if (written.error) {
        const error = vm.dump(written.error) as { message?: string } | string;
        written.error.dispose();
        return { error: typeof error === "string" ? error : (error.message ?? "not JSON") };
      }
      const text = vm.typeof(written.value) === "string" ? vm.getString(written.value) : null;
      written.value.dispose();
      return { text };
    };
    try {
      writeJson = vm.unwrapResult(vm.evalCode(WRITE_JSON, "write-json.js"));
      const consoleObject = vm.newObject();
      for (const level of ["log", "info", "warn", "error"]) {
        const fn = vm.newFunction(level, (...args: QuickJSHandle[]) => {
          if (lines.length < 1000)
            lines.push(
              args
                .map((a) => (vm.typeof(a) === "string" ? vm.getString(a) : consoleText(jsonOf(a))))
                .join(" ")
                .slice(0, 10_000),
            );
        });
        vm.setProp(consoleObject, level, fn);
        fn.dispose();
      }
      vm.setProp(vm.global, "console", consoleObject);
      consoleObject.dispose();
      // JSON is a JavaScript expression: the input arrives as data, never as code of the caller's.
      const parsed = vm.unwrapResult(
        vm.evalCode(`(${JSON.stringify(input.input ?? null)})`, "input.json"),
      );
      vm.setProp(vm.global, "input", parsed);
      parsed.dispose();

      const overran = () => Date.now() - started >= input.time_limit_ms;
      const ranTooLong = () =>
        new WorkerError(
          422,
          "resource_limit",
          `The script ran longer than ${input.time_limit_ms} ms and was stopped.`,
          "code",
        );
      /** The script's own error as text; running out of time or memory is the caller's 422. */
      const failure = (handle: QuickJSHandle): string => {
        const error = vm.dump(handle) as { name?: string; message?: string } | string;
        handle.dispose();
        const message =
          typeof error === "string" ? error : `${error.name ?? "Error"}: ${error.message ?? ""}`;
        // Past the deadline, whatever the interruption surfaced as (QuickJS may report it from a promise job as a TypeError).
        if (overran()) throw ranTooLong();
        if (/out of memory/i.test(message))
          throw new WorkerError(
            422,
            "resource_limit",
            `The script used more than ${input.memory_limit_mb} MB and was stopped.`,
            "code",
          );
        return message;
      };
      const done = (result: unknown, error: string | null) => ({
        result,
        console: lines,
        error,
        duration_ms: Date.now() - started,
      });

      // The clock starts with the caller's code, not with setting up its sandbox.
      const started = Date.now();
      runtime.setInterruptHandler(shouldInterruptAfterDeadline(started + input.time_limit_ms));
      const result = vm.evalCode(input.code, "script.js");
      // A script that ends in a promise (an async function's result) is settled here: its jobs
      // run under the same deadline and memory limit, so `for (;;) await null` is stopped too.
      const jobs = result.error ? null : runtime.executePendingJobs();
      // Reading the outcome must not be interrupted in turn once the deadline has passed.
      runtime.removeInterruptHandler();
      if (result.error) return done(null, failure(result.error));
      if (jobs?.error) {
        result.value.dispose();
        if (overran()) {
          jobs.error.dispose();
          throw ranTooLong();
        }
        return done(null, failure(jobs.error));
      }
      const state = vm.getPromiseState(result.value);
      if (state.type === "pending") {
        result.value.dispose();
        if (overran()) throw ranTooLong();
        return done(null, "The script's promise never settled.");
      }
      if (state.type === "rejected") {
        result.value.dispose();
        return done(null, failure(state.error));
      }
      // Written under a deadline of its own: a `toJSON` of the script's runs here too.
      runtime.setInterruptHandler(shouldInterruptAfterDeadline(Date.now() + WRITE_JSON_MS));
      const written = jsonOf(state.value);
      runtime.removeInterruptHandler();
      if (!state.notAPromise) state.value.dispose();
      result.value.dispose();
      if ("error" in written)
        return done(null, `The script's result cannot be written as JSON: ${written.error}`);
      return done(written.text === null ? null : (JSON.parse(written.text) as unknown), null);
    } finally {
      try {
        writeJson?.dispose();
        vm.dispose();
        runtime.dispose();
      } catch {
        quickjs = null;
      }
    }
  },
});

/**
 * math.js with the functions that could reach outside an expression switched off (math.js's own
 * security advice), and `config`: one instance serves every call of a heavy child, so an
 * expression's `config({number: "BigNumber", precision: 4})` or `randomSeed` changed the results of
 * every later caller's expressions, any account's.
 */
function limitedMath({ create, all }: typeof import("mathjs")) {
  const math = create(all!);
  boundMatrixSizes(math); // first: math.import is among what is switched off below
  const evaluate = math.evaluate.bind(math);
  math.import(
    Object.fromEntries(
      [
        "import",
        "createUnit",
        "evaluate",
        "parse",
        "simplify",
        "derivative",
        "resolve",
        "reviver",
        "compile",
        "config",
      ].map((name) => [
        name,
        () => {
          throw new Error(`the function ${name} is disabled`);
        },
      ]),
    ),
    { override: true },
  );
  return { evaluate, format: math.format.bind(math) };
}

/** The most elements a matrix an expression builds may have (a 1000 × 1000 matrix). */
const MAX_MATRIX_ELEMENTS = 1_000_000;

/**
 * Refuses, before they allocate, the functions whose arguments say how large a matrix to build.
 * `zeros(1e9)`, `1:1e9` or `ones(1e8)` are a few bytes that ask for gigabytes, and V8 does not
 * always stop a thread that meets its heap limit: on some allocation paths it aborts the whole
 * worker process (every call in flight failed, every tool was down until it restarted).
 */
function boundMatrixSizes(math: import("mathjs").MathJsInstance): void {
  type Value = unknown;
  const num = (v: Value) => Math.abs(Number(typeof v === "object" && v ? String(v) : v));
  const sizeOf = (v: Value): number[] | null =>
    Array.isArray(v)
      ? v.map(num)
      : v && typeof v === "object" && "toArray" in v
        ? (v as { toArray(): Value[] }).toArray().map(num)
        : null;
  const elementsOf = (v: Value): number =>
    v && typeof v === "object" && "size" in v && typeof v.size === "function"
      ? (v.size() as number[]).reduce((a, b) => a * b, 1)
      : Array.isArray(v)
        ? v.reduce((n: number, x) => n + elementsOf(x), 0)
        : 1;
  const product = (ns: number[]) => ns.reduce((a, b) => a * b, 1);
  /** The elements `value` holds once a value is set at `index` (an Index: its max() is the last position per dimension). */
  const grownBy = (value: Value, index: Value): number => {
    const max = (index as { max?: () => Value } | undefined)?.max;
    if (typeof max !== "function") return 1;
    const reach = sizeOf(max.call(index)) ?? [];
    const size =
      typeof value === "string"
        ? [value.length]
        : value && typeof value === "object" && "size" in value && typeof value.size === "function"
          ? (value.size() as number[])
          : Array.isArray(value)
            ? [value.length]
            : [];
    return product(
      reach.map((last, d) => Math.max(size[d] ?? 1, last + 1)).concat(size.slice(reach.length)),
    );
  };
  /** zeros(n) is a vector of n, zeros(m, n) and zeros([m, n]) are m × n (a format name may follow). */
  const bySizeArguments = (args: Value[]) => {
    const size = sizeOf(args[0]);
    if (size) return product(size);
    return product(args.filter((a) => typeof a !== "string").map(num));
  };
  const byRange = (args: Value[]) => {
    const [start, end, step] =
      typeof args[0] === "string" ? args[0].split(":").map(Number) : args.map(num);
    const count = Math.abs(Number(end) - Number(start)) / Math.abs(Number(step) || 1);
    return Number.isFinite(count) ? count : Number.POSITIVE_INFINITY;
  };
  const byFirstSize = (args: Value[]) => {
    const size = sizeOf(args[0]);
    return size ? product(size) : 1;
  };
  const counters: Record<string, (args: Value[]) => number> = {
    zeros: bySizeArguments,
    ones: bySizeArguments,
    identity: (args) => {
      const size = sizeOf(args[0]) ?? args.filter((a) => typeof a !== "string").map(num);
      return size.length === 1 ? size[0]! ** 2 : product(size); // identity(n) is n × n
    },
    range: byRange,
    random: byFirstSize,
    randomInt: byFirstSize,
    matrixFromFunction: byFirstSize,
    resize: (args) => product(sizeOf(args[1]) ?? [1]),
    kron: (args) => elementsOf(args[0]) * elementsOf(args[1]),
    concat: (args) => args.reduce((n: number, a) => n + elementsOf(a), 0),
    // subset(value, index, replacement): an assignment past the end grows the value (a string
    // too) to reach the index; reading is never bounded here.
    subset: (args) => (args.length >= 3 ? grownBy(args[0], args[1]) : 1),
  };
  const { expression } = math as unknown as {
    expression: { transform: Record<string, Value>; mathWithTransform: Record<string, Value> };
  };
  const bounded = (name: string, fn: (...args: Value[]) => Value) =>
    math.typed(name, {
      "...any": (args: Value[]) => {
        const elements = counters[name]!(args);
        if (!(elements <= MAX_MATRIX_ELEMENTS))
          throw new Error(
            `${name} would build a matrix of more than ${MAX_MATRIX_ELEMENTS} elements`,
          );
        return fn(...args);
      },
    });
  const transforms: Record<string, Value> = {};
  for (const name of Object.keys(counters)) {
    // The expression parser calls a function's transform when it has one (`1:5` includes its
    // end, and matrixFromFunction counts from 1, through theirs): both are bounded.
    const transform = expression.transform[name] as ((...args: Value[]) => Value) | undefined;
    if (transform) transforms[name] = bounded(name, transform);
    const original = (math as unknown as Record<string, (...args: Value[]) => Value>)[name]!;
    math.import({ [name]: bounded(name, original) }, { override: true });
  }
  for (const [name, transform] of Object.entries(transforms)) {
    expression.transform[name] = transform;
    expression.mathWithTransform[name] = transform;
  }
  // An assignment past a matrix's end (`a[100000000] = 1`) resizes it to reach the index: the
  // expression parser calls the matrix's own subset method, not the `subset` function, and one
  // allocation past the thread's heap aborts the whole process. Both kinds of matrix are bounded.
  const classes = math as unknown as Record<
    "DenseMatrix" | "SparseMatrix",
    { prototype: { subset(...args: Value[]): Value; size(): number[] } }
  >;
  for (const Matrix of [classes.DenseMatrix, classes.SparseMatrix]) {
    const subset = Matrix.prototype.subset;
    Matrix.prototype.subset = function (this: { size(): number[] }, ...args: Value[]) {
      if (args.length >= 2) {
        const elements = grownBy(this, args[0]);
        if (!(elements <= MAX_MATRIX_ELEMENTS))
          throw new Error(
            `this assignment would grow the matrix to more than ${MAX_MATRIX_ELEMENTS} elements`,
          );
      }
      return subset.apply(this, args);
    };
  }
}

const mathEvaluate = implement(mathEvaluateTool, {
  async run(input) {
    const expressions = Array.isArray(input.expression) ? input.expression : [input.expression];
    const scope = new Map<string, unknown>(Object.entries(input.scope));
    const math = await lib.math();
    let values: unknown[];
    try {
      values = expressions.map((e) => math.evaluate(e, scope) as unknown);
    } catch (err) {
      throw invalid(`Cannot evaluate: ${reason(err)}`, "expression");
    }
    const results = values.map((v) => math.format(v, { precision: input.precision }));
    const last = values.at(-1);
    return {
      result: results.at(-1)!,
      value: typeof last === "number" && Number.isFinite(last) ? last : null,
      results,
    };
  },
});

/**
 * Tools written with their category (documents.ts, code.ts…) that run here all the same, their
 * module loaded on the first call. Some work asynchronously (pdf-lib, ExcelJS, Prettier), so no
 * time limit on the shared event loop can stop them: a large input held that loop 15 s or more.
 * The parsers and converters take about a second on a megabyte of ordinary text (CSV, XML, YAML,
 * Markdown, HTML), and their time limits let hostile input hold the loop 1-2 s (a catastrophic
 * pattern, nested markup), while every other caller's cheap call waited. A thread is stopped at
 * the deadline and holds up no one else.
 */
function fromModule<T extends ToolDefinition>(
  tool: T,
  load: () => Promise<object>,
): ToolImplementation<T> {
  return implement(tool, {
    async run(input, ctx) {
      const impl = Object.values(await load()).find(
        (value) => (value as Partial<ToolImplementation>).definition === tool,
      ) as ToolImplementation<T>;
      return impl.run(input, ctx);
    },
  });
}

const fromModules = [
  fromModule(pdfGenerateTool, lib.documents),
  fromModule(spreadsheetWriteTool, lib.documents),
  fromModule(yamlConvertTool, lib.documents),
  fromModule(csvConvertTool, lib.documents),
  fromModule(xmlConvertTool, lib.documents),
  fromModule(markdownToHtmlTool, lib.documents),
  fromModule(htmlToMarkdownTool, lib.documents),
  fromModule(htmlSanitizeTool, lib.documents),
  fromModule(readabilityExtractTool, lib.documents),
  fromModule(jsonpathQueryTool, lib.data),
  // chrono reads 100 KB of dates ("from 1 to 2 may", 6,000 times) in ~0.6 s.
  fromModule(dateParseTool, lib.data),
  fromModule(regexTestTool, lib.utilities),
  fromModule(jsonSchemaValidateTool, lib.utilities),
  fromModule(textDiffTool, lib.utilities),
  fromModule(qrCodeTool, lib.utilities),
  fromModule(barcodeGenerateTool, lib.images),
  // exifr reads 64 KB of unclosed XMP tags in ~0.25 s (its tag pattern scans to the end for each).
  fromModule(imageMetadataTool, lib.images),
  fromModule(codeFormatTool, lib.code),
];

export const HEAVY_IMPLEMENTATIONS = new Map(
  (
    [
      pdfExtractText,
      docxToText,
      spreadsheetRead,
      sqlQuery,
      mathEvaluate,
      imageTransform,
      svgToPng,
      chartRender,
      ocr,
      qrDecode,
      jsSandbox,
      ...fromModules,
      ...Object.values(language),
    ] as ToolImplementation[]
  ).map((impl) => [impl.definition.name, impl]),
);
