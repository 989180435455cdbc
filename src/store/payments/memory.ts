/** Payments and relayers' nonce sequences in memory. */
import type { MemoryState } from "../memory-state.js";
import type { PaymentRecord } from "../types.js";
import type { PaymentStore } from "./index.js";

export function memoryPayments(state: MemoryState): PaymentStore {
  const payments = new Map<string, PaymentRecord>();
  /** Payment id → until when its service claim is kept. */
  const served = new Map<string, number>();
  const relayerNonces = new Map<string, number>();
  /** A paid call (account, client's key) → the payment that pays for it, and until when. */
  const calls = new Map<string, { id: string; until: number }>();
  return {
    async claimPayment(record: PaymentRecord, callKeptMs?: number) {
      const existing = payments.get(record.id);
      if (existing) return structuredClone(existing);
      if (record.call && callKeptMs) {
        const call = `${record.accountId}\n${record.call.key}`;
        const other = calls.get(call);
        const paid = other && other.until > state.now() ? payments.get(other.id) : undefined;
        if (paid && other!.id !== record.id) return structuredClone(paid);
        calls.set(call, { id: record.id, until: state.now() + callKeptMs });
      }
      payments.set(record.id, structuredClone(record));
      return null;
    },

    async savePayment(record: PaymentRecord) {
      payments.set(record.id, structuredClone(record));
    },

    async takeOverPayment(read: PaymentRecord, next: PaymentRecord) {
      const current = payments.get(read.id);
      if (!current || JSON.stringify(current) !== JSON.stringify(read)) return false;
      payments.set(read.id, structuredClone(next));
      return true;
    },

    async getPayment(id: string) {
      const record = payments.get(id);
      if (record?.state === "settled" && record.expiresAt && record.expiresAt <= state.now())
        payments.delete(id);
      return record && payments.has(id) ? structuredClone(record) : null;
    },

    async releasePayment(id: string) {
      payments.delete(id);
    },

    async claimPaymentService(id: string, expiresAt: number) {
      if ((served.get(id) ?? 0) > state.now()) return false;
      served.set(id, expiresAt);
      return true;
    },

    async openPayments() {
      return [...payments.values()]
        .filter((p) => p.state !== "settled")
        .map((p) => structuredClone(p));
    },

    async takeRelayerNonce(name: string, start: number | null) {
      const next = relayerNonces.get(name) ?? start;
      if (next === null) return null;
      relayerNonces.set(name, next + 1);
      return next;
    },

    async peekRelayerNonce(name: string) {
      return relayerNonces.get(name) ?? null;
    },

    async raiseRelayerNonce(name: string, next: number) {
      relayerNonces.set(name, Math.max(next, relayerNonces.get(name) ?? 0));
      return relayerNonces.get(name)!;
    },
  };
}
