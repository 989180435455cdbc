import { z } from "zod";
import { MAX_TEXT_CHARS } from "./limits.js";
import { defineTool } from "../definition.js";

const jsonValue = z.unknown();

export const jsonpathQuery = defineTool({
  name: "jsonpath-query",
  aliases: ["jsonpath"],
  title: "Query JSON with JSONPath",
  description:
    "Select values from a JSON document with a JSONPath expression (filters, recursive descent, slices); script evaluation is disabled (jsonpath-plus, safe mode).",
  cost: 1,
  category: "data",
  tags: ["json", "query", "select", "filter", "jq"],
  pool: "heavy",
  timeoutMs: 10_000,
  input: z
    .strictObject({
      json: jsonValue.describe("The JSON document."),
      path: z
        .string()
        .min(1)
        .max(2000)
        .describe("A JSONPath expression, e.g. $.store.book[?(@.price < 10)].title"),
    })
    .meta({
      examples: [
        {
          json: {
            store: {
              book: [
                { title: "A", price: 8 },
                { title: "B", price: 12 },
              ],
            },
          },
          path: "$.store.book[?(@.price < 10)].title",
        },
      ],
    }),
  output: z.object({
    values: z.array(z.unknown()).describe("The selected values, in document order."),
    paths: z.array(z.string()).describe("The JSONPath of each value."),
  }),
});

const table = z
  .array(z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])))
  .max(100_000);

export const sqlQuery = defineTool({
  name: "sql-query",
  aliases: ["sql", "query-csv"],
  title: "SQL over JSON or CSV",
  description:
    "Run SQLite SQL over tables you send as JSON rows or CSV (SQLite compiled to WebAssembly, in memory, no file access).",
  cost: 3,
  category: "data",
  tags: ["sql", "sqlite", "query", "csv", "aggregate", "group by", "join"],
  pool: "heavy",
  timeoutMs: 20_000,
  input: z
    .strictObject({
      query: z
        .string()
        .min(1)
        .max(100_000)
        .describe("SQL statements; the result of the last one is returned."),
      tables: z
        .record(
          z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, "a plain identifier"),
          z.union([table, z.string().max(MAX_TEXT_CHARS)]),
        )
        .default({})
        .describe("Tables by name: an array of row objects, or CSV text with a header row."),
    })
    .meta({
      examples: [
        {
          query:
            "SELECT region, SUM(units) AS units FROM sales GROUP BY region ORDER BY units DESC",
          tables: {
            sales: [
              { region: "North", units: 120 },
              { region: "South", units: 80 },
              { region: "North", units: 30 },
            ],
          },
        },
      ],
    }),
  output: z.object({
    columns: z.array(z.string()).describe("The result's column names."),
    rows: z
      .array(z.record(z.string(), z.unknown()))
      .describe(
        "The result rows as objects (at most 10,000, and 32 MB as JSON); a BLOB value as base64 text, an integer beyond ±2^53 as decimal text.",
      ),
    row_count: z.number().int().describe("How many rows the result has."),
  }),
});

export const mathEvaluate = defineTool({
  name: "math-evaluate",
  aliases: ["math", "calculate", "calculator"],
  title: "Evaluate math",
  description:
    "Evaluate math expressions with variables, functions, units, matrices, complex numbers and big numbers (math.js, in a restricted scope; a function that builds a matrix makes at most 1,000,000 elements).",
  cost: 1,
  category: "data",
  tags: ["calculator", "arithmetic", "algebra", "expression", "statistics", "mathjs"],
  // Heavy: an expression can ask for a huge matrix; the pool's memory limit stops it.
  pool: "heavy",
  timeoutMs: 15_000,
  input: z
    .strictObject({
      expression: z
        .union([
          z.string().min(1).max(10_000),
          z.array(z.string().min(1).max(10_000)).min(1).max(100),
        ])
        .describe("An expression, or several evaluated in order sharing variables."),
      scope: z.record(z.string(), z.number()).default({}).describe("Variables and their values."),
      precision: z
        .number()
        .int()
        .min(1)
        .max(64)
        .default(14)
        .describe("Significant digits in the formatted result."),
    })
    .meta({ examples: [{ expression: "sqrt(a^2 + b^2) * 2 cm to inch", scope: { a: 3, b: 4 } }] }),
  output: z.object({
    result: z.string().describe("The last expression's value, formatted."),
    value: z.number().nullable().describe("The value as a number, when it is a plain number."),
    results: z.array(z.string()).describe("Every expression's value, formatted, in order."),
  }),
});

export const dateParse = defineTool({
  name: "date-parse",
  aliases: ["parse-date", "natural-date"],
  title: "Parse dates in natural language",
  description:
    'Find and parse dates and times written in English ("next Friday at 5pm", "in 3 days", "March 3 - 5") relative to a reference date (chrono-node).',
  cost: 1,
  category: "data",
  tags: ["date", "time", "natural language", "parse", "schedule", "chrono"],
  pool: "heavy",
  timeoutMs: 10_000,
  input: z
    .strictObject({
      text: z.string().min(1).max(100_000).describe("Text containing dates."),
      reference: z.iso
        .datetime({ offset: true })
        .optional()
        .describe(
          "The 'now' that relative dates count from (ISO 8601); the server's time if omitted.",
        ),
      timezone_offset_minutes: z
        .number()
        .int()
        .min(-840)
        .max(840)
        .default(0)
        .describe("The writer's UTC offset in minutes, for dates without one."),
      forward_date: z
        .boolean()
        .default(false)
        .describe('Read ambiguous dates as the next occurrence ("Friday" = next Friday).'),
    })
    .meta({
      examples: [
        {
          text: "Let's meet next Friday at 5pm, or on March 3 2027 at noon.",
          reference: "2026-11-22T10:00:00Z",
        },
      ],
    }),
  output: z.object({
    dates: z
      .array(
        z.object({
          text: z.string().describe("The words that were read as a date."),
          index: z.number().int().describe("Their character offset."),
          start: z.string().describe("The start, ISO 8601 UTC."),
          end: z.string().nullable().describe("The end of a range, ISO 8601 UTC."),
          certain: z
            .array(z.string())
            .describe("The components the text stated (the rest were implied)."),
        }),
      )
      .describe("Each date found, in order."),
  }),
});

export const cronExplain = defineTool({
  name: "cron-explain",
  aliases: ["cron"],
  title: "Explain a cron expression",
  description:
    "Describe a cron expression in English (cronstrue) and list its next run times in a time zone (cron-parser).",
  cost: 1,
  category: "data",
  tags: ["cron", "crontab", "schedule", "next run", "job"],
  pool: "general",
  timeoutMs: 10_000,
  input: z
    .strictObject({
      expression: z
        .string()
        .min(1)
        .max(200)
        .describe("A cron expression with 5 fields (or 6 with seconds)."),
      timezone: z.string().max(64).default("UTC").describe("IANA time zone the schedule runs in."),
      count: z
        .number()
        .int()
        .min(0)
        .max(100)
        .default(5)
        .describe("How many next runs to list; they must fall within 50 years of `from`."),
      from: z.iso
        .datetime({ offset: true })
        .optional()
        .describe("List runs after this instant (ISO 8601); now if omitted."),
    })
    .meta({
      examples: [
        {
          expression: "30 9 * * 1-5",
          timezone: "Europe/Paris",
          count: 3,
          from: "2026-11-22T00:00:00Z",
        },
      ],
    }),
  output: z.object({
    description: z.string().describe("The schedule in English."),
    next_runs: z.array(z.string()).describe("The next run times, ISO 8601 with offset."),
  }),
});
