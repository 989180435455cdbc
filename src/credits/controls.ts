import type { EventData } from "../events/types.js";
import { type ControlPeriod, controlWindow, type ControlWindows } from "../store/types.js";

/**
 * The account-control rules of the spend month, for the in-memory store (docs/decisions.md,
 * "Account controls"). The Redis store runs the same rules in Lua (`count_spend` and `unspend`
 * in src/credits/lua/prelude.lua); the store contract suite holds both to the same behaviour.
 */
export interface SpendState {
  id: string;
  spendAlert: { credits: number } | null;
  spend: { windowStart: number; credits: number };
  /** The month whose alert fired (its start, epoch ms); 0 = armed. */
  spendAlertedWindow: number;
}

/** Counts a debit in the spend month; the alert's data when this debit takes the spend to it, once a month. */
export function countSpend(
  state: SpendState,
  cost: number,
  now: number,
  windows: ControlWindows,
  tool: string | null,
): EventData<"spend.threshold_reached"> | null {
  const { start } = controlWindow(now, "month", windows);
  if (state.spend.windowStart !== start) state.spend = { windowStart: start, credits: 0 };
  state.spend.credits += cost;
  const alert = state.spendAlert;
  if (!alert || state.spend.credits < alert.credits || state.spendAlertedWindow === start)
    return null;
  state.spendAlertedWindow = start;
  return {
    threshold: alert.credits,
    spent: state.spend.credits,
    period: "month",
    period_start: new Date(start).toISOString(),
    tool_name: tool,
  };
}

/**
 * A refund's credits go back to the spend month if the debit was made in it; taking the spend
 * back under the alert re-arms the alert (as a refund re-arms credits.low, rules.ts): the
 * refunded call's alert must not stand in for the next real crossing.
 */
export function giveBackSpend(state: SpendState, amount: number, debitAt: number): void {
  giveBack(state.spend, amount, debitAt);
  if (
    state.spendAlertedWindow === state.spend.windowStart &&
    state.spend.windowStart <= debitAt &&
    state.spend.credits < (state.spendAlert?.credits ?? 0)
  )
    state.spendAlertedWindow = 0;
}

/** A refund's credits go back to a window (the spend month, a key's budget) only if the debit was made in it. */
export function giveBack(window: WindowSpend | undefined, amount: number, debitAt: number): void {
  if (window && window.windowStart <= debitAt)
    window.credits = Math.max(0, window.credits - amount);
}

/** Credits counted in one control window: the window's start (epoch ms) and the credits. */
export interface WindowSpend {
  windowStart: number;
  credits: number;
}

/**
 * A budgeted key's spend today and this month, both kept whatever its budget's period: a budget
 * whose period changes (day to month, or back) counts what the key already spent in the new
 * period's window. The Redis store keeps it as "<day start>:<credits>:<month start>:<credits>"
 * in a field of its own, beside the budget's own window that every release reads (prelude.lua,
 * key_spend).
 */
export interface KeySpend {
  day: WindowSpend;
  month: WindowSpend;
}

/** What a key spent in the current window of `period`: credits counted in a window that began before it are gone. */
export function spentIn(
  spend: KeySpend | undefined,
  period: ControlPeriod,
  now: number,
  windows: ControlWindows,
): number {
  const counted = spend?.[period];
  return counted && counted.windowStart >= controlWindow(now, period, windows).start
    ? counted.credits
    : 0;
}

/** The key's spend with a debit of `cost` counted in today's window and this month's. */
export function withKeyDebit(
  spend: KeySpend | undefined,
  cost: number,
  now: number,
  windows: ControlWindows,
): KeySpend {
  const counted = (period: ControlPeriod) => ({
    windowStart: controlWindow(now, period, windows).start,
    credits: spentIn(spend, period, now, windows) + cost,
  });
  return { day: counted("day"), month: counted("month") };
}

/** A refund's credits go back to the key's day and month, each only if the debit was made in it. */
export function giveBackKeySpend(spend: KeySpend | undefined, amount: number, debitAt: number) {
  giveBack(spend?.day, amount, debitAt);
  giveBack(spend?.month, amount, debitAt);
}
