import { DEPLETED_MESSAGE, type EventData } from "../events/types.js";
import type { AccountRecord, PlanType, TierLimits } from "../store/types.js";

/**
 * The ledger rules of decisions.md D3/D5, for the in-memory store. The Redis store runs the same
 * rules in Lua (src/credits/lua/prelude.lua); the store contract suite holds both to the
 * same behaviour.
 */
export interface AlertState {
  balance: number;
  reference: number;
  lowArmed: boolean;
  depletedArmed: boolean;
}

/**
 * A top-up sets the reference level to the new balance and re-arms both alerts — unless it adds
 * nothing (a wallet account's opening entry) or pays for a single call (`rearm` false).
 */
export function applyTopUp(state: AlertState, amount: number, rearm = true): void {
  state.balance += amount;
  if (amount <= 0 || !rearm) return;
  state.reference = state.balance;
  state.lowArmed = true;
  state.depletedArmed = true;
}

/**
 * A refund gives `amount` back; lifting the balance back over an alert's line re-arms that alert,
 * so the refunded call's alert does not stand in for the next real one. Only on an account a
 * top-up has armed (reference > 0): a wallet's pay-per-call account has no alerts.
 */
export function applyRefund(state: AlertState, amount: number): void {
  state.balance += amount;
  if (state.reference <= 0) return;
  if (state.balance >= lowThreshold(state.reference)) state.lowArmed = true;
  if (state.balance > 0) state.depletedArmed = true;
}

/** The credit level below which `credits.low` fires: 20% of the reference level, rounded up. */
export function lowThreshold(reference: number): number {
  return Math.ceil(reference / 5);
}

export type DebitAlert =
  | { event: "credits.low"; data: EventData<"credits.low"> }
  | { event: "credits.depleted"; data: EventData<"credits.depleted"> };

/** Debits `cost` (the caller has checked the balance) and returns the alerts the debit fires. */
export function applyDebit(state: AlertState, cost: number, tool: string | null): DebitAlert[] {
  state.balance -= cost;
  const alerts: DebitAlert[] = [];
  const threshold = lowThreshold(state.reference);
  if (state.lowArmed && state.balance < threshold) {
    state.lowArmed = false;
    alerts.push({
      event: "credits.low",
      data: { credits_remaining: state.balance, tool_name: tool, threshold },
    });
  }
  if (state.depletedArmed && state.balance === 0) {
    state.depletedArmed = false;
    alerts.push({
      event: "credits.depleted",
      data: { credits_remaining: 0, tool_name: tool, message: DEPLETED_MESSAGE },
    });
  }
  return alerts;
}

/** Next due time of a monthly allowance that fell due at `dueAt`, skipping missed periods. */
export function nextAllowanceAt(dueAt: number, now: number, periodMs: number): number {
  return dueAt + periodMs * (Math.floor((now - dueAt) / periodMs) + 1);
}

/**
 * The paid time a plan bought over a lower one carries over, so an upgrade loses none of it: the
 * unused time's value at the held plan's price, as time at the new plan's price (20 days of
 * Starter at $19 add 7.75 days to Pro at $49). The credits each plan added are kept either way.
 * top-up.lua's carried_over_ms is its twin.
 */
export function carriedOverMs(
  account: Pick<AccountRecord, "tier" | "planExpiresAt">,
  planTier: string,
  tiers: TierLimits,
  now: number,
): number {
  if (account.tier === "free" || account.planExpiresAt <= now) return 0;
  const held = tiers[account.tier]?.priceCents ?? 0;
  const bought = tiers[planTier]?.priceCents ?? 0;
  if (held <= 0 || bought <= 0) return 0;
  return Math.floor(((account.planExpiresAt - now) * held) / bought);
}

/** Whether the account's paid plan period has ended unpaid at `now` (it then counts as Free). */
export const planLapsed = (
  account: Pick<AccountRecord, "tier" | "planExpiresAt">,
  now: number,
): boolean => account.tier !== "free" && account.planExpiresAt > 0 && now >= account.planExpiresAt;

/**
 * The account as its plan stands at `now`: a paid period that ended unpaid reads as Free. The
 * admission writes the fall back on the account's next keyed or paid request (prelude.lua and the
 * memory store); until then every read the stores give (a dashboard session, the webhook relay,
 * the account and admin APIs) sees what that request would, not the plan that ended: an account
 * used only from the dashboard kept Pro's analytics and webhooks.
 */
export function planInForce<T extends Pick<AccountRecord, "tier" | "planExpiresAt">>(
  account: T,
  now: number,
): T {
  return planLapsed(account, now) ? { ...account, tier: "free", planExpiresAt: 0 } : account;
}

/**
 * What buying a plan of `planTier` does to the account (top-up.lua's plan_outcome is its twin): a
 * `renewal` extends the period of the tier it holds, a `subscription` starts the plan now (with
 * the time a lower plan had left carried over: `carriedOverMs`). A plan never lowers the tier nor
 * puts an end to one held without an end date (an operator's): then only its credits are added
 * (`one_time`). A period already over counts as Free, as in the admission.
 */
export function planOutcome(
  account: Pick<AccountRecord, "tier" | "planExpiresAt">,
  planTier: string,
  tiers: TierLimits,
  now: number,
): PlanType {
  const held = planLapsed(account, now) ? "free" : account.tier;
  if (held === planTier) return account.planExpiresAt === 0 ? "one_time" : "renewal";
  return (tiers[held]?.rank ?? 0) > (tiers[planTier]?.rank ?? 0) ? "one_time" : "subscription";
}
