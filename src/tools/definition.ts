import type { z } from "zod";

/**
 * A tool, as data. The same definition feeds request validation, `GET /v1/tools`, the OpenAPI
 * document and (later) the MCP tool list; the worker validates with the same schemas.
 */
/**
 * Where a tool runs: `general` for cheap in-process work, `provider` for calls to third-party
 * providers (slow, I/O bound), `heavy` for CPU- or memory-hungry work (OCR, charts, sandboxed
 * code, document parsing) that runs in its own limited thread pool so it cannot starve the rest.
 */
export type WorkerPool = "general" | "provider" | "heavy";

/** The catalogue's fixed categories, for `GET /v1/tools?category=` and `GET /v1/tools/categories`. */
export const CATEGORIES = {
  ai: "AI models through the configured OpenAI-compatible provider.",
  web: "Read the public web: pages, links and metadata, feeds, robots.txt, sitemaps, search.",
  documents: "PDF, Word, spreadsheets, CSV, XML, YAML, HTML and Markdown.",
  images: "Images, barcodes, QR codes, charts and OCR.",
  language:
    "Text analysis that runs locally: language, sentiment, entities, keywords, spelling, tokens.",
  data: "Query, validate, compute and convert data, dates and times.",
  code: "Format, run, test and compare code and text.",
  security: "Hashes, tokens, encodings, identifiers and IP networks.",
  geo: "Distances and time zones of coordinates.",
} as const;
/**
 * An account's own tools (src/tools/custom) are of this category: not one of CATEGORIES (an
 * operator's tool cannot take it), yet a `category=` filter and a line of `GET /v1/tools/categories`
 * for the account that has such tools, as it is the category they are listed with.
 */
export const CUSTOM_CATEGORY = "custom" as const;
export const CUSTOM_CATEGORY_DESCRIPTION =
  "Your account's own tools at your endpoints (Business tier): listed with your key only.";
/** What a `category` filter accepts: the catalogue's categories and `custom`. */
export type Category = keyof typeof CATEGORIES | typeof CUSTOM_CATEGORY;
export const FILTER_CATEGORIES = [...Object.keys(CATEGORIES), CUSTOM_CATEGORY] as unknown as [
  Category,
  ...Category[],
];

export interface ToolDefinition<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  name: string;
  aliases: readonly string[];
  title: string;
  description: string;
  /** Credits per successful call. */
  cost: number;
  category: Category;
  /** Words an agent might search for that are not already in the name or description. */
  tags: readonly string[];
  pool: WorkerPool;
  /** How long the gateway waits for the worker before answering 504 and refunding. */
  timeoutMs: number;
  /** The input schema carries a worked example (`examples`) that the tool answers with 200. */
  input: I;
  output: O;
  /** Tools defined by JSON Schema (src/tools/custom): the schemas as published, instead of zod's rendering. */
  jsonSchemas?: { input: Record<string, unknown>; output: Record<string, unknown> };
}

export function defineTool<I extends z.ZodType, O extends z.ZodType>(
  def: ToolDefinition<I, O>,
): ToolDefinition<I, O> {
  return def;
}
