import { ApiError } from "../http/errors.js";

/**
 * Tiers are data (decisions.md D3, D4). Every rule that depends on a tier reads it here:
 * rate limits, monthly credits, and the features a tier unlocks.
 */
/** Features that are built: the ones an account's `features` lists and `requireFeature` checks. */
export const FEATURES = [
  "tools",
  "x402",
  "mcp",
  "webhooks",
  "priority_queue",
  "facilitator",
  "custom_endpoints",
  "dedicated_workers",
  "analytics",
  "sso",
] as const;
export type Feature = (typeof FEATURES)[number];
/**
 * Features the specification's tier table promises that are not built yet. They are shown apart,
 * as `features_coming`, so no account is told it has something that does not exist; a feature
 * moves to FEATURES in the change that builds it.
 */
export const COMING_FEATURES: readonly string[] = [];
export type ComingFeature = (typeof COMING_FEATURES)[number];

export const TIER_NAMES = ["free", "starter", "pro", "business"] as const;
export type TierName = (typeof TIER_NAMES)[number];

export interface Tier {
  name: TierName;
  label: string;
  requestsPerMinute: number;
  /** Free: the balance is topped up to this at each monthly period. Paid tiers: added per paid period. null = custom. */
  monthlyCredits: number | null;
  priceUsdPerMonth: string | null;
  /** Higher is served first when a worker pool is saturated. */
  priority: number;
  features: readonly Feature[];
  /** What the tier will include once built (see COMING_FEATURES). */
  coming: readonly ComingFeature[];
}

const FREE_FEATURES = ["tools", "x402"] as const;
const STARTER_FEATURES = [...FREE_FEATURES, "mcp"] as const;
const PRO_FEATURES = [...STARTER_FEATURES, "webhooks", "priority_queue", "analytics"] as const;
/** An operator enables the x402 facilitator for another tier by adding "facilitator" to its list here. */
const BUSINESS_FEATURES = [
  ...PRO_FEATURES,
  "facilitator",
  "custom_endpoints",
  "dedicated_workers",
  "sso",
] as const;
const BUSINESS_COMING: readonly string[] = [];

export const TIERS: Record<TierName, Tier> = {
  free: {
    name: "free",
    label: "Free",
    requestsPerMinute: 60,
    monthlyCredits: 500,
    priceUsdPerMonth: "0.00",
    priority: 0,
    features: FREE_FEATURES,
    coming: [],
  },
  starter: {
    name: "starter",
    label: "Starter",
    requestsPerMinute: 300,
    monthlyCredits: 10_000,
    priceUsdPerMonth: "19.00",
    priority: 1,
    features: STARTER_FEATURES,
    coming: [],
  },
  pro: {
    name: "pro",
    label: "Pro",
    requestsPerMinute: 300,
    monthlyCredits: 30_000,
    priceUsdPerMonth: "49.00",
    priority: 2,
    features: PRO_FEATURES,
    coming: [],
  },
  business: {
    name: "business",
    label: "Business",
    requestsPerMinute: 1_000,
    monthlyCredits: null,
    priceUsdPerMonth: null,
    priority: 3,
    features: BUSINESS_FEATURES,
    coming: BUSINESS_COMING,
  },
};

/** Sign-up grants (decisions.md D3): 25 at once, 75 more when the e-mail is verified. */
export const SIGNUP_CREDITS = 25;
export const EMAIL_VERIFIED_CREDITS = 75;
/** Length of a monthly period, for the Free allowance and paid periods. */
export const PERIOD_MS = 30 * 24 * 60 * 60 * 1000;

/** 403 `feature_not_in_tier`, naming the first tier that has the feature. */
export function requireFeature(tier: TierName, feature: Feature): void {
  if (TIERS[tier].features.includes(feature)) return;
  const lowest = TIER_NAMES.map((n) => TIERS[n]).find((t) => t.features.includes(feature));
  throw new ApiError(
    "feature_not_in_tier",
    `The ${feature} feature is not included in the ${TIERS[tier].label} tier; it is available from the ${lowest?.label} tier.`,
    { details: { required_tier: lowest?.name } },
  );
}
