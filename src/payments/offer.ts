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
}

/** `extensions`: the v2 extensions the resource declares (bazaar discovery, payment-identifier). */
export function offerFor(
  x402: X402Config,
  priceAtomic: bigint,
  resource: string,
  description: string,
  extensions?: Record<string, unknown>,
): Offer {
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
      ...(extensions ? { extensions } : {}),
    },
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
    headers: { "PAYMENT-REQUIRED": encodeHeader({ ...offer.v2, error: message }) },
  });
}
