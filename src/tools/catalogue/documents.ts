import { z } from "zod";
import { boundedUrl } from "../../lib/bounded-formats.js";
import { defineTool } from "../definition.js";
import { base64File, fileOutput } from "./common.js";
import { DOCX, PDF, XLSX } from "./examples.js";
import { MAX_TEXT_CHARS } from "./limits.js";

const html = z.string().min(1).max(MAX_TEXT_CHARS);

export const htmlToMarkdown = defineTool({
  name: "html-to-markdown",
  aliases: [],
  title: "HTML to Markdown",
  description: "Convert an HTML document or fragment to Markdown.",
  cost: 1,
  category: "documents",
  tags: ["convert", "markdown", "html"],
  pool: "heavy",
  timeoutMs: 5_000,
  input: z.strictObject({ html: html.describe("The HTML document or fragment.") }).meta({
    examples: [
      {
        html: "<h1>Toolgate</h1><p>Pay <strong>per call</strong>.</p><ul><li>REST</li><li>MCP</li></ul>",
      },
    ],
  }),
  output: z.object({ markdown: z.string().describe("The Markdown.") }),
});

export const markdownToHtml = defineTool({
  name: "markdown-to-html",
  aliases: [],
  title: "Markdown to HTML",
  description:
    "Render Markdown (GitHub-flavoured) to HTML. Raw HTML in the input is escaped, not passed through.",
  cost: 1,
  category: "documents",
  tags: ["render", "markdown", "gfm"],
  pool: "heavy",
  timeoutMs: 5_000,
  input: z
    .strictObject({ markdown: z.string().max(MAX_TEXT_CHARS).describe("The Markdown source.") })
    .meta({ examples: [{ markdown: "# Toolgate\n\nPay **per call**.\n\n- REST\n- MCP" }] }),
  output: z.object({ html: z.string().describe("The rendered HTML.") }),
});

export const readabilityExtract = defineTool({
  name: "readability-extract",
  aliases: [],
  title: "Extract the main text",
  description:
    "Extract an article's main text, title and byline from an HTML page (Mozilla Readability).",
  cost: 2,
  category: "documents",
  tags: ["article", "reader mode", "boilerplate", "main content"],
  pool: "heavy",
  timeoutMs: 10_000,
  input: z
    .strictObject({
      html: html.describe("The page's HTML."),
      url: boundedUrl(2048).optional().describe("The page's address, to resolve relative links."),
    })
    .meta({
      examples: [
        {
          html: "<html><head><title>Gateways explained</title></head><body><nav>Home | About</nav><article><h1>Gateways explained</h1><p class='byline'>By Ada</p><p>A gateway sits between callers and tools. It checks who is calling, counts what they use, and forwards the call to the worker that does the work. It keeps the books so that every credit is accounted for.</p><p>Good gateways are fast, predictable and honest about failures: a call that fails is refunded.</p></article><footer>© 2026</footer></body></html>",
        },
      ],
    }),
  output: z.object({
    title: z.string().nullable().describe("The article's title."),
    byline: z.string().nullable().describe("Its author line."),
    excerpt: z.string().nullable().describe("A short excerpt or the description."),
    site_name: z.string().nullable().describe("The site's name."),
    text: z.string().describe("The main text, paragraphs separated by blank lines."),
    length: z.number().int().describe("Length of text in characters."),
  }),
});

export const pdfExtractText = defineTool({
  name: "pdf-extract-text",
  aliases: ["pdf-to-text", "pdf-text"],
  title: "Extract text from a PDF",
  description:
    "Extract the text of a PDF, page by page, with its page count and document info (pdf.js).",
  cost: 3,
  category: "documents",
  tags: ["pdf", "parse", "read", "text extraction"],
  pool: "heavy",
  timeoutMs: 30_000,
  input: z
    .strictObject({
      pdf: base64File("The PDF file", 20_000_000),
      max_pages: z
        .number()
        .int()
        .min(1)
        .max(2000)
        .default(500)
        .describe("Read at most this many pages."),
    })
    .meta({ examples: [{ pdf: PDF }] }),
  output: z.object({
    pages: z.array(z.string()).describe("The text of each page read, in order."),
    text: z.string().describe("All pages' text, separated by blank lines."),
    page_count: z.number().int().describe("How many pages the PDF has."),
    info: z
      .record(z.string(), z.unknown())
      .describe("The document information dictionary (Title, Author, Producer…)."),
  }),
});

