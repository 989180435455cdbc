/**
 * Payments and relayers' nonce sequences in memory. A settled payment is kept until its
 * `expiresAt`, a service claim and a call's index until theirs, as their Redis keys are.
 */
import { ExpiringMap } from "../../lib/expiring-map.js";
import type { MemoryState } from "../memory-state.js";
import type { PaymentRecord } from "../types.js";
import type { PaymentStore } from "./index.js";

export function memoryPayments(state: MemoryState): PaymentStore {
  const payments = new ExpiringMap<string, PaymentRecord>(state.now);
  const keep = (record: PaymentRecord) =>
    payments.set(
      record.id,
      structuredClone(record),
      record.state === "settled" && record.expiresAt ? record.expiresAt : Number.POSITIVE_INFINITY,
    );
  /** Payment ids whose service is claimed, until the claim lapses. */
  const served = new ExpiringMap<string, true>(state.now);
  const relayerNonces = new Map<string, number>();
  /** A paid call (account, client's key) → the payment that pays for it, while the call is kept. */
  const calls = new ExpiringMap<string, string>(state.now);
  return {
    async claimPayment(record: PaymentRecord, callKeptMs?: number) {
      const existing = payments.get(record.id);
      if (existing) return structuredClone(existing);
      if (record.call && callKeptMs) {
        const call = `${record.accountId}\n${record.call.key}`;
        const other = calls.get(call);
        const paid = other === undefined ? undefined : payments.get(other);
        if (paid && other !== record.id) return structuredClone(paid);
        calls.set(call, record.id, state.now() + callKeptMs);
      }
      keep(record);
      return null;
    },

    async savePayment(record: PaymentRecord) {
      keep(record);
    },

    async takeOverPayment(read: PaymentRecord, next: PaymentRecord) {
      const current = payments.get(read.id);
      if (!current || JSON.stringify(current) !== JSON.stringify(read)) return false;
      keep(next);
      return true;
    },

    async getPayment(id: string) {
      const record = payments.get(id);
      return record ? structuredClone(record) : null;
    },

    async releasePayment(id: string) {
      payments.delete(id);
    },

    async claimPaymentService(id: string, expiresAt: number) {
      if (served.has(id)) return false;
      served.set(id, true, expiresAt);
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

    async giveBackRelayerNonce(name: string, nonce: number) {
      if (relayerNonces.get(name) !== nonce + 1) return false;
      relayerNonces.set(name, nonce);
      return true;
    },
  };
}
