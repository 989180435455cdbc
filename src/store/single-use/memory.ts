/** Single-use values, first-writer-wins settings and leases in memory, each with its expiry. */
import { ExpiringMap } from "../../lib/expiring-map.js";
import { newEventId } from "../../lib/ids.js";
import type { MemoryState } from "../memory-state.js";
import type { SingleUseStore } from "./index.js";

export function memorySingleUse(state: MemoryState): SingleUseStore {
  const nonces = new ExpiringMap<string, true>(state.now);
  const onceValues = new ExpiringMap<string, string>(state.now);
  const settings = new Map<string, string>();
  /** Lock name → the holder's token. */
  const locks = new ExpiringMap<string, string>(state.now);
  return {
    async saveNonce(name: string, ttlMs: number) {
      nonces.set(name, true, state.now() + ttlMs);
    },

    async consumeNonce(name: string) {
      const live = nonces.has(name);
      nonces.delete(name);
      return live;
    },

    async saveOnce(name: string, value: string, ttlMs: number) {
      onceValues.set(name, value, state.now() + ttlMs);
    },

    async takeOnce(name: string) {
      const value = onceValues.get(name);
      onceValues.delete(name);
      return value ?? null;
    },

    async keepFirst(name: string, candidate: string) {
      if (!settings.has(name)) settings.set(name, candidate);
      return settings.get(name)!;
    },

    async acquireLock(name: string, ttlMs: number) {
      if (locks.has(name)) return null;
      const token = newEventId();
      locks.set(name, token, state.now() + ttlMs);
      return token;
    },

    async releaseLock(name: string, token: string) {
      if (locks.get(name) === token) locks.delete(name);
    },
  };
}
