import type { IdempotencyClaim, IdempotencyState, KeptAnswer, StoredResponse } from "../types.js";

/** Idempotency-Key executions: claimed once, replayed, or forgotten to run again. */
export interface IdempotencyStore {
  /**
   * Idempotency-Key records (per account): the first caller claims the key for one execution;
   * later callers with the same fingerprint see it in progress or get the stored response.
   */
  /**
   * Claims an Idempotency-Key for one execution (for `leaseMs`; the record lives `ttlSeconds`).
   * A claim whose lease ran out unanswered (its process died) is handed to the next caller with
   * the request id it was charged under, so the retry is not charged again. The request holding
   * the claim (same request id) may begin again and continues it: a paid call claims its key
   * before its payment settles, then runs under that claim.
   */
  beginIdempotent(
    accountId: string,
    key: string,
    claim: IdempotencyClaim,
  ): Promise<IdempotencyState>;
  /**
   * Keeps a served call's answer for replays, unless the account's answers kept at once would
   * pass `keep.accountLimitBytes` (then the key records that it was served and not kept). Answers
   * whether the answer was kept.
   */
  completeIdempotent(
    accountId: string,
    key: string,
    response: StoredResponse,
    keep: KeptAnswer,
  ): Promise<boolean>;
  /** Forgets an execution that failed without a result worth replaying, so a retry runs again. */
  abandonIdempotent(accountId: string, key: string): Promise<void>;
  /**
   * Ends the lease of a claim taken over from a process that died, whose retry was refused (rate
   * limit, key, credits): the claim keeps the request id its first attempt may have been charged
   * under, so the next retry takes it over at once and is not charged again. Forgetting it
   * instead let the next retry run under a new request id, charged a second time.
   */
  releaseIdempotent(accountId: string, key: string): Promise<void>;
}
