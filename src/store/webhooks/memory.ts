/** Webhooks in memory: a map of webhooks per owner and a capped list of deliveries per webhook. */
import type { DeliveryAttempt, WebhookRecord } from "../types.js";
import { previousSecretSigns } from "../../webhooks/secrets.js";
import type { SecretRotation, WebhookStore } from "./index.js";

export function memoryWebhooks(): WebhookStore {
  const webhooks = new Map<string, Map<string, WebhookRecord>>();
  const deliveries = new Map<string, DeliveryAttempt[]>();
  function hooksOf(ownerId: string) {
    let hooks = webhooks.get(ownerId);
    if (!hooks) webhooks.set(ownerId, (hooks = new Map()));
    return hooks;
  }

  return {
    async addWebhook(webhook: WebhookRecord, cap: number) {
      const hooks = hooksOf(webhook.ownerId);
      if (hooks.size >= cap) return false;
      hooks.set(webhook.id, structuredClone(webhook));
      return true;
    },

    async listWebhooks(ownerId: string) {
      return [...hooksOf(ownerId).values()]
        .map((w) => structuredClone(w))
        .sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
    },

    async getWebhook(ownerId: string, id: string) {
      const hook = hooksOf(ownerId).get(id);
      return hook ? structuredClone(hook) : null;
    },

    async rotateWebhookSecret(ownerId: string, id: string, rotation: SecretRotation) {
      // No await between the read and the write: racing rotations run one after the other.
      const hook = hooksOf(ownerId).get(id);
      if (!hook) return { status: "not_found" as const };
      if (rotation.overlapMs > 0 && previousSecretSigns(hook, rotation.now))
        return { status: "in_progress" as const, webhook: structuredClone(hook) };
      const overlaps = rotation.overlapMs > 0;
      hook.previousSealedSecret = overlaps ? hook.sealedSecret : null;
      hook.previousSecretExpiresAt = overlaps ? rotation.now + rotation.overlapMs : null;
      hook.sealedSecret = rotation.sealedSecret;
      return { status: "rotated" as const, webhook: structuredClone(hook) };
    },

    async deleteWebhook(ownerId: string, id: string) {
      deliveries.delete(`${ownerId}\0${id}`);
      return hooksOf(ownerId).delete(id);
    },

    async recordDelivery(
      ownerId: string,
      webhookId: string,
      attempt: DeliveryAttempt,
      keep: number,
    ) {
      // Logged only while the webhook exists (as in Redis: delivery-record.lua).
      if (!hooksOf(ownerId).has(webhookId)) return;
      const key = `${ownerId}\0${webhookId}`;
      deliveries.set(key, [attempt, ...(deliveries.get(key) ?? [])].slice(0, keep));
    },

    async listDeliveries(ownerId: string, webhookId: string, limit: number) {
      return (deliveries.get(`${ownerId}\0${webhookId}`) ?? []).slice(0, limit);
    },
  };
}
