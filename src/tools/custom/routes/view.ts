import { z } from "zod";
import type { CustomToolRecord } from "../../../store/types.js";
import { priceOf } from "../../pricing.js";

/** How the custom-tools API shows an account's tool (never another account's). */
export const customToolViewSchema = z.object({
  name: z.string(),
  title: z.string(),
  description: z.string(),
  url: z.string(),
  input_schema: z.record(z.string(), z.unknown()),
  output_schema: z.record(z.string(), z.unknown()),
  price: z.object({
    credits: z.number().int(),
    usd: z.string(),
    usdc_atomic: z.string().describe("USDC atomic units (6 decimals)."),
  }),
  timeout_ms: z.number().int(),
  endpoint: z
    .string()
    .describe("Where the account's keys call it: POST, or MCP tools/call by name."),
  created_at: z.string(),
  signed: z
    .boolean()
    .describe(
      "Whether calls to the endpoint are signed (Standard Webhooks headers, with the secret shown at registration). A tool registered before calls were signed is not: register it again to get a secret.",
    ),
});

export function customToolView(
  record: CustomToolRecord,
  creditPriceAtomic: bigint,
): z.infer<typeof customToolViewSchema> {
  return {
    name: record.name,
    title: record.title,
    description: record.description,
    url: record.url,
    input_schema: record.inputSchema,
    output_schema: record.outputSchema,
    price: priceOf({ cost: record.priceCredits }, creditPriceAtomic),
    timeout_ms: record.timeoutMs,
    endpoint: `/v1/tools/${record.name}`,
    created_at: new Date(record.createdAt).toISOString(),
    signed: record.sealedSecret !== undefined,
  };
}
