/**
 * A 2xx answer checked against what the request answers before it is handed over as a typed
 * record: a JSON object holding the fields the Python library's records require
 * (sdk/python/src/toolgate/_types.py), a list's `data` a list of such objects. Anything else (a
 * proxy's page, another server at the base URL) is `invalid_response`, status 0, as in Python,
 * rather than an object that fails later, far from the call.
 */
import { ToolgateError } from "./errors.js";
import type { RawResult } from "./transport.js";

/** The fields each record must have (Python: the dataclass fields without a default). */
export const FIELDS = {
  tool: ["name"],
  category: ["name", "description", "tools"],
  account: [
    "id",
    "email",
    "email_verified",
    "tier",
    "credits",
    "credits_low_threshold",
    "rate_limit_per_minute",
    "features",
  ],
  apiKey: ["id", "name", "prefix", "last4", "status"],
  createdKey: ["key", "id", "name", "prefix", "last4", "status"],
  ledgerEntry: ["id", "at", "kind", "amount", "balance", "reason", "request_id"],
  event: ["id", "event", "timestamp", "data"],
  analyticsRow: ["bucket", "calls", "credits", "errors"],
  webhook: ["id", "url", "events", "created_at"],
  delivery: ["event_id", "event", "attempt", "at", "status", "duration_ms", "outcome"],
  sentTest: ["webhook_id", "event_id"],
  none: [],
} as const satisfies Record<string, readonly string[]>;

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value);

function wrongShape(result: RawResult, detail: string): ToolgateError {
  return new ToolgateError({
    status: 0,
    code: "invalid_response",
    message: `The gateway answered ${result.response.status} with JSON of the wrong shape (${detail}): is the base URL a Toolgate gateway's?`,
    requestId: result.response.headers.get("x-request-id") ?? undefined,
  });
}

function checkObject(
  result: RawResult,
  value: unknown,
  fields: readonly string[],
  where: string,
): void {
  if (!isObject(value)) throw wrongShape(result, `${where || "the answer"} is not an object`);
  for (const field of fields)
    if (!(field in value)) throw wrongShape(result, `${where ? `${where}: ` : ""}no "${field}"`);
}

/** The answer as one record with `fields`. */
export function record<T>(result: RawResult, fields: readonly string[]): T {
  checkObject(result, result.data, fields, "");
  return result.data as T;
}

/** The answer as an object whose `key` (default `data`) is a list of records with `fields`; the whole answer. */
export function listOf<T>(result: RawResult, fields: readonly string[], key = "data"): T {
  checkObject(result, result.data, [key], "");
  const items = (result.data as Record<string, unknown>)[key];
  if (!Array.isArray(items)) throw wrongShape(result, `"${key}" is not a list`);
  for (const [i, item] of items.entries()) checkObject(result, item, fields, `${key}[${i}]`);
  return result.data as T;
}
