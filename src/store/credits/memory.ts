/**
 * The money rules in memory, for the embedded mode: the same admission, top-up and refund as the
 * Lua scripts, in TypeScript (src/credits/rules.ts and controls.ts); the store contract suite
 * holds the two to the same behaviour (docs/decisions.md, "Storage"). Each operation runs to
 * completion without awaiting, which makes it atomic on Node's single thread.
 */
import type { TierName } from "../../accounts/tiers.js";
import {
  countSpend,
  giveBackKeySpend,
  giveBackSpend,
  withKeyDebit,
} from "../../credits/controls.js";
import {
  applyDebit,
  applyRefund,
  carriedOverMs,
  nextAllowanceAt,
  planLapsed,
  planOutcome,
} from "../../credits/rules.js";
import { type EventRecord, eventRecord } from "../../events/types.js";
import { debitedNoLaterThan, newEventId } from "../../lib/ids.js";
import { idempotencyId, type MemoryState } from "../memory-state.js";
import {
  type AdmitOutcome,
  type AdmitRequest,
  BUDGET_HOLD_MS,
  type CreditChange,
  controlWindow,
  FAILED_ANSWER_MS,
  type IdempotencyClaim,
  isLimitedKey,
  isRevoked,
  KEY_USE_RESOLUTION_MS,
  type KeyRecord,
  type PlanChange,
  RATE_WINDOW_MS,
  type RefundChange,
  type TopUpKind,
} from "../types.js";
import { memoryIdempotency } from "../idempotency/memory.js";
import type { CreditStore } from "./index.js";

