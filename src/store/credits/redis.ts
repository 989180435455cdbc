/**
 * The money rules on Redis: the admission of a call (key, Free allowance, rate limit, debit) is
 * one script, one round trip (src/credits/lua/admit.lua); top-ups and refunds are one script each.
 * Every key they touch is the account's (`{acct_…}`), so each runs in one cluster slot.
 */
import type { EventRecord } from "../../events/types.js";
import { parseEventRecord } from "../../events/types.js";
import { DEBIT_SLOT_MS, debitedNoLaterThan, newEventId, requestIdSlot } from "../../lib/ids.js";
import { type RawAccount, toAccount } from "../accounts/redis.js";
import { type RedisContext, redisKey } from "../redis-context.js";
import {
  type AdmitOutcome,
  type AdmitRequest,
  BUDGET_HOLD_MS,
  type CreditChange,
  FAILED_ANSWER_MS,
  type IdempotencyClaim,
  type IdempotencyState,
  type IdempotentAdmission,
  KEY_USE_RESOLUTION_MS,
  OPERATION_TTL_SECONDS,
  type PlanChange,
  type PlanType,
  RATE_WINDOW_MS,
  type RateState,
  type RefundChange,
  type TopUpKind,
} from "../types.js";
import type { CreditStore } from "./index.js";

/**
 * Where a debit's record lives: a request id minted by newRequestId names its 30-second slot, and
 * the account's records of that slot share one hash (`{acct}:debits:<slot>`, a field of the id's
 * random part holding the cost) that expires as a whole a day and an hour after the slot — a
 * retry under an Idempotency-Key (kept a day) and its refund still find it, and a burst of calls
 * leaves one small listpack (≤ 512 fields at 1,000 calls a minute) instead of a key per call.
 * Other request ids (payments' fees, grants) keep a key of their own for a day.
 */
function debitRecord(accountId: string, requestId: string, now = Date.now()) {
  const stamped = requestIdSlot(requestId);
  const day = OPERATION_TTL_SECONDS;
  if (!stamped)
    return {
      key: redisKey.operation(accountId, requestId),
      field: "debit",
      expireAt: Math.floor(now / 1000) + day,
    };
  const slotEnd = Math.ceil(((stamped.slot + 1) * DEBIT_SLOT_MS) / 1000);
  const nowS = Math.floor(now / 1000);
  return {
    key: redisKey.debits(accountId, stamped.slot),
    field: stamped.random,
    // Never already past (EXPIREAT would delete the record), never beyond a day and an hour.
    expireAt: Math.min(Math.max(slotEnd + day + 3600, nowS + 3600), nowS + day + 3600 + 30),
  };
}

/** What admit.lua answers. */
type RawAdmit = {
  status: AdmitOutcome["status"];
  account?: RawAccount;
  key_id?: string | null;
  key_limited?: boolean;
  expires_at?: number;
  tools?: string;
  budget?: {
    credits: number;
    period: "day" | "month";
    spent: number;
    window_start: number;
    resets_at: number;
  };
  rate?: RateState;
  charged?: boolean;
  events?: unknown;
  budget_held?: boolean;
  refunded?: boolean;
};

/** cjson encodes an empty Lua table as `{}`; the events list is the one place that matters. */
function eventsFrom(raw: unknown): EventRecord[] {
  return Array.isArray(raw) ? raw.map(parseEventRecord) : [];
}

