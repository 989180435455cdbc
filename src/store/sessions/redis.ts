/**
 * Dashboard sessions on Redis: one hash per session that expires when idle; the account's session
 * epoch (`{acct}:session-epoch`) ends every older session at its next use.
 */
import { type RedisContext, redisKey } from "../redis-context.js";
import type { SessionRecord } from "../types.js";
import type { SessionStore } from "./index.js";

export function redisSessions({ redis, call, script }: RedisContext): SessionStore {
  return {
    async createSession(session: SessionRecord, idleMs: number): Promise<void> {
      // The epoch is read first: a "sign out everywhere" landing between the two steps ends this
      // session too (its epoch is then older), which is the safe side.
      const epoch = (await call(() => redis.get(redisKey.sessionEpoch(session.accountId)))) ?? "0";
      const key = redisKey.session(session.accountId, session.id);
      const lifetime = Math.max(1, Math.min(idleMs, session.expiresAt - Date.now()));
      await call(() =>
        redis
          .multi()
          .hset(key, {
            account_id: session.accountId,
            csrf: session.csrfToken,
            created_at: session.createdAt,
            expires_at: session.expiresAt,
            via: session.via,
            ...(session.keyId ? { key_id: session.keyId } : {}),
            ...(session.ssoConnectionAt ? { sso_at: session.ssoConnectionAt } : {}),
            epoch,
          })
          .pexpire(key, lifetime)
          .exec(),
      );
    },

    async touchSession(
      accountId: string,
      id: string,
      idleMs: number | null,
    ): Promise<SessionRecord | null> {
      const raw = await script<Record<string, string> | null>(
        "session-touch",
        [redisKey.session(accountId, id), redisKey.sessionEpoch(accountId)],
        [Date.now(), idleMs ?? ""],
      );
      if (!raw) return null;
      return {
        id,
        accountId: raw.account_id!,
        csrfToken: raw.csrf!,
        createdAt: Number(raw.created_at),
        expiresAt: Number(raw.expires_at),
        via: raw.via as SessionRecord["via"],
        ...(raw.key_id ? { keyId: raw.key_id } : {}),
        ...(raw.sso_at ? { ssoConnectionAt: Number(raw.sso_at) } : {}),
      };
    },

    async endSession(accountId: string, id: string): Promise<void> {
      await call(() => redis.del(redisKey.session(accountId, id)));
    },

    async endAccountSessions(accountId: string): Promise<void> {
      // Every session records the epoch it was opened in; a newer epoch ends them all at their next use.
      await call(() => redis.incr(redisKey.sessionEpoch(accountId)));
    },
  };
}
