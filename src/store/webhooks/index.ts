import type { DeliveryAttempt, WebhookRecord } from "../types.js";

/** Webhook registrations and their delivery logs. */
export interface WebhookStore {
  /** Adds a webhook unless the owner already has `cap`; false when the cap is reached. */
  addWebhook(webhook: WebhookRecord, cap: number): Promise<boolean>;
  listWebhooks(ownerId: string): Promise<WebhookRecord[]>;
  getWebhook(ownerId: string, id: string): Promise<WebhookRecord | null>;
  putWebhook(webhook: WebhookRecord): Promise<void>;
  deleteWebhook(ownerId: string, id: string): Promise<boolean>;
  /** Appends to a webhook's delivery log (newest first, the last `keep` kept). */
  recordDelivery(
    ownerId: string,
    webhookId: string,
    attempt: DeliveryAttempt,
    keep: number,
  ): Promise<void>;
  listDeliveries(ownerId: string, webhookId: string, limit: number): Promise<DeliveryAttempt[]>;
}
