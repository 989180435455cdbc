import { z } from "zod";
import { defineTool } from "../definition.js";

export const codeFormat = defineTool({
  name: "code-format",
  aliases: ["format-code", "prettier", "sql-format"],
  title: "Format code",
  description:
    "Format JavaScript, TypeScript, JSON, CSS, SCSS, Less, HTML, Vue, Markdown, YAML and GraphQL (Prettier), and SQL in many dialects (sql-formatter).",
  cost: 1,
  category: "code",
  tags: ["prettier", "beautify", "pretty print", "indent", "sql formatter", "lint"],
  pool: "heavy",
  timeoutMs: 15_000,
  input: z
    .strictObject({
      code: z.string().max(1_000_000).describe("The source to format."),
      language: z
        .enum([
          "javascript",
          "typescript",
          "json",
          "css",
          "scss",
          "less",
          "html",
          "vue",
          "markdown",
          "yaml",
          "graphql",
          "sql",
        ])
        .describe("The language of code."),
      sql_dialect: z
        .enum([
          "sql",
          "postgresql",
          "mysql",
          "sqlite",
          "bigquery",
          "snowflake",
          "tsql",
          "plsql",
          "redshift",
          "spark",
          "mariadb",
        ])
        .default("sql")
        .describe("The SQL dialect, for language sql."),
      indent: z.number().int().min(1).max(8).default(2).describe("Spaces per indentation level."),
      print_width: z
        .number()
        .int()
        .min(20)
        .max(400)
        .default(80)
        .describe("The line length Prettier aims for."),
    })
    .meta({ examples: [{ code: "const f=(a,b)=>{return a+b}\n", language: "javascript" }] }),
  output: z.object({
    code: z.string().describe("The formatted source."),
    changed: z.boolean().describe("Whether formatting changed anything."),
  }),
});

export const jsSandbox = defineTool({
  name: "js-sandbox",
  aliases: ["run-javascript", "code-run"],
  title: "Run JavaScript in a sandbox",
  description:
    "Run JavaScript (ES2023) in a QuickJS WebAssembly sandbox with no network, file system or host access, under CPU time and memory limits; returns the result and console output.",
  cost: 3,
  category: "code",
  tags: ["execute", "eval", "javascript", "code interpreter", "quickjs", "script"],
  pool: "heavy",
  timeoutMs: 15_000,
  input: z
    .strictObject({
      code: z
        .string()
        .min(1)
        .max(200_000)
        .describe("The script; the value of its last expression is the result."),
      input: z.unknown().optional().describe("A JSON value the script sees as the global `input`."),
      time_limit_ms: z.number().int().min(10).max(5000).default(1000).describe("CPU time allowed."),
      memory_limit_mb: z.number().int().min(1).max(64).default(32).describe("Memory allowed."),
    })
    .meta({
      examples: [
        {
          code: "const fib = n => n < 2 ? n : fib(n - 1) + fib(n - 2);\nconsole.log('computing');\n({ fib20: fib(20), doubled: input.map(x => x * 2) })",
          input: [1, 2, 3],
        },
      ],
    }),
  output: z.object({
    result: z.unknown().describe("The value of the last expression, as JSON (null for undefined)."),
    console: z.array(z.string()).describe("Lines written with console.log/info/warn/error."),
    error: z.string().nullable().describe("The error the script threw, if it threw."),
    duration_ms: z.number().int().describe("Wall time the script ran."),
  }),
});
