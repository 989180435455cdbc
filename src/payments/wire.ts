import { z } from "zod";

/**
 * The x402 wire formats, both generations (DESIGN "Facts"): v1 sends the payment in `X-PAYMENT`
 * and answers `X-PAYMENT-RESPONSE`; v2 sends `PAYMENT-SIGNATURE`, answers `PAYMENT-RESPONSE`,
 * and carries the chosen requirement in `accepted`. Headers are standard base64 of UTF-8 JSON.
 */
const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/);
const uint = z.string().regex(/^\d{1,78}$/);
const hex = z.string().regex(/^0x[0-9a-fA-F]*$/);

export const authorizationSchema = z.object({
  from: address,
  to: address,
  value: uint,
  validAfter: uint,
  validBefore: uint,
  nonce: z.string().regex(/^0x[0-9a-fA-F]{64}$/),
});
const exactPayload = z.object({ signature: hex, authorization: authorizationSchema });

export const requirementsV2Schema = z.object({
  scheme: z.string(),
  network: z.string(),
  asset: z.string(),
  amount: z.string(),
  payTo: z.string(),
  maxTimeoutSeconds: z.number(),
  extra: z.record(z.string(), z.unknown()),
});
export type RequirementsV2 = z.infer<typeof requirementsV2Schema>;

const paymentV1 = z.object({ x402Version: z.literal(1), scheme: z.string(), network: z.string(), payload: exactPayload });
const paymentV2 = z.object({ x402Version: z.literal(2), accepted: requirementsV2Schema, payload: exactPayload, resource: z.unknown().optional(), extensions: z.unknown().optional() });

export type Authorization = z.infer<typeof authorizationSchema>;
export type PaymentHeader =
  | { version: 1; scheme: string; network: string; signature: `0x${string}`; authorization: Authorization }
  | { version: 2; accepted: RequirementsV2; signature: `0x${string}`; authorization: Authorization };

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
    return { version: 2, accepted: p.accepted, signature: p.payload.signature as `0x${string}`, authorization: p.payload.authorization };
  }
  const p = paymentV1.parse(json);
  return { version: 1, scheme: p.scheme, network: p.network, signature: p.payload.signature as `0x${string}`, authorization: p.payload.authorization };
}
