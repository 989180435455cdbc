import type { SessionRecord } from "../types.js";

/** Dashboard sessions: created, kept alive while used, ended. */
export interface SessionStore {
  /**
   * Dashboard sessions, server-side: the record lives `idleMs` past its last use and never past
   * its absolute `expiresAt`. `touchSession` reads a live session and pushes its idle expiry back
   * in one step; `endAccountSessions` ends every session of the account at once (sign out
   * everywhere), including any created before it in another process. `idleMs` null reads the
   * session without pushing its idle expiry back (a live feed held open is not use).
   */
  createSession(session: SessionRecord, idleMs: number): Promise<void>;
  touchSession(accountId: string, id: string, idleMs: number | null): Promise<SessionRecord | null>;
  endSession(accountId: string, id: string): Promise<void>;
  endAccountSessions(accountId: string): Promise<void>;
}
