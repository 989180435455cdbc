/** SSO connections in memory: one per account, and which account holds each e-mail domain. */
import type { SsoConnectionChange, SsoConnectionRecord } from "../types.js";
import type { SsoSaveOutcome, SsoStore } from "./index.js";

export function memorySso(): SsoStore {
  const ssoConnections = new Map<string, SsoConnectionRecord>();
  const ssoDomains = new Map<string, string>();
  return {
    async putSsoConnection(change: SsoConnectionChange): Promise<SsoSaveOutcome> {
      // No await from the read to the write: one account's saves and deletes run one at a time.
      const { accountId } = change;
      const stored = ssoConnections.get(accountId);
      const sealedClientSecret = change.sealedClientSecret ?? stored?.sealedClientSecret;
      if (!sealedClientSecret) return { status: "not_set_up" };
      const taken = change.emailDomains.find((d) => (ssoDomains.get(d) ?? accountId) !== accountId);
      if (taken) return { status: "domain_taken", domain: taken };
      for (const d of stored?.emailDomains ?? []) ssoDomains.delete(d);
      for (const d of change.emailDomains) ssoDomains.set(d, accountId);
      const connection = {
        ...change,
        sealedClientSecret,
        createdAt: stored?.createdAt ?? change.createdAt,
      };
      ssoConnections.set(accountId, structuredClone(connection));
      return { status: "saved", connection };
    },

    async getSsoConnection(accountId: string) {
      const connection = ssoConnections.get(accountId);
      return connection ? structuredClone(connection) : null;
    },

    async deleteSsoConnection(accountId: string) {
      const connection = ssoConnections.get(accountId);
      if (!connection) return false;
      for (const d of connection.emailDomains) ssoDomains.delete(d);
      ssoConnections.delete(accountId);
      return true;
    },

    async accountIdBySsoDomain(domain: string) {
      return ssoDomains.get(domain) ?? null;
    },
  };
}
