/** Dashboard sessions in memory, with each account's session epoch ("sign out everywhere"). */
import { ExpiringMap } from "../../lib/expiring-map.js";
import type { MemoryState } from "../memory-state.js";
import type { SessionRecord } from "../types.js";
import type { SessionStore } from "./index.js";

export function memorySessions(state: MemoryState): SessionStore {
  /** Each kept until it lapses: idle past its idle time, or past its lifetime. */
  const sessions = new ExpiringMap<string, { session: SessionRecord; epoch: number }>(state.now);
  const sessionEpochs = new Map<string, number>();
  return {
    async createSession(session: SessionRecord, idleMs: number) {
      sessions.set(
        `${session.accountId}:${session.id}`,
        { session, epoch: sessionEpochs.get(session.accountId) ?? 0 },
        Math.min(state.now() + idleMs, session.expiresAt),
      );
    },

    async touchSession(accountId: string, id: string, idleMs: number | null) {
      const key = `${accountId}:${id}`;
      const entry = sessions.get(key);
      if (!entry) return null;
      if (entry.epoch !== (sessionEpochs.get(accountId) ?? 0)) {
        sessions.delete(key);
        return null;
      }
      if (idleMs !== null)
        sessions.set(key, entry, Math.min(state.now() + idleMs, entry.session.expiresAt));
      return { ...entry.session };
    },

    async endSession(accountId: string, id: string) {
      sessions.delete(`${accountId}:${id}`);
    },

    async endAccountSessions(accountId: string) {
      sessionEpochs.set(accountId, (sessionEpochs.get(accountId) ?? 0) + 1);
    },
  };
}
