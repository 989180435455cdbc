/** Dashboard sessions in memory, with each account's session epoch ("sign out everywhere"). */
import type { MemoryState } from "../memory-state.js";
import type { SessionRecord } from "../types.js";
import type { SessionStore } from "./index.js";

export function memorySessions(state: MemoryState): SessionStore {
  const sessions = new Map<string, { session: SessionRecord; idleUntil: number; epoch: number }>();
  const sessionEpochs = new Map<string, number>();
  return {
    async createSession(session: SessionRecord, idleMs: number) {
      sessions.set(`${session.accountId}:${session.id}`, {
        session,
        idleUntil: state.now() + idleMs,
        epoch: sessionEpochs.get(session.accountId) ?? 0,
      });
    },

    async touchSession(accountId: string, id: string, idleMs: number | null) {
      const key = `${accountId}:${id}`;
      const entry = sessions.get(key);
      if (!entry) return null;
      const now = state.now();
      if (
        entry.idleUntil <= now ||
        entry.session.expiresAt <= now ||
        entry.epoch !== (sessionEpochs.get(accountId) ?? 0)
      ) {
        sessions.delete(key);
        return null;
      }
      if (idleMs !== null) entry.idleUntil = now + idleMs;
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
