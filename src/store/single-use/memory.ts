/** Single-use values, first-writer-wins settings and leases in memory, each with its expiry. */
import { newEventId } from "../../lib/ids.js";
import type { MemoryState } from "../memory-state.js";
import type { SingleUseStore } from "./index.js";

export function memorySingleUse(state: MemoryState): SingleUseStore {
  const nonces = new Map<string, number>();
  const onceValues = new Map<string, { value: string; until: number }>();
  const settings = new Map<string, string>();
  const locks = new Map<string, { token: string; until: number }>();
  return {
    async saveNonce(name: string, ttlMs: number) {
      nonces.set(name, state.now() + ttlMs);
    },

    async consumeNonce(name: string) {
      const until = nonces.get(name);
      nonces.delete(name);
      return until !== undefined && until > state.now();
    },

    async saveOnce(name: string, value: string, ttlMs: number) {
      onceValues.set(name, { value, until: state.now() + ttlMs });
    },

    async takeOnce(name: string) {
      const kept = onceValues.get(name);
      onceValues.delete(name);
      return kept && kept.until > state.now() ? kept.value : null;
    },

    async keepFirst(name: string, candidate: string) {
      if (!settings.has(name)) settings.set(name, candidate);
      return settings.get(name)!;
    },

    async acquireLock(name: string, ttlMs: number) {
      const held = locks.get(name);
      if (held && held.until > state.now()) return null;
      const token = newEventId();
      locks.set(name, { token, until: state.now() + ttlMs });
      return token;
    },

    async releaseLock(name: string, token: string) {
      if (locks.get(name)?.token === token) locks.delete(name);
    },
  };
}
