import { z } from "zod";
import {
  CALENDAR_WINDOWS,
  controlWindow,
  type AccountRecord,
  isExpired,
  isRevoked,
  type KeyRecord,
  type LedgerEntry,
} from "../store/types.js";
import { FEATURES, TIERS, TIER_NAMES } from "./tiers.js";

/**
 * How accounts, keys and ledger entries are shown. The zod schemas document the answers
 * (OpenAPI); the functions build them. Never a key's hash or secret.
 */
const isoOrNull = z.iso.datetime().nullable();

export const accountViewSchema = z.object({
  id: z.string(),
  email: z.string().nullable(),
  email_verified: z.boolean(),
  tier: z.enum(TIER_NAMES),
  credits: z.number().int(),
  credits_low_threshold: z
    .number()
    .int()
    .describe("credits.low fires when a call leaves the balance below this."),
  rate_limit_per_minute: z.number().int(),
  features: z.array(z.enum(FEATURES)).describe("What the tier includes that is built and running."),
  features_coming: z
    .array(z.string())
    .describe("What the tier will include, not built yet (announced, not served)."),
  next_allowance_at: isoOrNull.describe("Free tier: when the balance is next topped up to 500."),
  plan_expires_at: isoOrNull.describe(
    "A paid plan: when its period ends (renew before, or the tier falls back to Free).",
  ),
  created_at: isoOrNull,
  spend: z
    .object({
      period: z.literal("month"),
      period_start: z.iso.datetime(),
      credits: z.number().int(),
    })
    .describe("Credits kept by calls this calendar month (UTC), net of refunds."),
  spend_alert: z
    .object({ credits: z.number().int() })
    .nullable()
    .describe(
      "spend.threshold_reached fires once a month when the month's spend reaches this (null: no alert).",
    ),
});

export const keyBudgetViewSchema = z.object({
  credits: z.number().int(),
  period: z.enum(["day", "month"]),
  spent: z.number().int().describe("Credits the key's calls kept in the current window."),
  resets_at: z.iso
    .datetime()
    .describe("When the window ends: a UTC day, or a calendar month (UTC)."),
});

export const keyViewSchema = z.object({
  id: z.string(),
  name: z.string().nullable(),
  prefix: z.string(),
  last4: z.string(),
  status: z.enum(["active", "expiring", "revoked", "expired"]),
  created_at: isoOrNull,
  revoked_at: isoOrNull,
  last_used_at: isoOrNull.describe(
    "When the key last authenticated a request, to the minute (null: never).",
  ),
  expires_at: isoOrNull.describe("When the key stops working (null: never)."),
  allowed_tools: z
    .array(z.string())
    .nullable()
    .describe("The only tools the key may call (null: every tool)."),
  budget: keyBudgetViewSchema.nullable().describe("The key's own credit budget (null: none)."),
});

/** A key as issued: the full key is in this one answer and never again. */
export const issuedKeyViewSchema = keyViewSchema.extend({
  key: z.string().describe("The full key: shown in this answer only."),
});

export const ledgerEntryViewSchema = z.object({
  id: z.string(),
  at: z.iso.datetime(),
  kind: z.enum(["grant", "purchase", "allowance", "debit", "refund"]),
  amount: z.number().int().describe("Signed: debits are negative."),
  balance: z.number().int(),
  reason: z.string(),
  request_id: z.string(),
  tool: z.string().nullable(),
  key_id: z
    .string()
    .nullable()
    .describe("The API key whose call made the entry (debits and their refunds)."),
});

export const listOf = <T extends z.ZodType>(item: T) =>
  z.object({
    object: z.literal("list"),
    data: z.array(item),
    next_cursor: z.string().nullable().optional(),
  });

const iso = (ms: number | null) => (ms === null || ms === 0 ? null : new Date(ms).toISOString());

export function keyView(key: KeyRecord, now = Date.now()): z.infer<typeof keyViewSchema> {
  const status = isRevoked(key, now)
    ? "revoked"
    : isExpired(key, now)
      ? "expired"
      : key.revokedAt === null
        ? "active"
        : "expiring";
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    last4: key.last4,
    status,
    created_at: iso(key.createdAt),
    revoked_at: iso(key.revokedAt),
    last_used_at: iso(key.lastUsedAt ?? null),
    expires_at: iso(key.expiresAt ?? null),
    allowed_tools: key.allowedTools ? [...key.allowedTools] : null,
    budget: key.budget
      ? {
          credits: key.budget.credits,
          period: key.budget.period,
          spent: key.budgetSpent ?? 0,
          resets_at: new Date(
            controlWindow(now, key.budget.period, CALENDAR_WINDOWS).next,
          ).toISOString(),
        }
      : null,
  };
}

export function accountView(account: AccountRecord): z.infer<typeof accountViewSchema> {
  const tier = TIERS[account.tier];
  return {
    id: account.id,
    email: account.email,
    email_verified: account.emailVerified,
    tier: account.tier,
    credits: account.balance,
    credits_low_threshold: Math.ceil(account.reference / 5),
    rate_limit_per_minute: tier.requestsPerMinute,
    features: [...tier.features],
    features_coming: [...tier.coming],
    next_allowance_at: account.tier === "free" ? iso(account.allowanceAt) : null,
    plan_expires_at: iso(account.planExpiresAt),
    created_at: iso(account.createdAt),
    spend: spendView(account),
    spend_alert: account.spendAlert ? { credits: account.spendAlert.credits } : null,
  };
}

function spendView(account: AccountRecord, now = Date.now()) {
  const { start } = controlWindow(now, "month", CALENDAR_WINDOWS);
  return {
    period: "month" as const,
    period_start: new Date(start).toISOString(),
    credits: account.spend.windowStart === start ? account.spend.credits : 0,
  };
}

export function ledgerEntryView(e: LedgerEntry): z.infer<typeof ledgerEntryViewSchema> {
  return {
    id: e.id,
    at: new Date(e.at).toISOString(),
    kind: e.kind,
    amount: e.amount,
    balance: e.balance,
    reason: e.reason,
    request_id: e.requestId,
    tool: e.tool,
    key_id: e.keyId,
  };
}
