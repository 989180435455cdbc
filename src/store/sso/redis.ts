/**
 * SSO connections on Redis: the connection is one JSON value per account (`{acct}:sso`); each
 * e-mail domain it lists is a global claim (`sso-domain:<domain>`), like an e-mail's.
 */
import { type RedisContext, redisKey } from "../redis-context.js";
import type { SsoConnectionRecord } from "../types.js";
import type { SsoStore } from "./index.js";

export function redisSso({ redis, call, script }: RedisContext): SsoStore {
  /** Releases domains this account holds (compare-and-delete: never another account's claim). */
  async function releaseSsoDomains(accountId: string, domains: string[]): Promise<void> {
    for (const domain of domains)
      await script("release-lock", [redisKey.ssoDomain(domain)], [accountId]);
  }

  const sso: SsoStore = {
    async putSsoConnection(
      connection: SsoConnectionRecord,
    ): Promise<{ status: "saved" } | { status: "domain_taken"; domain: string }> {
      const { accountId } = connection;
      const before = await sso.getSsoConnection(accountId);
      // Each domain is a global index key (like an e-mail's), claimed with SET NX; a refusal gives
      // back the claims this call made, so a failed save changes nothing.
      const claimedNow: string[] = [];
      for (const domain of connection.emailDomains) {
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
      await call(() => redis.set(redisKey.ssoConnection(accountId), JSON.stringify(connection)));
      const dropped = (before?.emailDomains ?? []).filter(
        (d) => !connection.emailDomains.includes(d),
      );
      await releaseSsoDomains(accountId, dropped);
      return { status: "saved" };
    },

    async getSsoConnection(accountId: string): Promise<SsoConnectionRecord | null> {
      const raw = await call(() => redis.get(redisKey.ssoConnection(accountId)));
      return raw ? (JSON.parse(raw) as SsoConnectionRecord) : null;
    },

    async deleteSsoConnection(accountId: string): Promise<boolean> {
      const connection = await sso.getSsoConnection(accountId);
      if (!connection) return false;
      await call(() => redis.del(redisKey.ssoConnection(accountId)));
      await releaseSsoDomains(accountId, connection.emailDomains);
      return true;
    },

    async accountIdBySsoDomain(domain: string): Promise<string | null> {
      return call(() => redis.get(redisKey.ssoDomain(domain)));
    },
  };
  return sso;
}
