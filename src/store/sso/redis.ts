/**
 * SSO connections on Redis: the connection is one JSON value per account (`{acct}:sso`); each
 * e-mail domain it lists is a global claim (`sso-domain:<domain>`), like an e-mail's. The claims
 * lie outside the account's slot, so no one script can change them with the connection: one
 * account's saves and deletes take turns under a lease (`lock:sso:<acct>`) instead.
 */
import { StoreUnavailableError } from "../errors.js";
import { type RedisContext, redisKey } from "../redis-context.js";
import { redisSingleUse } from "../single-use/redis.js";
import type { SsoConnectionChange, SsoConnectionRecord } from "../types.js";
import type { SsoSaveOutcome, SsoStore } from "./index.js";

/** Longer than a save's few commands; lets a lock left by a process that died lapse. */
const LOCK_MS = 10_000;
/** How long a save or delete waits for another of the same account's before failing with 503. */
const LOCK_WAIT_MS = 3_000;
const LOCK_POLL_MS = 10;

export function redisSso(context: RedisContext): SsoStore {
  const { redis, call, script } = context;
  // The leases of the single-use concern (SET NX PX, released by its holder only).
  const locks = redisSingleUse(context);
  /** Releases domains this account holds (compare-and-delete: never another account's claim). */
  async function releaseSsoDomains(accountId: string, domains: string[]): Promise<void> {
    for (const domain of domains)
      await script("release-lock", [redisKey.ssoDomain(domain)], [accountId]);
  }

  /**
   * Runs `step` while holding the account's SSO lock: of two saves (or a save and a delete) each
   * reads the connection as the other left it, so the domain claims never drift from the
   * connection (a claim left by a lost save, a listed domain released by a racing delete).
   */
  async function holdingLock<T>(accountId: string, step: () => Promise<T>): Promise<T> {
    const lock = `sso:${accountId}`;
    const giveUpAt = Date.now() + LOCK_WAIT_MS;
    let token: string | null;
    while (!(token = await locks.acquireLock(lock, LOCK_MS))) {
      if (Date.now() > giveUpAt)
        throw new StoreUnavailableError("the account's SSO connection is being changed");
      await new Promise((r) => setTimeout(r, LOCK_POLL_MS));
    }
    try {
      return await step();
    } finally {
      await locks.releaseLock(lock, token);
    }
  }

  const sso: SsoStore = {
    putSsoConnection(change: SsoConnectionChange): Promise<SsoSaveOutcome> {
      const { accountId } = change;
      return holdingLock(accountId, async () => {
        const before = await sso.getSsoConnection(accountId);
        const sealedClientSecret = change.sealedClientSecret ?? before?.sealedClientSecret;
        if (!sealedClientSecret) return { status: "not_set_up" };
        // Each domain is a global index key (like an e-mail's), claimed with SET NX; a refusal
        // gives back the claims this call made, so a failed save changes nothing.
        const claimedNow: string[] = [];
        for (const domain of change.emailDomains) {
          const claimed = await call(() => redis.set(redisKey.ssoDomain(domain), accountId, "NX"));
          if (claimed === "OK") {
            claimedNow.push(domain);
            continue;
          }
          const holder = await call(() => redis.get(redisKey.ssoDomain(domain)));
          if (holder === accountId) continue;
          await releaseSsoDomains(accountId, claimedNow);
          return { status: "domain_taken", domain };
        }
        const connection: SsoConnectionRecord = {
          ...change,
          sealedClientSecret,
          createdAt: before?.createdAt ?? change.createdAt,
        };
        await call(() => redis.set(redisKey.ssoConnection(accountId), JSON.stringify(connection)));
        const dropped = (before?.emailDomains ?? []).filter(
          (d) => !connection.emailDomains.includes(d),
        );
        await releaseSsoDomains(accountId, dropped);
        return { status: "saved", connection };
      });
    },

    async getSsoConnection(accountId: string): Promise<SsoConnectionRecord | null> {
      const raw = await call(() => redis.get(redisKey.ssoConnection(accountId)));
      return raw ? (JSON.parse(raw) as SsoConnectionRecord) : null;
    },

    deleteSsoConnection(accountId: string): Promise<boolean> {
      return holdingLock(accountId, async () => {
        const connection = await sso.getSsoConnection(accountId);
        if (!connection) return false;
        await call(() => redis.del(redisKey.ssoConnection(accountId)));
        await releaseSsoDomains(accountId, connection.emailDomains);
        return true;
      });
    },

    async accountIdBySsoDomain(domain: string): Promise<string | null> {
      return call(() => redis.get(redisKey.ssoDomain(domain)));
    },
  };
  return sso;
}
