import { TIERS, type TierName } from "../accounts/tiers.js";
import { planOutcome } from "../credits/rules.js";
import { ApiError } from "../http/errors.js";
import { tierLimits } from "../store/index.js";
import type { AccountRecord } from "../store/types.js";
import { PLANS, type PlanName } from "./price-list.js";

/**
 * Whether the account may buy a plan now, by the one rule the top-up applies when the payment is
 * credited (planOutcome in src/credits/rules.ts, top-up.lua's twin): the purchase route refuses
 * what it refuses before any payment, and the dashboard's Plan page offers only what it allows,
 * so the page never shows a button the API answers 409.
 */
export type PlanAvailability =
  | { purchasable: true; type: "subscription" | "renewal" }
  | {
      purchasable: false;
      /** `higher_tier`: the plan would lower the tier; `open_ended`: it would put an end to this tier held without one (an operator's grant). */
      why: "higher_tier" | "open_ended";
      held: TierName;
    };

export function planAvailability(
  account: Pick<AccountRecord, "tier" | "planExpiresAt">,
  plan: PlanName,
  now: number,
): PlanAvailability {
  const type = planOutcome(account, PLANS[plan].tier, tierLimits(), now);
  if (type !== "one_time") return { purchasable: true, type };
  return {
    purchasable: false,
    why: account.tier === PLANS[plan].tier ? "open_ended" : "higher_tier",
    held: account.tier,
  };
}

/** 409 `plan_not_purchasable` for a plan `planAvailability` refuses, saying why. */
export function notPurchasable(
  refusal: Extract<PlanAvailability, { purchasable: false }>,
  plan: PlanName,
): ApiError {
  const held = TIERS[refusal.held].label;
  const why =
    refusal.why === "open_ended"
      ? `the account already has the ${held} tier without an end date; the plan would put an end to it`
      : `the account has the ${held} tier, higher than the plan's; the plan would lower it`;
  return new ApiError("plan_not_purchasable", `The ${plan} plan cannot be bought: ${why}.`, {
    param: "plan",
  });
}