export function redisCredits({
  redis,
  call,
  script,
  scriptWithIndexes,
  markOutbox,
  options,
  windows,
}: RedisContext): CreditStore {
  const tiersJson = JSON.stringify(options.tiers);
  /** The admission script's keys and arguments (admit.lua; idempotent-admit.lua adds its own after them). */
  const admitInput = (request: AdmitRequest) => {
    const id = request.accountId;
    const record = debitRecord(id, request.requestId);
    return {
      keys: [
        redisKey.account(id),
        request.keyHash ? redisKey.keyRecord(id, request.keyHash) : redisKey.account(id),
        redisKey.rateLog(id),
        redisKey.ledger(id),
        record.key,
        redisKey.outbox(id),
        redisKey.keySpend(id),
      ],
      args: [
        tiersJson,
        request.keyHash ? 1 : 0,
        request.cost,
        request.requestId,
        request.tool ?? "",
        request.reason,
        newEventId(),
        newEventId(),
        new Date().toISOString(),
        RATE_WINDOW_MS,
        options.periodMs,
        record.expireAt,
        request.countRequest === false ? 0 : (request.requests ?? 1),
        KEY_USE_RESOLUTION_MS,
        record.field,
        newEventId(),
        windows.dayMs,
        windows.monthMs,
        request.checkOnly ? 1 : 0,
        request.budgetHold ?? "",
        BUDGET_HOLD_MS,
      ] as (string | number)[],
    };
  };

  /** What an admission answered, as the caller sees it (the events it wrote indexed for the relay). */
  const admitOutcome = async (id: string, result: RawAdmit): Promise<AdmitOutcome> => {
    switch (result.status) {
      case "invalid_key":
      case "revoked":
        return { status: result.status };
      case "expired":
        return { status: "expired", expiresAt: Number(result.expires_at) };
      case "tool_not_allowed":
        return {
          status: "tool_not_allowed",
          allowedTools: result.tools!.split(",").filter(Boolean),
        };
      case "key_budget_exceeded": {
        const b = result.budget!;
        return {
          status: "key_budget_exceeded",
          account: toAccount(result.account!),
          rate: result.rate!,
          budget: {
            credits: b.credits,
            period: b.period,
            spent: b.spent,
            windowStart: b.window_start,
            resetsAt: b.resets_at,
          },
        };
      }
      case "rate_limited":
      case "insufficient_credits":
        return { status: result.status, account: toAccount(result.account!), rate: result.rate! };
      case "ok": {
        const events = eventsFrom(result.events);
        await markOutbox(id, events);
        return {
          status: "ok",
          account: toAccount(result.account!),
          keyId: result.key_id ?? null,
          keyLimited: result.key_limited === true,
          rate: result.rate!,
          charged: result.charged === true,
          events,
          ...(result.budget_held === true ? { budgetHeld: true } : {}),
          ...(result.refunded === true ? { refunded: true } : {}),
        };
      }
    }
  };

  return {
    async admit(request: AdmitRequest): Promise<AdmitOutcome> {
      const { keys, args } = admitInput(request);
      return admitOutcome(request.accountId, await script<RawAdmit>("admit", keys, args));
    },

    async releaseBudgetHold(accountId: string, holdId: string): Promise<void> {
      await call(() => redis.hdel(redisKey.keySpend(accountId), `hold:${holdId}`));
    },

    async admitIdempotent(
      request: AdmitRequest,
      key: string,
      claim: IdempotencyClaim,
    ): Promise<IdempotentAdmission> {
      const { keys, args } = admitInput(request);
      const result = await script<{ claim: IdempotencyState; admit?: RawAdmit }>(
        "idempotent-admit",
        [...keys, redisKey.idempotency(request.accountId, key)],
        [
          ...args,
          claim.fingerprint,
          claim.leaseMs,
          claim.requestId,
          claim.ttlSeconds * 1000,
          claim.awaiting ?? "",
        ],
      );
      return {
        claim: result.claim,
        admitted: result.admit ? await admitOutcome(request.accountId, result.admit) : null,
      };
    },

    async topUp(
      accountId: string,
      kind: TopUpKind,
      grant: CreditChange & { amount: number; rearm?: boolean; keptForGood?: boolean },
      events: EventRecord[] = [],
      plan?: PlanChange,
    ) {
      // The outbox index is written with the credit (one round trip on one Redis node), every
      // time, even when events were already waiting or the credit was applied before: an
      // appender that crashed before indexing its event would otherwise leave the account's
      // events undelivered until a restart rebuilds the index.
      const result = await scriptWithIndexes<{
        status: string;
        account?: RawAccount;
        plan_type?: PlanType;
      }>(
        "top-up",
        [
          redisKey.account(accountId),
          redisKey.ledger(accountId),
          redisKey.operation(accountId, grant.requestId),
          redisKey.outbox(accountId),
        ],
        [
          grant.amount,
          kind,
          grant.reason,
          grant.requestId,
          grant.keptForGood ? 0 : OPERATION_TTL_SECONDS,
          JSON.stringify(events),
          plan?.tier ?? "",
          plan?.periodMs ?? 0,
          grant.rearm === false ? 0 : 1,
          tiersJson,
        ],
        { after: (writes) => writes.outbox(accountId, events) },
      );
      if (result.status === "not_found") return null;
      return {
        applied: result.status === "applied",
        account: toAccount(result.account!),
        ...(result.plan_type ? { planType: result.plan_type } : {}),
      };
    },

    async refund(accountId: string, change: RefundChange, events: EventRecord[] = []) {
      const idempotencyKey = change.idempotencyKey ?? null;
      const record = debitRecord(accountId, change.requestId);
      const keyHash = change.keyHash ?? null;
      const result = await script<
        | { status: "refunded"; amount: number; balance: number }
        | { status: "already_refunded" | "not_charged" }
      >(
        "refund",
        [
          redisKey.account(accountId),
          redisKey.ledger(accountId),
          record.key,
          redisKey.outbox(accountId),
          redisKey.idempotency(accountId, idempotencyKey ?? ""),
          keyHash ? redisKey.keyRecord(accountId, keyHash) : redisKey.account(accountId),
          redisKey.keySpend(accountId),
        ],
        [
          change.requestId,
          change.reason,
          JSON.stringify(events),
          idempotencyKey === null ? 0 : 1,
          record.field,
          change.tool ?? "",
          keyHash ? 1 : 0,
          debitedNoLaterThan(change.requestId),
          change.failure ? JSON.stringify(change.failure) : "",
          FAILED_ANSWER_MS,
        ],
      );
      if (result.status === "refunded") await markOutbox(accountId, events);
      return result;
    },
  };
}
