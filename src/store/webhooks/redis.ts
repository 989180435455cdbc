/** Webhooks on Redis: one hash per owner (`{owner}:webhooks`) and a capped list of deliveries per webhook. */
import { type RedisContext, redisKey } from "../redis-context.js";
import type { DeliveryAttempt, WebhookRecord } from "../types.js";
import type { RotationOutcome, SecretRotation, WebhookStore } from "./index.js";

export function redisWebhooks({ redis, call, script }: RedisContext): WebhookStore {
  return {
    async addWebhook(webhook: WebhookRecord, cap: number): Promise<boolean> {
      return (
        (await script<number>(
          "webhook-add",
          [redisKey.webhooks(webhook.ownerId)],
          [webhook.id, JSON.stringify(webhook), cap],
        )) === 1
      );
    },

    async listWebhooks(ownerId: string): Promise<WebhookRecord[]> {
      const all = await call(() => redis.hvals(redisKey.webhooks(ownerId)));
      return all
        .map((raw) => JSON.parse(raw) as WebhookRecord)
        .sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
    },

    async getWebhook(ownerId: string, id: string): Promise<WebhookRecord | null> {
      const raw = await call(() => redis.hget(redisKey.webhooks(ownerId), id));
      return raw ? (JSON.parse(raw) as WebhookRecord) : null;
    },

    async rotateWebhookSecret(
      ownerId: string,
      id: string,
      rotation: SecretRotation,
    ): Promise<RotationOutcome> {
      return script<RotationOutcome>(
        "webhook-rotate",
        [redisKey.webhooks(ownerId)],
        [id, rotation.sealedSecret, rotation.overlapMs, rotation.now],
      );
    },

    async deleteWebhook(ownerId: string, id: string): Promise<boolean> {
      const [[, removed] = []] =
        (await call(() =>
          redis
            .multi()
            .hdel(redisKey.webhooks(ownerId), id)
            .del(redisKey.deliveries(ownerId, id))
            .exec(),
        )) ?? [];
      return removed === 1;
    },

    async recordDelivery(
      ownerId: string,
      webhookId: string,
      attempt: DeliveryAttempt,
      keep: number,
    ): Promise<void> {
      await script(
        "delivery-record",
        [redisKey.webhooks(ownerId), redisKey.deliveries(ownerId, webhookId)],
        [webhookId, JSON.stringify(attempt), keep],
      );
    },

    async listDeliveries(
      ownerId: string,
      webhookId: string,
      limit: number,
    ): Promise<DeliveryAttempt[]> {
      return (
        await call(() => redis.lrange(redisKey.deliveries(ownerId, webhookId), 0, limit - 1))
      ).map((raw) => JSON.parse(raw) as DeliveryAttempt);
    },
  };
}
