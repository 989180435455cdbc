import { ApiError } from "./errors.js";
import { headerOf } from "./exchange.js";
import type { IncomingMessage } from "node:http";

/** What an Idempotency-Key may be, wherever a route honours one (the tool call, an admin grant). */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * The request's Idempotency-Key, or null when it sent none; 422 `validation_failed` for a key that
 * is not 1 to 255 printable ASCII characters (never cut short: two keys are one only when equal).
 */
export function idempotencyKeyOf(req: Pick<IncomingMessage, "headers">): string | null {
  return checkedIdempotencyKey(headerOf(req, "idempotency-key") ?? null, "Idempotency-Key");
}

/** `key` when it is an Idempotency-Key (or null when none was sent); else 422 naming `param`. */
export function checkedIdempotencyKey(key: unknown, param: string): string | null {
  if (key === null || key === undefined) return null;
  if (typeof key !== "string" || !IDEMPOTENCY_KEY.test(key))
    throw new ApiError(
      "validation_failed",
      `${param} must be 1 to 255 printable ASCII characters.`,
      { param },
    );
  return key;
}

/** The Idempotency-Key header as an OpenAPI parameter, with what a repeat of it does. */
export function idempotencyKeyParameter(description: string): Record<string, unknown> {
  return {
    name: "Idempotency-Key",
    in: "header",
    required: false,
    schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x21-\\x7e]+$" },
    description,
  };
}
