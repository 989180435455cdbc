/** SSO connections in memory: one per account, and which account holds each e-mail domain. */
import type { SsoConnectionRecord } from "../types.js";
import type { SsoStore } from "./index.js";

export function memorySso(): SsoStore {
  const ssoConnections = new Map<string, SsoConnectionRecord>();
  const ssoDomains = new Map<string, string>();
  return {
    async putSsoConnection(connection: SsoConnectionRecord) {
      const { accountId } = connection;
      const taken = connection.emailDomains.find(
        (d) => (ssoDomains.get(d) ?? accountId) !== accountId,
      );
      if (taken) return { status: "domain_taken" as const, domain: taken };
      for (const d of ssoConnections.get(accountId)?.emailDomains ?? []) ssoDomains.delete(d);
      for (const d of connection.emailDomains) ssoDomains.set(d, accountId);
      ssoConnections.set(accountId, structuredClone(connection));
      return { status: "saved" as const };
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
