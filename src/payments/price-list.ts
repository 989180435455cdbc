import { TIERS } from "../accounts/tiers.js";
import { parseUsd } from "../lib/money.js";

/**
 * What can be bought with x402 besides single calls (decisions.md D8). Packs are credits at the credit
 * price; plans are the paid tiers at their monthly price, with their monthly credits, for one
 * period (30 days), renewed by paying again before it ends.
 */
export const PACKS = { "1k": 1_000, "5k": 5_000, "25k": 25_000 } as const;
export type PackName = keyof typeof PACKS;

export const PLANS = {
  starter: {
    tier: "starter",
    priceAtomic: parseUsd(TIERS.starter.priceUsdPerMonth!),
    credits: TIERS.starter.monthlyCredits!,
  },
  pro: {
    tier: "pro",
    priceAtomic: parseUsd(TIERS.pro.priceUsdPerMonth!),
    credits: TIERS.pro.monthlyCredits!,
  },
} as const;
export type PlanName = keyof typeof PLANS;
