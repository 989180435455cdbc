import type { IncomingHttpHeaders } from "node:http";
import { z } from "zod";
import { normaliseHex, type Hex } from "../lib/hex.js";

/**
 * The x402 wire formats, both generations (x402 `specs/`, v1 and v2): v1 sends the payment in `X-PAYMENT`
 * and answers `X-PAYMENT-RESPONSE`; v2 sends `PAYMENT-SIGNATURE`, answers `PAYMENT-RESPONSE`,
 * and carries the chosen requirement in `accepted`. Headers are standard base64 of UTF-8 JSON.
 * Every hex value (addresses, the nonce, the signature) is normalised to lower case here, once,
 * so nothing downstream can take two spellings of the same bytes for different values.
 */
const address = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/)
  .transform((v): Hex => normaliseHex(v));
/** A uint256 in decimal: anything larger could never be signed or sent, and must not reach the chain client. */
const UINT = /^\d{1,78}$/;
const uint = z
  .string()
  .refine(
    (v) => UINT.test(v) && BigInt(v) < 2n ** 256n,
    "must be a decimal integer below 2^256 (a uint256)",
  )
  // One spelling per number (no leading zeros), as hex is lower-cased: a retry that spells the
  // signed value another way is the same authorization.
  .transform((v) => BigInt(v).toString());
/** Whole seconds: a fraction has no meaning on chain (block times are whole seconds). */
const seconds = z.number().int().nonnegative();
/** secp256k1's group order: r and s of a real signature lie in [1, N). */
export const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
/**
 * Bytes in hex. A 65-byte one is an EOA signature and must be well formed (r and s in [1, N),
 * v one of 0, 1, 27, 28) — checked here so a malformed one is refused as such, never thrown
 * inside the chain client; any other length is a smart wallet's, judged by the wallet itself.
 */
const HEX_BYTES = /^0x([0-9a-fA-F]{2})+$/;
export function wellFormedSignature(sig: string): boolean {
  if (!HEX_BYTES.test(sig)) return false;
  if (sig.length !== 132) return true;
  const r = BigInt(`0x${sig.slice(2, 66)}`);
  const s = BigInt(`0x${sig.slice(66, 130)}`);
  const v = parseInt(sig.slice(130), 16);
  return r > 0n && r < SECP256K1_N && s > 0n && s < SECP256K1_N && [0, 1, 27, 28].includes(v);
}
const signature = z
  .string()
  .refine(
    wellFormedSignature,
    "must be hex bytes; 65 of them must be a well-formed signature (r and s in [1, N), v 0, 1, 27 or 28)",
  )
  .transform((v): Hex => normaliseHex(v));

export const authorizationSchema = z.object({
  from: address,
  to: address,
  value: uint,
  validAfter: uint,
  validBefore: uint,
  nonce: z
    .string()
    .regex(/^0x[0-9a-fA-F]{64}$/)
    .transform((v): Hex => normaliseHex(v)),
});
const exactPayload = z.object({ signature, authorization: authorizationSchema });

export const requirementsV2Schema = z.object({
  scheme: z.string(),
  network: z.string(),
  asset: address,
  amount: uint,
  payTo: address,
  maxTimeoutSeconds: seconds,
  extra: z.record(z.string(), z.unknown()),
});
export type RequirementsV2 = z.infer<typeof requirementsV2Schema>;

const paymentV1 = z.object({
  x402Version: z.literal(1),
  scheme: z.string(),
  network: z.string(),
  payload: exactPayload,
});
const paymentV2 = z.object({
  x402Version: z.literal(2),
  accepted: requirementsV2Schema,
  payload: exactPayload,
  // The resource the client was offered (ResourceInfo); only its `url` is read, and only to be
  // compared with the resource paid for here. Anything else in it, or a resource that is not an
  // object (older drafts), is left alone.
  resource: z.unknown().optional(),
  // null is "none", as the x402 reference reads a falsy `extensions`.
  extensions: z.record(z.string(), z.unknown()).nullish(),
});

