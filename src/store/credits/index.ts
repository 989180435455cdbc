import type { EventRecord } from "../../events/types.js";
import type {
  AccountRecord,
  AdmitOutcome,
  AdmitRequest,
  CreditChange,
  IdempotencyClaim,
  IdempotentAdmission,
  PlanChange,
  PlanType,
  RefundChange,
  TopUpKind,
} from "../types.js";

/** The money rules: the admission of a call (key, allowance, rate limit, debit) in one round trip, top-ups and refunds, each atomic and idempotent per request id. */
export interface CreditStore {
  /** The hot path, one round trip: check the key, apply the Free allowance, rate-limit, debit. */
  admit(request: AdmitRequest): Promise<AdmitOutcome>;
  /**
   * A call under an Idempotency-Key in one round trip: claims the key (as `beginIdempotent`) and,
   * when this request holds the claim under its own request id, admits the call (as `admit`) in
   * the same step; a refused admission frees the key again (as `abandonIdempotent`).
   */
  admitIdempotent(
    request: AdmitRequest,
    key: string,
    claim: IdempotencyClaim,
  ): Promise<IdempotentAdmission>;
  /** Gives back a budget hold whose call will not be debited (its payment was not taken); a no-op once debited. */
  releaseBudgetHold(accountId: string, holdId: string): Promise<void>;
  /**
   * Adds credits (a top-up: re-arms the alerts unless `rearm` is false), with its events,
   * atomically. Idempotent per request id: for a day, or for good with `keptForGood` (a request
   * id its caller may send again any time later, such as an operator's Idempotency-Key). With a
   * plan, applies it by planOutcome's rule (never lowering the tier) in the same step, and says
   * what it did in `planType`.
   */
  topUp(
    accountId: string,
    kind: TopUpKind,
    grant: CreditChange & { amount: number; rearm?: boolean; keptForGood?: boolean },
    events?: EventRecord[],
    plan?: PlanChange,
  ): Promise<{ applied: boolean; account: AccountRecord; planType?: PlanType } | null>;
  /**
   * Returns the credits debited under `requestId`, at most once; `events` are written only if it
   * applies. The call's Idempotency-Key, if any, is forgotten in the same atomic step — only the
   * claim this request holds (a refund made after losing the store mid-admission may not hold it).
   */
  refund(
    accountId: string,
    change: RefundChange,
    events?: EventRecord[],
  ): Promise<
    | { status: "refunded"; amount: number; balance: number }
    | { status: "already_refunded" | "not_charged" }
  >;
}
