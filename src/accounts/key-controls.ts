import { z } from "zod";
import { ApiError } from "../http/errors.js";
import type { Services } from "../services.js";
import type { KeyUpdate } from "../store/types.js";
import { LATEST_ISO_INSTANT } from "../lib/iso-years.js";

/**
 * Account controls on a key (docs/decisions.md, "Account controls"): an expiry time, the tools it
 * may call, its own credit budget per UTC day or calendar month. The admission script enforces
 * them; this module is their API side — the request fields (shared by creating and updating a
 * key) and their checks against the catalogue and the clock.
 */
const MAX_ALLOWED_TOOLS = 64;
export const MAX_KEY_BUDGET_CREDITS = 1_000_000_000;
/** One sentence for every way a budget's credits can be wrong (zod's own were "Too big: expected number to be <=1000000000"). */
const budgetCredits = {
  error: "a key's budget is a whole number of credits from 1 to 1,000,000,000",
};

export const keyControlFields = {
  expires_at: z.iso
    .datetime({ offset: true })
    .nullable()
    .optional()
    .describe(
      "When the key stops working (ISO 8601, in the future, no later than 9999-12-31T23:59:59.999Z); null: never.",
    ),
  allowed_tools: z
    .array(z.string().trim().min(1).max(100))
    .min(1)
    .max(MAX_ALLOWED_TOOLS)
    .nullable()
    .optional()
    .describe(
      "The only tools the key may call (names or aliases; the account's own tools too); null: every tool.",
    ),
  budget: z
    .strictObject({
      credits: z
        .number(budgetCredits)
        .int(budgetCredits)
        .min(1, budgetCredits)
        .max(MAX_KEY_BUDGET_CREDITS, budgetCredits),
      period: z.enum(["day", "month"]),
    })
    .nullable()
    .optional()
    .describe(
      "The key's own credit budget per UTC day or calendar month (UTC): a call that would exceed it is refused with 402 key_budget_exceeded, uncharged. null: none.",
    ),
};

export type KeyControlInput = {
  expires_at?: string | null;
  allowed_tools?: string[] | null;
  budget?: { credits: number; period: "day" | "month" } | null;
};

/**
 * The controls as the store keeps them: tool names resolved to their canonical names (400
 * `unknown_tool_name` for one that names no tool the account can call), an expiry in the future
 * (422 otherwise). Fields left out stay out (an update leaves them as they are).
 */
export async function keyControlsFrom(
  services: Services,
  accountId: string,
  input: KeyControlInput,
  now = Date.now(),
): Promise<KeyUpdate> {
  const update: KeyUpdate = {};
  if (input.expires_at !== undefined) {
    const at = input.expires_at === null ? null : Date.parse(input.expires_at);
    if (at !== null && at <= now)
      throw new ApiError("validation_failed", "expires_at must lie in the future.", {
        param: "expires_at",
      });
    // An offset can carry 9999-12-31 past the year 9999, which an ISO string in Z (what the key
    // answers with) cannot write in four digits: `+010000-01-01T…`.
    if (at !== null && at > LATEST_ISO_INSTANT)
      throw new ApiError(
        "validation_failed",
        "expires_at must be no later than 9999-12-31T23:59:59.999Z.",
        { param: "expires_at" },
      );
    update.expiresAt = at;
  }
  if (input.allowed_tools !== undefined)
    update.allowedTools =
      input.allowed_tools === null
        ? null
        : await canonicalToolNames(services, accountId, input.allowed_tools);
  if (input.budget !== undefined)
    update.budget = input.budget === null ? null : { ...input.budget };
  return update;
}

async function canonicalToolNames(
  services: Services,
  accountId: string,
  names: string[],
): Promise<string[]> {
  const canonical = new Set<string>();
  for (const [i, name] of names.entries()) {
    const known =
      services.upstream.findPublic(name)?.name ??
      (await services.store.getCustomTool(accountId, name))?.name;
    if (!known)
      throw new ApiError(
        "unknown_tool_name",
        `No tool named ${name}: allowed_tools takes names from GET /v1/tools (or the account's own tools).`,
        { param: `allowed_tools.${i}` },
      );
    canonical.add(known);
  }
  return [...canonical];
}
