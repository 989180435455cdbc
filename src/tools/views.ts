import { z } from "zod";
import type { ToolDefinition } from "./definition.js";
import { priceOf } from "./pricing.js";

/**
 * JSON Schemas are derived from the zod definitions once per process and tool, when first asked
 * for (the tool list, a page, an x402 offer), not at start-up: deriving all of the catalogue's
 * took a quarter of the gateway's start-up time, and a keyed call never needs them.
 */
type JsonSchemas = NonNullable<ToolDefinition["jsonSchemas"]>;
const schemas = new WeakMap<ToolDefinition, JsonSchemas>();

/**
 * A JSON Schema without its `$schema` dialect line: OpenAPI 3.1 and MCP state the dialect
 * themselves. (`GET /v1/tools` keeps it, for validators that read it.)
 */
export function withoutDialect<T extends object>(schema: T): Omit<T, "$schema"> {
  const { $schema: _, ...rest } = schema as T & { $schema?: unknown };
  return rest;
}

export function jsonSchemasOf(tool: ToolDefinition): JsonSchemas {
  if (tool.jsonSchemas) return tool.jsonSchemas;
  let derived = schemas.get(tool);
  if (!derived) {
    derived = {
      input: z.toJSONSchema(tool.input, { io: "input" }),
      output: z.toJSONSchema(tool.output, { io: "output" }),
    };
    schemas.set(tool, derived);
  }
  return derived;
}

const jsonSchema = z.record(z.string(), z.unknown());
export const toolViewSchema = z.object({
  name: z.string(),
  aliases: z.array(z.string()),
  title: z.string(),
  description: z.string(),
  category: z.string(),
  tags: z.array(z.string()),
  price: z.object({
    credits: z.number().int(),
    usd: z.string(),
    usdc_atomic: z.string().describe("USDC atomic units (6 decimals)."),
  }),
  available: z.boolean(),
  unavailable_reason: z.string().optional(),
  endpoint: z.string(),
  private: z
    .boolean()
    .optional()
    .describe("true: the calling account's own custom tool, seen and called by its keys only."),
  input_schema: jsonSchema,
  output_schema: jsonSchema,
});

/** How `GET /v1/tools` shows a tool: everything an agent needs to call and pay for it. */
export function toolView(
  tool: ToolDefinition,
  creditPriceAtomic: bigint,
  unavailableReason: string | null,
): z.infer<typeof toolViewSchema> {
  const { input, output } = jsonSchemasOf(tool);
  return {
    name: tool.name,
    aliases: [...tool.aliases],
    title: tool.title,
    description: tool.description,
    category: tool.category,
    tags: [...tool.tags],
    price: priceOf(tool, creditPriceAtomic),
    available: unavailableReason === null,
    ...(unavailableReason ? { unavailable_reason: unavailableReason } : {}),
    endpoint: `/v1/tools/${tool.name}`,
    input_schema: input,
    output_schema: output,
  };
}
