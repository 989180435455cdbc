import type { KeyRecord, KeyUpdate, RevokeOutcome, UpdateKeyOutcome } from "../types.js";

/** API keys: issued, listed, changed and revoked (the secret itself is never stored, only its hash). */
export interface KeyStore {
  /**
   * Adds a key unless the account already has `cap` live keys; false when the cap is reached
   * (without `cap`, always added). Live: not revoked yet, i.e. no revocation, or one still ahead
   * (a rotated-out key in its grace counts, as does an expired key that was never revoked).
   * Counted and added in one step: requests racing for the last places cannot each take one.
   */
  addKey(key: KeyRecord, cap?: number): Promise<boolean>;
  listKeys(accountId: string): Promise<KeyRecord[]>;
  /** One key as stored (revocation and controls; no use or spend figures); null when the account has no such key. */
  getKey(accountId: string, keyId: string): Promise<KeyRecord | null>;
  /**
   * Changes a key's name and controls. With `keepOneActive`, refuses (atomically) to set a control
   * on the account's last active key (isLastActiveKey in types.ts).
   */
  updateKey(
    accountId: string,
    keyId: string,
    update: KeyUpdate,
    options?: { keepOneActive?: boolean },
  ): Promise<UpdateKeyOutcome>;
  /**
   * Revokes after `graceMs` of store time (0 = now); never postpones an earlier revocation. A key
   * already revoked is left as it is. With `keepOneActive`, refuses (atomically) to revoke the
   * account's last active key (isLastActiveKey in types.ts: unrevoked, no controls). With `replacedBy` (a rotation:
   * the new key's id, kept on the old key), refuses (atomically) a key whose revocation is already
   * scheduled: a key is replaced once, or two replacements would both work.
   */
  revokeKey(
    accountId: string,
    keyId: string,
    graceMs: number,
    options?: { keepOneActive?: boolean; replacedBy?: string },
  ): Promise<RevokeOutcome>;
}
