import type { Config } from "../config.js";
import { ApiError, type ErrorCode } from "../http/errors.js";
import { encodeHeader, type RequirementsV2 } from "./wire.js";

type X402Config = NonNullable<Config["x402"]>;

/**
 * What a resource costs, offered in both protocol generations at once: one "exact" requirement
 * per enabled network, the price in USDC atomic units, the token and its EIP-712 name/version.
 */
export interface Offer {
  v1: Record<string, unknown>[];
  v2: {
    x402Version: 2;
    error?: string;
    resource: { url: string; description: string; mimeType: string };
    accepts: RequirementsV2[];
    extensions?: Record<string, unknown>;
  };
  /** Smaller versions of `v2.extensions`, fullest first, for a 402 header over its budget. */
  smallerExtensions?: readonly Record<string, unknown>[];
}

/**
 * The budget of a 402's `PAYMENT-REQUIRED` header, encoded: a reverse proxy reads an answer's
 * headers into one buffer, 4 KiB by default where memory pages are (nginx's `proxy_buffer_size`
 * on x86-64 Linux), or refuses the answer (502); the 402's other headers take some 700 bytes.
 * The v2 client echoes the offer's extensions in `PAYMENT-SIGNATURE`, which stays well under the
 * gateway's own 16 KiB for request headers.
 */
export const PAYMENT_REQUIRED_BUDGET = 3072;

/**
 * `extensions`: the v2 extensions the resource declares (bazaar discovery, payment-identifier),
 * fullest first: the 402's header carries the first that fits `PAYMENT_REQUIRED_BUDGET`.
 */
export function offerFor(
  x402: X402Config,
  priceAtomic: bigint,
  resource: string,
  description: string,
  extensions?: readonly Record<string, unknown>[],
): Offer {
  const [fullest, ...smaller] = extensions ?? [];
  return {
    v1: x402.networks.map((n) => ({
      scheme: "exact",
      network: n.name,
      maxAmountRequired: priceAtomic.toString(),
      resource,
      description,
      mimeType: "application/json",
      payTo: x402.payTo,
      maxTimeoutSeconds: x402.maxTimeoutSeconds,
      asset: n.usdc.address,
      extra: { name: n.usdc.name, version: n.usdc.version },
    })),
    v2: {
      x402Version: 2,
      resource: { url: resource, description, mimeType: "application/json" },
      accepts: x402.networks.map((n) => ({
        scheme: "exact",
        network: n.caip2,
        amount: priceAtomic.toString(),
        asset: n.usdc.address,
        payTo: x402.payTo,
        maxTimeoutSeconds: x402.maxTimeoutSeconds,
        extra: { name: n.usdc.name, version: n.usdc.version },
      })),
      ...(fullest ? { extensions: fullest } : {}),
    },
    ...(smaller.length > 0 ? { smallerExtensions: smaller } : {}),
  };
}

/**
 * A 402 that offers payment: the v1 body (`x402Version`, `accepts`) beside the API's one error
 * shape, and the v2 `PAYMENT-REQUIRED` header. `Cache-Control: no-store` is set on every answer.
 */
export function paymentChallenge(
  code: ErrorCode,
  message: string,
  offer: Offer,
  details?: Record<string, unknown>,
): ApiError {
  return new ApiError(code, message, {
    ...(details ? { details } : {}),
    top: { x402Version: 1, accepts: offer.v1 },
    headers: { "PAYMENT-REQUIRED": paymentRequiredHeader(offer, message) },
  });
}

/** The offer with the fullest of its extensions that keeps the header within its budget. */
function paymentRequiredHeader(offer: Offer, message: string): string {
  let encoded = encodeHeader({ ...offer.v2, error: message });
  for (const extensions of offer.smallerExtensions ?? []) {
    if (encoded.length <= PAYMENT_REQUIRED_BUDGET) break;
    encoded = encodeHeader({ ...offer.v2, extensions, error: message });
  }
  return encoded;
}
