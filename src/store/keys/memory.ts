/**
 * API keys in memory: each account holds its keys by hash (what the admission looks up) and by
 * id, the same object under both.
 */
import type { MemoryState } from "../memory-state.js";
import {
  isActiveKey,
  isLastActiveKey,
  isRevoked,
  type KeyRecord,
  type KeyUpdate,
  type RevokeOutcome,
  type UpdateKeyOutcome,
  withControls,
} from "../types.js";
import type { KeyStore } from "./index.js";
import { revokedBeyondKept } from "./revoked-kept.js";

export function memoryKeys(state: MemoryState): KeyStore {
  return {
    async addKey(key: KeyRecord, cap?: number) {
      const a = state.accounts.get(key.accountId);
      if (!a) throw new Error("no such account");
      // No await between the count and the write: racing additions run one after the other.
      if (cap !== undefined) {
        const now = state.now();
        let live = 0;
        for (const k of a.keysById.values()) if (!isRevoked(k, now)) live++;
        if (live >= cap) return false;
      }
      const { budgetSpent: _spent, ...stored } = key;
      const copy = { ...stored, lastUsedAt: null };
      a.keysByHash.set(key.hash, copy);
      a.keysById.set(key.id, copy);
      return true;
    },

    async listKeys(accountId: string) {
      const a = state.accounts.get(accountId);
      return a
        ? [...a.keysById.values()]
            .map((key) => ({ ...withControls(key), budgetSpent: state.budgetSpent(a, key) }))
            .sort((x, y) => x.createdAt - y.createdAt || x.id.localeCompare(y.id))
        : [];
    },

    async getKey(accountId: string, keyId: string) {
      const key = state.accounts.get(accountId)?.keysById.get(keyId);
      return key ? withControls({ ...key }) : null;
    },

    async updateKey(
      accountId: string,
      keyId: string,
      update: KeyUpdate,
      options: { keepOneActive?: boolean } = {},
    ): Promise<UpdateKeyOutcome> {
      const a = state.accounts.get(accountId);
      const key = a?.keysById.get(keyId);
      if (!a || !key) return { status: "not_found" };
      const changes = Object.fromEntries(
        Object.entries(update).filter(([, value]) => value !== undefined),
      );
      // No await between the check and the write: racing changes run one after the other.
      if (
        options.keepOneActive &&
        isLastActiveKey(a.keysById.values(), key) &&
        !isActiveKey({ ...key, ...changes })
      )
        return { status: "last_active_key", key: withControls({ ...key }) };
      // keysByHash and keysById hold the same object: the admission sees the change at once.
      Object.assign(key, changes);
      return {
        status: "updated",
        key: { ...withControls(key), budgetSpent: state.budgetSpent(a, key) },
      };
    },

    async revokeKey(
      accountId: string,
      keyId: string,
      graceMs: number,
      options: { keepOneActive?: boolean; replacedBy?: string } = {},
    ): Promise<RevokeOutcome> {
      const a = state.accounts.get(accountId);
      const keys = a?.keysById;
      const key = keys?.get(keyId);
      if (!a || !keys || !key) return { status: "not_found" };
      const now = state.now();
      if (isRevoked(key, now)) return { status: "already_revoked", key: { ...key } };
      if (options.replacedBy && key.revokedAt !== null)
        return { status: "already_rotated", key: { ...key } };
      if (options.keepOneActive && isLastActiveKey(keys.values(), key))
        return { status: "last_active_key", key: { ...key } };
      const at = now + graceMs;
      key.revokedAt = key.revokedAt !== null && key.revokedAt < at ? key.revokedAt : at;
      if (options.replacedBy) key.replacedBy = options.replacedBy;
      // In the same step, as revoke-key.lua: the account keeps its most recently revoked keys only.
      for (const old of revokedBeyondKept(keys.values(), now)) {
        keys.delete(old.id);
        a.keysByHash.delete(old.hash);
        a.keySpend.delete(old.id);
      }
      return { status: "revoked", key: { ...key } };
    },
  };
}