export const pdfGenerate = defineTool({
  name: "pdf-generate",
  aliases: ["text-to-pdf", "create-pdf"],
  title: "Generate a PDF",
  description:
    "Lay out headings and paragraphs as a PDF document (pdf-lib, standard Helvetica fonts, automatic line and page breaks).",
  cost: 3,
  category: "documents",
  tags: ["pdf", "create", "report", "document", "export"],
  pool: "heavy",
  timeoutMs: 15_000,
  input: z
    .strictObject({
      title: z
        .string()
        .max(500)
        .optional()
        .describe("The document title (shown first and stored in the PDF's metadata)."),
      blocks: z
        .array(
          z.strictObject({
            type: z.enum(["heading", "paragraph"]).describe("A heading or a paragraph."),
            text: z
              .string()
              .max(100_000)
              .describe("Its text (Latin-1 characters; others are replaced by ?)."),
          }),
        )
        .min(1)
        .max(2000)
        .describe("The content, in order."),
      page_size: z.enum(["A4", "Letter"]).default("A4").describe("The paper size."),
      font_size: z.number().min(6).max(36).default(11).describe("Body text size in points."),
    })
    .meta({
      examples: [
        {
          title: "Quarterly report",
          blocks: [
            { type: "heading", text: "Summary" },
            { type: "paragraph", text: "Calls grew by 40% while refunds stayed under 1%." },
          ],
        },
      ],
    }),
  output: z.object({
    ...fileOutput("PDF"),
    pages: z.number().int().describe("How many pages the PDF has."),
  }),
});

export const docxToText = defineTool({
  name: "docx-to-text",
  aliases: ["docx-to-html", "word-to-text"],
  title: "Word document to text or HTML",
  description: "Convert a Word .docx document to plain text, HTML or Markdown (mammoth).",
  cost: 3,
  category: "documents",
  tags: ["docx", "word", "office", "convert", "microsoft"],
  pool: "heavy",
  timeoutMs: 30_000,
  input: z
    .strictObject({
      docx: base64File("The .docx file", 20_000_000),
      format: z.enum(["text", "html", "markdown"]).default("text").describe("What to convert to."),
    })
    .meta({ examples: [{ docx: DOCX, format: "html" }] }),
  output: z.object({
    format: z.enum(["text", "html", "markdown"]).describe("The format of content."),
    content: z.string().describe("The document's content."),
    warnings: z.array(z.string()).describe("What mammoth could not convert faithfully."),
  }),
});

const cell = z.union([z.string(), z.number(), z.boolean(), z.null()]);

export const spreadsheetRead = defineTool({
  name: "spreadsheet-read",
  aliases: ["xlsx-read", "excel-read"],
  title: "Read a spreadsheet",
  description:
    "Read the sheets of an Excel .xlsx workbook as rows of values (or objects keyed by the header row).",
  cost: 3,
  category: "documents",
  tags: ["excel", "xlsx", "workbook", "sheet", "table", "parse"],
  pool: "heavy",
  timeoutMs: 30_000,
  input: z
    .strictObject({
      xlsx: base64File("The .xlsx workbook", 20_000_000),
      header: z
        .boolean()
        .default(true)
        .describe("Treat each sheet's first row as column names and return objects."),
      max_rows: z
        .number()
        .int()
        .min(1)
        .max(100_000)
        .default(10_000)
        .describe("Rows per sheet to return at most."),
    })
    .meta({ examples: [{ xlsx: XLSX, header: true }] }),
  output: z.object({
    sheets: z
      .array(
        z.object({
          name: z.string().describe("The sheet's name."),
          columns: z.array(z.string()).describe("The header row (empty when header is false)."),
          rows: z
            .array(z.union([z.array(cell), z.record(z.string(), cell)]))
            .describe("The rows: arrays of values, or objects keyed by column."),
          row_count: z.number().int().describe("How many data rows the sheet has."),
        }),
      )
      .describe("Every worksheet, in order."),
  }),
});

