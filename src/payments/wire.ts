import { z } from "zod";
import { normaliseHex, type Hex } from "../lib/hex.js";

/**
 * The x402 wire formats, both generations (DESIGN "Facts"): v1 sends the payment in `X-PAYMENT`
 * and answers `X-PAYMENT-RESPONSE`; v2 sends `PAYMENT-SIGNATURE`, answers `PAYMENT-RESPONSE`,
 * and carries the chosen requirement in `accepted`. Headers are standard base64 of UTF-8 JSON.
 */
const address = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/)
  .transform((v): Hex => normaliseHex(v));
/** A uint256 in decimal: at most 2^256 - 1 (a larger number is no value the token can take). */
const uint = z
  .string()
  .regex(/^\d{1,78}$/)
  .refine((v) => BigInt(v) < 2n ** 256n, "larger than a uint256");
const hex = z
  .string()
  .regex(/^0x(?:[0-9a-fA-F]{2})+$/)
  .transform((v): Hex => normaliseHex(v));

export const authorizationSchema = z.object({
  from: address,
  to: address,
  value: uint,
  validAfter: uint,
  validBefore: uint,
  nonce: z.string().regex(/^0x[0-9a-fA-F]{64}$/).transform((v): Hex => normaliseHex(v)),
});
const exactPayload = z.object({ signature: hex, authorization: authorizationSchema });

export const requirementsV2Schema = z.object({
  scheme: z.string(),
  network: z.string(),
  asset: address,
  amount: uint,
  payTo: address,
  maxTimeoutSeconds: z.number(),
  extra: z.record(z.string(), z.unknown()),
});
export type RequirementsV2 = z.infer<typeof requirementsV2Schema>;

const paymentV1 = z.object({ x402Version: z.literal(1), scheme: z.string(), network: z.string(), payload: exactPayload });
const paymentV2 = z.object({
  x402Version: z.literal(2),
  accepted: requirementsV2Schema,
  payload: exactPayload,
  resource: z.unknown().optional(),
  extensions: z.record(z.string(), z.unknown()).optional(),
});

export type Authorization = z.infer<typeof authorizationSchema>;
export type PaymentHeader =
  | { version: 1; scheme: string; network: string; signature: Hex; authorization: Authorization }
  | { version: 2; accepted: RequirementsV2; signature: Hex; authorization: Authorization; extensions: Record<string, unknown> };

export const encodeHeader = (value: unknown) => Buffer.from(JSON.stringify(value), "utf8").toString("base64");

/** The payment a request carries, null when it carries none; throws on a malformed header. */
export function readPaymentHeader(get: (name: string) => string | undefined): PaymentHeader | null {
  const v2 = get("payment-signature");
  const v1 = get("x-payment");
  const raw = v2 ?? v1;
  if (!raw) return null;
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(raw, "base64").toString("utf8"));
  } catch {
    throw new Error(`${v2 ? "PAYMENT-SIGNATURE" : "X-PAYMENT"} is not base64 of JSON`);
  }
  if (v2) {
    const p = paymentV2.parse(json);
    return { version: 2, accepted: p.accepted, signature: p.payload.signature, authorization: p.payload.authorization, extensions: p.extensions ?? {} };
  }
  const p = paymentV1.parse(json);
  return { version: 1, scheme: p.scheme, network: p.network, signature: p.payload.signature, authorization: p.payload.authorization };
}

/** The x402 v2 `payment-identifier` extension: the client's own id for this payment, for idempotency. */
export const PAYMENT_IDENTIFIER = "payment-identifier";
const paymentIdentifierSchema = z.object({ info: z.object({ id: z.string().regex(/^[a-zA-Z0-9_-]{16,128}$/).optional() }).loose() }).loose();

/** The payment's client-chosen identifier, null when it sends none; throws on a malformed one. */
export function paymentIdentifier(header: PaymentHeader): string | null {
  if (header.version !== 2 || header.extensions[PAYMENT_IDENTIFIER] === undefined) return null;
  return paymentIdentifierSchema.parse(header.extensions[PAYMENT_IDENTIFIER]).info.id ?? null;
}
