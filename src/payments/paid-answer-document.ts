import { z } from "zod";
import { schemaOf, type Json } from "../http/openapi.js";

/**
 * How a resource paid with x402 appears in the OpenAPI document: the payment headers a request
 * may carry, and the settlement receipt headers of its success answer (take-payment.ts sends
 * both names, whichever x402 version paid). The tool calls and the credit and plan purchases
 * share these.
 */

/** The settlement receipt (an x402 SettleResponse), base64 JSON in the receipt headers. */
export const paymentReceiptSchema = z.strictObject({
  success: z.literal(true),
  transaction: z.string().describe("The settlement's transaction hash (0x…)."),
  network: z
    .string()
    .describe(
      "The network paid on, as the payment named it: x402 v1 a name (base-sepolia), v2 CAIP-2 (eip155:84532).",
    ),
  payer: z.string().describe("The paying wallet's address."),
});
export type PaymentReceipt = z.infer<typeof paymentReceiptSchema>;

/** The request headers carrying a payment; `role` says what it is for (instead of a key, or beside it). */
export const paymentHeaderParameters = (role: string): Json[] => [
  {
    name: "X-PAYMENT",
    in: "header",
    required: false,
    schema: { type: "string" },
    description: `x402 v1 payment (base64 JSON), ${role}.`,
  },
  {
    name: "PAYMENT-SIGNATURE",
    in: "header",
    required: false,
    schema: { type: "string" },
    description: `x402 v2 payment (base64 JSON), ${role}.`,
  },
];

const receiptHeader = (): Json => ({
  type: "string",
  contentEncoding: "base64",
  contentMediaType: "application/json",
  contentSchema: schemaOf(paymentReceiptSchema, "output"),
});

/** The headers of an answer paid with x402: the same receipt under the v2 and the v1 name. */
export const paymentReceiptHeaders = (paidWhat: string): Record<string, Json> => ({
  "PAYMENT-RESPONSE": {
    schema: receiptHeader(),
    description: `${paidWhat}: the settlement receipt (x402 v2's name; base64 JSON).`,
  },
  "X-PAYMENT-RESPONSE": {
    schema: receiptHeader(),
    description:
      "The same receipt under its x402 v1 name, sent beside PAYMENT-RESPONSE whichever version paid.",
  },
});
