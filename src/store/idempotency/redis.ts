/** Idempotency-Key records on Redis: one hash per (account, key), `{acct}:idem:<sha256 of the key>`. */
import { type RedisContext, redisKey } from "../redis-context.js";
import type { IdempotencyClaim, IdempotencyState, KeptAnswer, StoredResponse } from "../types.js";
import type { IdempotencyStore } from "./index.js";

export function redisIdempotency({ redis, call, script }: RedisContext): IdempotencyStore {
  return {
    async beginIdempotent(
      accountId: string,
      key: string,
      claim: IdempotencyClaim,
    ): Promise<IdempotencyState> {
      return script<IdempotencyState>(
        "idempotency-begin",
        [redisKey.idempotency(accountId, key)],
        [
          claim.fingerprint,
          claim.leaseMs,
          claim.requestId,
          claim.ttlSeconds * 1000,
          claim.awaiting ?? "",
        ],
      );
    },

    async completeIdempotent(
      accountId: string,
      key: string,
      response: StoredResponse,
      { ttlSeconds, accountLimitBytes }: KeptAnswer,
    ): Promise<boolean> {
      const outcome = await script<number>(
        "idempotency-complete",
        [redisKey.idempotency(accountId, key), redisKey.keptAnswerBytes(accountId)],
        [JSON.stringify(response), ttlSeconds, accountLimitBytes],
      );
      return outcome === 1;
    },

    async abandonIdempotent(accountId: string, key: string): Promise<void> {
      await call(() => redis.del(redisKey.idempotency(accountId, key)));
    },

    async releaseIdempotent(accountId: string, key: string): Promise<void> {
      await script("idempotency-release", [redisKey.idempotency(accountId, key)], []);
    },
  };
}