export const spreadsheetWrite = defineTool({
  name: "spreadsheet-write",
  aliases: ["xlsx-write", "excel-write"],
  title: "Write a spreadsheet",
  description:
    "Build an Excel .xlsx workbook from rows of values or objects, one or more sheets, with a bold header row.",
  cost: 3,
  category: "documents",
  tags: ["excel", "xlsx", "workbook", "export", "create", "table"],
  pool: "heavy",
  timeoutMs: 15_000,
  input: z
    .strictObject({
      sheets: z
        .array(
          z.strictObject({
            name: z
              .string()
              .min(1)
              .max(31)
              .regex(/^[^\\/?*[\]:]+$/, "no \\ / ? * [ ] :")
              .describe("The sheet's name (Excel's rules: 31 characters, no \\ / ? * [ ] :)."),
            rows: z
              .array(z.union([z.array(cell), z.record(z.string(), cell)]))
              .max(100_000)
              .describe(
                "Rows as arrays of values, or as objects (their keys become the header row).",
              ),
          }),
        )
        .min(1)
        .max(50)
        .describe("The worksheets, in order."),
    })
    .meta({
      examples: [
        {
          sheets: [
            {
              name: "Sales",
              rows: [
                { region: "North", units: 120 },
                { region: "South", units: 80 },
              ],
            },
          ],
        },
      ],
    }),
  output: z.object(fileOutput("workbook")),
});

export const csvConvert = defineTool({
  name: "csv-convert",
  aliases: ["csv-to-json", "json-to-csv"],
  title: "CSV ⇄ JSON",
  description:
    "Parse CSV (any delimiter, quoted fields, header row) into JSON rows, or write JSON rows as CSV (papaparse).",
  cost: 1,
  category: "documents",
  tags: ["csv", "tsv", "json", "parse", "table", "convert"],
  pool: "heavy",
  timeoutMs: 10_000,
  input: z
    .strictObject({
      csv: z
        .string()
        .max(MAX_TEXT_CHARS)
        .optional()
        .describe("CSV text to parse (send csv or rows)."),
      rows: z
        .array(z.union([z.array(cell), z.record(z.string(), cell)]))
        .max(200_000)
        .optional()
        .describe("Rows to write as CSV (send csv or rows)."),
      header: z
        .boolean()
        .default(true)
        .describe("Parsing: the first row names the columns. Writing: emit a header row."),
      delimiter: z
        .string()
        .max(4)
        .optional()
        .describe("Field delimiter; guessed when parsing if omitted, a comma when writing."),
      dynamic_typing: z
        .boolean()
        .default(true)
        .describe("Parsing: turn numbers and booleans into JSON numbers and booleans."),
    })
    .refine((v) => (v.csv === undefined) !== (v.rows === undefined), {
      message: "Send exactly one of csv or rows",
      path: ["csv"],
    })
    .meta({
      examples: [{ csv: "name,age\nAda,36\nAlan,41\n" }],
      oneOf: [{ required: ["csv"] }, { required: ["rows"] }],
    }),
  output: z.object({
    rows: z
      .array(z.union([z.array(cell), z.record(z.string(), cell)]))
      .nullable()
      .describe("The parsed rows (when csv was sent)."),
    csv: z.string().nullable().describe("The CSV written (when rows were sent)."),
    columns: z.array(z.string()).describe("The column names."),
    errors: z
      .array(
        z.object({
          row: z.number().int().nullable().describe("The row, 0-based."),
          message: z.string().describe("What was wrong."),
        }),
      )
      .describe("Rows that did not parse cleanly."),
  }),
});

