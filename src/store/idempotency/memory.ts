/** Idempotency-Key records in memory (kept in the shared state: a refund forgets the call's record). */
import { idempotencyId, type MemoryState } from "../memory-state.js";
import type { IdempotencyClaim, IdempotencyState, StoredResponse } from "../types.js";
import type { IdempotencyStore } from "./index.js";

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
      ttlSeconds: number,
    ) {
      const id = idempotencyId(accountId, key);
      const record = state.idempotency.get(id);
      if (!record) return;
      record.response = response;
      state.idempotency.set(id, record, state.now() + ttlSeconds * 1000);
    },

    async abandonIdempotent(accountId: string, key: string) {
      state.idempotency.delete(idempotencyId(accountId, key));
    },
  };
}
