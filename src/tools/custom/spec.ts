import { z } from "zod";
import type { CustomToolRecord } from "../../store/types.js";
import { CATEGORIES, CUSTOM_CATEGORY, type Category, type ToolDefinition } from "../definition.js";

/**
 * What defines a tool that lives at someone else's HTTP endpoint — a Business account's custom
 * tool (POST /api/v1/custom-tools) or an operator's upstream tool (TOOLS_FILE) — in the API's
 * spelling. The same fields, validated by the same zod schema, so both are held to one rule.
 */
export const TOOL_NAME = /^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/;
/** Paths under /v1/tools that are not tools. */
export const RESERVED_TOOL_NAMES = new Set(["categories"]);
export const MAX_UPSTREAM_TIMEOUT_MS = 30_000;
export const MAX_UPSTREAM_PRICE_CREDITS = 100_000;

const objectSchema = z
  .record(z.string(), z.unknown())
  .refine(
    (schema) => schema.type === "object",
    'must describe a JSON object ("type": "object"), as MCP clients require',
  )
  .describe('A JSON Schema (draft 2020-12) with "type": "object" at its root.');

export const upstreamToolFields = {
  name: z
    .string()
    .regex(TOOL_NAME, "lower-case letters, digits and inner hyphens, at most 64 characters")
    .refine((name) => !RESERVED_TOOL_NAMES.has(name), "this name is reserved")
    .describe(
      "The tool's name: its path is /v1/tools/{name}. Must not be a catalogue tool's name or alias.",
    ),
  title: z.string().min(1).max(100).optional().describe("A short human title; default: the name."),
  description: z
    .string()
    .min(1)
    .max(2000)
    .describe("What the tool does, for people and models choosing a tool."),
  url: z
    .string()
    .max(2048)
    .describe(
      "The endpoint called with POST and the validated input as JSON: https (http only to loopback, in development).",
    ),
  input_schema: objectSchema,
  output_schema: objectSchema
    .optional()
    .describe(
      "A JSON Schema the endpoint's answer must match (a JSON object); default: any JSON object.",
    ),
  price_credits: z
    .number()
    .int()
    .min(1)
    .max(MAX_UPSTREAM_PRICE_CREDITS)
    .describe("Credits per successful call."),
  timeout_ms: z
    .number()
    .int()
    .min(100)
    .max(MAX_UPSTREAM_TIMEOUT_MS)
    .default(10_000)
    .describe("How long the endpoint may take; past it the call is 504 tool_timeout, refunded."),
};

/** The body of POST /api/v1/custom-tools. */
export const customToolBody = z.strictObject(upstreamToolFields);
export type CustomToolInput = z.infer<typeof customToolBody>;

/** One entry of TOOLS_FILE: the same fields, and what only an operator may set. */
export const operatorToolEntry = z.strictObject({
  ...upstreamToolFields,
  category: z.enum(Object.keys(CATEGORIES) as [keyof typeof CATEGORIES]).default("data"),
  tags: z.array(z.string().min(1).max(40)).max(20).default([]),
  /** Sent with every call (an upstream API's key); `${NAME}` is read from the environment at start-up. */
  headers: z.record(z.string().regex(/^[A-Za-z0-9-]+$/, "a header name"), z.string()).default({}),
});
export type OperatorToolEntry = z.infer<typeof operatorToolEntry>;

/**
 * A tool at an endpoint, as built into a definition: a stored custom tool's fields (less its
 * owner and date), and what operator tools add.
 */
export interface UpstreamToolSpec extends Omit<CustomToolRecord, "accountId" | "createdAt"> {
  category: string;
  tags: string[];
  headers: Record<string, string>;
  /** The environment's values put into `headers` (`${NAME}`): secrets, kept out of logs (config.ts `secretValues`). */
  secrets: string[];
}

export const ANY_OBJECT = { type: "object" } as const;

export function customToolRecord(
  accountId: string,
  input: CustomToolInput,
  url: string,
  sealedSecret: string,
  now = Date.now(),
): CustomToolRecord {
  return {
    sealedSecret,
    accountId,
    name: input.name,
    title: input.title ?? input.name,
    description: input.description,
    url,
    inputSchema: input.input_schema,
    outputSchema: input.output_schema ?? { ...ANY_OBJECT },
    priceCredits: input.price_credits,
    timeoutMs: input.timeout_ms,
    createdAt: now,
  };
}

/**
 * An operator tool as the OpenAPI document describes it, from its spec alone (the document is
 * built from configuration, before any registry exists). For documents only: its zod schemas
 * accept anything; calls go through the registry's definition (registry.ts).
 */
export const describedTool = (spec: UpstreamToolSpec): ToolDefinition => ({
  name: spec.name,
  aliases: [],
  title: spec.title,
  description: spec.description,
  cost: spec.priceCredits,
  category: spec.category as Category,
  tags: spec.tags,
  // Calls to someone else's endpoint are slow I/O, like the AI providers': they share that pool's gate.
  pool: "provider",
  timeoutMs: spec.timeoutMs,
  input: z.unknown(),
  output: z.unknown(),
  jsonSchemas: { input: spec.inputSchema, output: spec.outputSchema },
});

export const specOfRecord = (record: CustomToolRecord): UpstreamToolSpec => ({
  ...record,
  category: CUSTOM_CATEGORY,
  tags: [],
  headers: {},
  secrets: [],
});
