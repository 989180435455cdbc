/**
 * Payments on Redis: every payment key shares the `{payments}` slot (a claim is one script across
 * the record and the open set); each relayer's nonce sequence is a counter in `{relayers}`.
 */
import { type RedisContext, redisKey } from "../redis-context.js";
import type { PaymentRecord } from "../types.js";
import type { PaymentStore } from "./index.js";

export function redisPayments({ redis, call, script }: RedisContext): PaymentStore {
  return {
    async claimPayment(record: PaymentRecord, callKeptMs?: number): Promise<PaymentRecord | null> {
      const indexed = record.call && callKeptMs ? record.call.key : null;
      return (
        (await script<PaymentRecord | null>(
          "payment-claim",
          [
            redisKey.payment(record.id),
            redisKey.openPayments(),
            // Not indexed: the script leaves its third key alone; any key of the slot will do.
            indexed ? redisKey.paymentCall(record.accountId, indexed) : redisKey.openPayments(),
          ],
          [record.id, JSON.stringify(record), indexed ? Math.ceil(callKeptMs!) : ""],
        )) ?? null
      );
    },

    async savePayment(record: PaymentRecord): Promise<void> {
      // A settled record is kept for its retention window only; an open one until it is finished.
      const expiresAt = record.state === "settled" && record.expiresAt ? record.expiresAt : "";
      await script(
        "payment-save",
        [redisKey.payment(record.id), redisKey.openPayments()],
        [record.id, JSON.stringify(record), record.state, expiresAt],
      );
    },

    async takeOverPayment(read: PaymentRecord, next: PaymentRecord): Promise<boolean> {
      // The record as stored is the JSON its writer made, which parsing and writing again gives back.
      const swapped = await script<number>(
        "compare-and-set",
        [redisKey.payment(read.id)],
        [JSON.stringify(read), JSON.stringify(next)],
      );
      return swapped === 1;
    },

    async getPayment(id: string): Promise<PaymentRecord | null> {
      const raw = await call(() => redis.get(redisKey.payment(id)));
      return raw ? (JSON.parse(raw) as PaymentRecord) : null;
    },

    async releasePayment(id: string): Promise<void> {
      await call(() =>
        redis.multi().del(redisKey.payment(id)).srem(redisKey.openPayments(), id).exec(),
      );
    },

    async claimPaymentService(id: string, expiresAt: number): Promise<boolean> {
      return (
        (await call(() => redis.set(redisKey.paymentServed(id), "1", "PXAT", expiresAt, "NX"))) ===
        "OK"
      );
    },

    async openPayments(): Promise<PaymentRecord[]> {
      const ids = await call(() => redis.smembers(redisKey.openPayments()));
      if (ids.length === 0) return [];
      const raw = await call(() => redis.mget(...ids.map(redisKey.payment)));
      return raw.filter((r): r is string => r !== null).map((r) => JSON.parse(r) as PaymentRecord);
    },

    async takeRelayerNonce(name: string, start: number | null): Promise<number | null> {
      const nonce = await script<number | null>(
        "relayer-nonce",
        [redisKey.relayerNonce(name)],
        ["take", start === null ? "" : start],
      );
      return nonce === null ? null : Number(nonce);
    },

    async peekRelayerNonce(name: string): Promise<number | null> {
      const next = await script<number | null>(
        "relayer-nonce",
        [redisKey.relayerNonce(name)],
        ["peek", ""],
      );
      return next === null ? null : Number(next);
    },

    async raiseRelayerNonce(name: string, next: number): Promise<number> {
      return Number(
        await script<number>("relayer-nonce", [redisKey.relayerNonce(name)], ["raise", next]),
      );
    },

    async giveBackRelayerNonce(name: string, nonce: number): Promise<boolean> {
      return (
        Number(
          await script<number>("relayer-nonce", [redisKey.relayerNonce(name)], ["give", nonce]),
        ) === 1
      );
    },
  };
}
