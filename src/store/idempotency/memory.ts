/** Idempotency-Key records in memory (kept in the shared state: a refund forgets the call's record). */
import { idempotencyId, type MemoryState } from "../memory-state.js";
import type { IdempotencyClaim, IdempotencyState, KeptAnswer, StoredResponse } from "../types.js";
import type { IdempotencyStore } from "./index.js";

const HOUR_MS = 3_600_000;

export function memoryIdempotency(state: MemoryState): IdempotencyStore {
  return {
    async beginIdempotent(
      accountId: string,
      key: string,
      claim: IdempotencyClaim,
    ): Promise<IdempotencyState> {
      const id = idempotencyId(accountId, key);
      let record = state.idempotency.get(id);
      const now = state.now();
      // As in Lua (claim_idempotency): a failed execution's answer is for those that waited on it.
      if (record?.failure) {
        if (claim.awaiting === record.requestId)
          return { state: "failed", failure: record.failure };
        record = undefined;
      }
      if (!record) {
        state.idempotency.set(
          id,
          {
            fingerprint: claim.fingerprint,
            requestId: claim.requestId,
            leaseUntil: now + claim.leaseMs,
            response: null,
          },
          // Never gone before its lease ends, as in Lua (claim_idempotency).
          now + Math.max(claim.ttlSeconds * 1000, claim.leaseMs),
        );
        return { state: "started", requestId: claim.requestId };
      }
      if (record.fingerprint !== claim.fingerprint) return { state: "conflict" };
      if (record.response) return { state: "completed", response: record.response };
      if (record.notKept) return { state: "not_kept" };
      if (record.requestId !== claim.requestId && now < record.leaseUntil)
        return { state: "in_progress", requestId: record.requestId };
      record.leaseUntil = now + claim.leaseMs;
      state.idempotency.keepUntil(id, record.leaseUntil);
      return { state: "started", requestId: record.requestId };
    },

    async completeIdempotent(
      accountId: string,
      key: string,
      response: StoredResponse,
      { ttlSeconds, accountLimitBytes }: KeptAnswer,
    ) {
      const id = idempotencyId(accountId, key);
      const record = state.idempotency.get(id);
      if (!record) return false;
      const now = state.now();
      state.idempotency.set(id, record, now + ttlSeconds * 1000);
      // As in Lua (idempotency-complete): bytes by the hour they expire, the past ones dropped.
      const size = Buffer.byteLength(JSON.stringify(response));
      const nowHour = Math.floor(now / HOUR_MS);
      const hours = state.keptAnswerBytes.get(accountId) ?? new Map<number, number>();
      let held = 0;
      for (const [hour, bytes] of hours) {
        if (hour < nowHour) hours.delete(hour);
        else held += bytes;
      }
      if (held + size > accountLimitBytes) {
        record.notKept = true;
        return false;
      }
      record.response = response;
      const expiresHour = Math.ceil((now + ttlSeconds * 1000) / HOUR_MS);
      hours.set(expiresHour, (hours.get(expiresHour) ?? 0) + size);
      state.keptAnswerBytes.set(accountId, hours);
      return true;
    },

    async abandonIdempotent(accountId: string, key: string) {
      state.idempotency.delete(idempotencyId(accountId, key));
    },

    async releaseIdempotent(accountId: string, key: string) {
      const record = state.idempotency.get(idempotencyId(accountId, key));
      // As in Lua (idempotency-release): only a claim still in progress.
      if (record && !record.response && !record.notKept && !record.failure) record.leaseUntil = 0;
    },
  };
}