export const xmlConvert = defineTool({
  name: "xml-convert",
  aliases: ["xml-to-json", "json-to-xml"],
  title: "XML ⇄ JSON",
  description:
    "Parse XML into JSON (attributes prefixed with @_; a text that is exactly a number or true/false becomes one), or build well-formed XML from JSON (fast-xml-parser). Entities are not expanded.",
  cost: 1,
  category: "documents",
  tags: ["xml", "json", "parse", "convert", "soap"],
  pool: "heavy",
  timeoutMs: 10_000,
  input: z
    .strictObject({
      xml: z.string().max(MAX_TEXT_CHARS).optional().describe("XML to parse (send xml or json)."),
      json: z
        .record(z.string(), z.unknown(), {
          error: "json must be an object: its keys are the element names.",
        })
        .optional()
        .describe(
          "A JSON object to write as XML (send xml or json): keys are element names, @_-prefixed keys attributes, #text an element's text.",
        ),
      pretty: z.boolean().default(true).describe("Writing: indent the XML."),
    })
    .refine((v) => (v.xml === undefined) !== (v.json === undefined), {
      message: "Send exactly one of xml or json",
      path: ["xml"],
    })
    .meta({
      examples: [
        { xml: '<order id="7"><item sku="A1">Pen</item><item sku="B2">Ink</item></order>' },
      ],
      oneOf: [{ required: ["xml"] }, { required: ["json"] }],
    }),
  output: z.object({
    json: z.unknown().describe("The parsed document (when xml was sent), else null."),
    xml: z.string().nullable().describe("The XML written (when json was sent)."),
  }),
});

/**
 * How deeply a YAML document's collections may nest. The yaml package composes nodes
 * recursively: near 800 levels it overflows the stack, and a second such document then aborted
 * the whole worker process ("RegExpCompiler Allocation failed", heavy-pool threads included).
 * No configuration comes near this.
 */
export const MAX_YAML_DEPTH = 256;

export const yamlConvert = defineTool({
  name: "yaml-convert",
  aliases: ["yaml-to-json", "json-to-yaml"],
  title: "YAML ⇄ JSON",
  description: `Parse YAML (1.2, all documents) into JSON, or write JSON as YAML (the yaml package). Collections nested more than ${MAX_YAML_DEPTH} levels deep are refused.`,
  cost: 1,
  category: "documents",
  tags: ["yaml", "yml", "json", "config", "parse", "convert"],
  pool: "heavy",
  timeoutMs: 10_000,
  input: z
    .strictObject({
      yaml: z
        .string()
        .max(MAX_TEXT_CHARS)
        .optional()
        .describe("YAML to parse (send yaml or json)."),
      json: z.unknown().optional().describe("A JSON value to write as YAML (send yaml or json)."),
    })
    .refine((v) => (v.yaml === undefined) !== (v.json === undefined), {
      message: "Send exactly one of yaml or json",
      path: ["yaml"],
    })
    .meta({
      examples: [{ yaml: "service: toolgate\nports:\n  - 8080\n  - 8443\ntls: true\n" }],
      oneOf: [{ required: ["yaml"] }, { required: ["json"] }],
    }),
  output: z.object({
    json: z
      .unknown()
      .describe(
        "The first document, parsed (when yaml was sent), else null. What JSON has no value for is text: !!binary as base64, an integer beyond ±2^53 in decimal, .inf, -.inf and .nan as spelled here.",
      ),
    documents: z.number().int().describe("How many YAML documents the input had."),
    yaml: z.string().nullable().describe("The YAML written (when json was sent)."),
  }),
});

export const htmlSanitize = defineTool({
  name: "html-sanitize",
  aliases: ["sanitize-html"],
  title: "Sanitize HTML",
  description:
    "Remove scripts, event handlers and unsafe URLs from HTML, keeping a safe set of tags and attributes (sanitize-html).",
  cost: 1,
  category: "documents",
  tags: ["xss", "clean", "security", "html", "untrusted"],
  pool: "heavy",
  timeoutMs: 10_000,
  input: z
    .strictObject({
      html: html.describe("The untrusted HTML."),
      allowed_tags: z
        .array(
          z
            .string()
            .regex(/^[a-z][a-z0-9]*$/)
            .max(20),
        )
        .max(200)
        .optional()
        .describe(
          "Tags to keep instead of the default safe set. Tags that can run script or load content (script, style, iframe, frame, frameset, object, embed, applet, base, link, meta, noscript, template, svg, math) are refused.",
        ),
      allow_images: z
        .boolean()
        .default(false)
        .describe("Keep <img> elements with http(s) sources."),
    })
    .meta({
      examples: [
        {
          html: '<p onclick="steal()">Hello <b>world</b><script>alert(1)</script><a href="javascript:x()">link</a></p>',
        },
      ],
    }),
  output: z.object({
    html: z.string().describe("The sanitized HTML."),
    removed: z.boolean().describe("Whether anything was removed or changed."),
  }),
});