export type Authorization = z.infer<typeof authorizationSchema>;
export type PaymentHeader =
  | { version: 1; scheme: string; network: string; signature: Hex; authorization: Authorization }
  | {
      version: 2;
      accepted: RequirementsV2;
      signature: Hex;
      authorization: Authorization;
      extensions: Record<string, unknown>;
      /** The URL of the resource the payload says it pays for (`resource.url`), when it names one. */
      resource: string | null;
    };

export const encodeHeader = (value: unknown) =>
  Buffer.from(JSON.stringify(value), "utf8").toString("base64");

/**
 * Whether a request carries an x402 payment: either generation's header, not empty. An empty
 * header is no payment (a client that sends every header its description lists, blank): a keyed
 * call with one is an ordinary keyed call, not an unpaid x402 one.
 */
export const carriesPayment = (headers: IncomingHttpHeaders): boolean =>
  Boolean(headers["payment-signature"] || headers["x-payment"]);

/** The payment a request carries, null when it carries none; throws on a malformed header. */
export function readPaymentHeader(get: (name: string) => string | undefined): PaymentHeader | null {
  const v2 = get("payment-signature") || undefined;
  const v1 = get("x-payment");
  const raw = v2 ?? v1;
  if (!raw) return null;
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(raw, "base64").toString("utf8"));
  } catch {
    throw new Error(`${v2 ? "PAYMENT-SIGNATURE" : "X-PAYMENT"} is not base64 of JSON`);
  }
  return readPaymentPayload(v2 ? 2 : 1, json);
}

/** A payment payload (decoded JSON) of the given generation; throws naming the first wrong field. */
export function readPaymentPayload(version: 1 | 2, json: unknown): PaymentHeader {
  if (version === 2) {
    const p = parsed(paymentV2, json);
    return {
      version: 2,
      accepted: p.accepted,
      signature: p.payload.signature,
      authorization: p.payload.authorization,
      extensions: p.extensions ?? {},
      resource: payloadResource(json),
    };
  }
  const p = parsed(paymentV1, json);
  return {
    version: 1,
    scheme: p.scheme,
    network: p.network,
    signature: p.payload.signature,
    authorization: p.payload.authorization,
  };
}

/** A v1 payment requirement (an element of `accepts`), as a resource server sends it to a facilitator. */
export const requirementsV1Schema = z.object({
  scheme: z.string(),
  network: z.string(),
  maxAmountRequired: uint,
  resource: z.string(),
  description: z.string().optional(),
  mimeType: z.string().optional(),
  payTo: address,
  maxTimeoutSeconds: seconds,
  asset: address,
  extra: z.record(z.string(), z.unknown()).nullish(),
});
export type RequirementsV1 = z.infer<typeof requirementsV1Schema>;

/** The v2 payload's `resource` (the paid URL), when it names one. */
export function payloadResource(json: unknown): string | null {
  const resource = (json as { resource?: { url?: unknown } } | null)?.resource;
  return typeof resource?.url === "string" ? resource.url : null;
}

export { parsed as parsedOrThrow };

/** The x402 v2 `payment-identifier` extension: the client's own id for this payment, for idempotency. */
export const PAYMENT_IDENTIFIER = "payment-identifier";
const paymentIdentifierSchema = z
  .object({
    info: z
      .object({
        id: z
          .string()
          .regex(/^[a-zA-Z0-9_-]{16,128}$/)
          .optional(),
      })
      .loose(),
  })
  .loose();

/**
 * The payment's client-chosen identifier, null when it sends none; throws on a malformed one. As
 * in the x402 reference (`extractAndValidatePaymentIdentifier`), an extension that is absent or
 * falsy (`null`, as some clients write "none") names no identifier.
 */
export function paymentIdentifier(header: PaymentHeader): string | null {
  if (header.version !== 2 || !header.extensions[PAYMENT_IDENTIFIER]) return null;
  return paymentIdentifierSchema.parse(header.extensions[PAYMENT_IDENTIFIER]).info.id ?? null;
}

/** The payload, or an error naming the first field that is wrong (the client reads it in `reason`). */
function parsed<T>(schema: z.ZodType<T>, json: unknown): T {
  const result = schema.safeParse(json);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  throw new Error(`${issue.path.join(".") || "the payment"}: ${issue.message}`);
}