export function memoryCredits(state: MemoryState): CreditStore {
  const idempotency = memoryIdempotency(state);
  /** The account's window of per-second counts, as rate_window in src/credits/lua/prelude.lua. */
  function rateWindow(seconds: Map<number, number>, limit: number, count: number) {
    const now = state.now();
    let used = 0;
    let oldest: number | null = null;
    for (const [second, n] of seconds) {
      if ((second + 1) * 1000 <= now - RATE_WINDOW_MS) seconds.delete(second);
      else {
        used += n;
        if (oldest === null || second < oldest) oldest = second;
      }
    }
    // As in Lua: never announced beyond the window (a Retry-After within the minute), though a
    // second whose calls filled the window may keep counting up to a second longer.
    const resetOf = (second: number) =>
      Math.min((second + 1) * 1000 + RATE_WINDOW_MS - now, RATE_WINDOW_MS);
    if (used + count > limit)
      return {
        allowed: false,
        remaining: limit - Math.min(used, limit),
        resetMs: oldest === null ? RATE_WINDOW_MS : resetOf(oldest),
      };
    const second = Math.floor(now / 1000);
    seconds.set(second, (seconds.get(second) ?? 0) + count);
    return { allowed: true, remaining: limit - used - count, resetMs: resetOf(oldest ?? second) };
  }

  const credits: CreditStore = {
    async admit(request: AdmitRequest): Promise<AdmitOutcome> {
      const a = state.accounts.get(request.accountId);
      let keyId: string | null = null;
      let key: KeyRecord | undefined;
      if (request.keyHash !== null) {
        key = a?.keysByHash.get(request.keyHash);
        if (!a || !key) return { status: "invalid_key" };
        if (isRevoked(key, state.now())) return { status: "revoked" };
        // Account controls on the key: refused before anything is counted.
        if (key.expiresAt && state.now() >= key.expiresAt)
          return { status: "expired", expiresAt: key.expiresAt };
        if (key.allowedTools && request.tool && !key.allowedTools.includes(request.tool))
          return { status: "tool_not_allowed", allowedTools: [...key.allowedTools] };
        keyId = key.id;
        if (state.now() - (key.lastUsedAt ?? 0) >= KEY_USE_RESOLUTION_MS)
          key.lastUsedAt = state.now();
      }
      if (!a) return { status: "invalid_key" };
      const now = state.now();
      if (planLapsed(a, now)) {
        a.tier = "free";
        a.planExpiresAt = 0;
      }
      const tier = state.tiers[a.tier] ?? state.tiers.free!;

      if (a.tier === "free" && a.allowanceAt > 0 && now >= a.allowanceAt) {
        if (a.balance < tier.monthlyAllowance) {
          state.topUpAccount(a, "allowance", tier.monthlyAllowance - a.balance, {
            requestId: `allowance:${a.allowanceAt}`,
            reason: "monthly Free allowance",
          });
        }
        a.allowanceAt = nextAllowanceAt(a.allowanceAt, now, state.periodMs);
      }

      const asked = request.countRequest === false ? 0 : (request.requests ?? 1);
      // Several messages count each only for a tier that may send them (TierLimits `countsMessages`).
      const requests = asked > 1 && !tier.countsMessages ? 1 : asked;
      let rate = { limit: tier.requestsPerMinute, remaining: -1, resetMs: 0 };
      if (requests > 0) {
        const window = rateWindow(a.rateWindow, tier.requestsPerMinute, requests);
        rate = {
          limit: tier.requestsPerMinute,
          remaining: window.remaining,
          resetMs: window.resetMs,
        };
        if (!window.allowed) return { status: "rate_limited", account: state.view(a), rate };
      }

      let charged = false;
      const events: EventRecord[] = [];
      const keyLimited = key ? isLimitedKey(key) : false;
      if (request.cost > 0 && !a.debits.has(request.requestId)) {
        // The key's own budget first: a call that would take it past its budget is refused, uncharged.
        const budget = key?.budget ?? null;
        const window = budget ? controlWindow(now, budget.period, state.windows) : null;
        const spent = budget ? state.budgetSpent(a, key!) : 0;
        // The debit of a call its check held budget for takes the hold's place.
        if (request.budgetHold && !request.checkOnly) a.budgetHolds.delete(request.budgetHold);
        const held = budget ? state.budgetHeld(a, key!.id) : 0;
        if (budget && window && spent + held + request.cost > budget.credits)
          return {
            status: "key_budget_exceeded",
            account: state.view(a),
            rate,
            budget: {
              ...budget,
              spent: spent + held,
              windowStart: window.start,
              resetsAt: window.next,
            },
          };
        // A call about to be paid for with its own credits (x402) is checked up to here, its cost
        // held in the key's budget until its debit (prelude.lua, admit_call).
        if (request.checkOnly) {
          const budgetHeld = budget !== null && request.budgetHold !== undefined;
          if (budgetHeld)
            a.budgetHolds.set(request.budgetHold!, {
              keyId: key!.id,
              credits: request.cost,
              until: now + BUDGET_HOLD_MS,
            });
          return {
            status: "ok",
            account: state.view(a),
            keyId,
            keyLimited,
            rate,
            charged,
            events,
            ...(budgetHeld ? { budgetHeld } : {}),
          };
        }
        if (a.balance < request.cost)
          return { status: "insufficient_credits", account: state.view(a), rate };
        for (const alert of applyDebit(a, request.cost, request.tool)) {
          events.push(eventRecord(newEventId(), alert.event, a.id, alert.data));
        }
        if (budget && keyId)
          a.keySpend.set(
            keyId,
            withKeyDebit(a.keySpend.get(keyId), request.cost, now, state.windows),
          );
        const spendAlert = countSpend(a, request.cost, now, state.windows, request.tool);
        if (spendAlert)
          events.push(eventRecord(newEventId(), "spend.threshold_reached", a.id, spendAlert));
        state.addLedger(a, "debit", -request.cost, request, request.tool, keyId);
        a.debits.set(request.requestId, { cost: request.cost, keyId });
        a.outbox.push(...events);
        charged = true;
      }
      // As in Lua (admit_call): a debit made under this request id and refunded since is said so.
      const refunded = request.cost > 0 && a.debits.get(request.requestId) === "refunded";
      return {
        status: "ok",
        account: state.view(a),
        keyId,
        keyLimited,
        rate,
        charged,
        events,
        ...(refunded ? { refunded } : {}),
      };
    },

    async releaseBudgetHold(accountId: string, holdId: string): Promise<void> {
      state.accounts.get(accountId)?.budgetHolds.delete(holdId);
    },

    async topUp(
      accountId: string,
      kind: TopUpKind,
      grant: CreditChange & { amount: number; rearm?: boolean; keptForGood?: boolean },
      events: EventRecord[] = [],
      plan?: PlanChange,
    ) {
      const a = state.accounts.get(accountId);
      if (!a) return null;
      if (a.operations.has(grant.requestId)) return { applied: false, account: state.view(a) };
      const planType = plan && planOutcome(a, plan.tier, state.tiers, state.now());
      if (plan && planType !== "one_time") {
        const now = state.now();
        const base =
          planType === "renewal"
            ? a.planExpiresAt
            : now + carriedOverMs(a, plan.tier, state.tiers, now);
        a.tier = plan.tier as TierName;
        a.planExpiresAt = base + plan.periodMs;
      }
      state.topUpAccount(a, kind, grant.amount, grant);
      // A plan's payment.received says what the plan did: only this step knows (as in top-up.lua).
      a.outbox.push(
        ...events.map((e) =>
          planType && e.event === "payment.received"
            ? { ...e, data: { ...e.data, type: planType } }
            : e,
        ),
      );
      a.operations.set(
        grant.requestId,
        true,
        grant.keptForGood ? Number.POSITIVE_INFINITY : undefined,
      );
      return { applied: true, account: state.view(a), ...(planType ? { planType } : {}) };
    },

    async refund(accountId: string, change: RefundChange, events: EventRecord[] = []) {
      // Only a claim this request holds (refund.lua says why).
      const claim = change.idempotencyKey && idempotencyId(accountId, change.idempotencyKey);
      const held = claim ? state.idempotency.get(claim) : undefined;
      if (claim && held?.requestId === change.requestId) {
        if (change.failure) {
          held.failure = change.failure;
          state.idempotency.set(claim, held, state.now() + FAILED_ANSWER_MS);
        } else state.idempotency.delete(claim);
      }
      const a = state.accounts.get(accountId);
      const debit = a?.debits.get(change.requestId);
      if (!a || debit === undefined) return { status: "not_charged" as const };
      if (debit === "refunded") return { status: "already_refunded" as const };
      a.debits.set(change.requestId, "refunded");
      const { cost, keyId } = debit;
      applyRefund(a, cost);
      const debitedAt = debitedNoLaterThan(change.requestId);
      giveBackSpend(a, cost, debitedAt);
      if (keyId) giveBackKeySpend(a.keySpend.get(keyId), cost, debitedAt);
      state.addLedger(a, "refund", cost, change, change.tool ?? null, keyId);
      a.outbox.push(...events);
      return { status: "refunded" as const, amount: cost, balance: a.balance };
    },

    async admitIdempotent(request: AdmitRequest, key: string, claim: IdempotencyClaim) {
      // The Redis store's one script, as its two steps.
      const claimed = await idempotency.beginIdempotent(request.accountId, key, claim);
      if (claimed.state !== "started" || claimed.requestId !== request.requestId)
        return { claim: claimed, admitted: null };
      const admitted = await credits.admit(request);
      if (admitted.status !== "ok") await idempotency.abandonIdempotent(request.accountId, key);
      return { claim: claimed, admitted };
    },
  };
  return credits;
}
