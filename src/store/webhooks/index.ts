import type { DeliveryAttempt, WebhookRecord } from "../types.js";

/** A new signing secret, and how long the one it replaces keeps signing beside it (0: not at all). */
export interface SecretRotation {
  sealedSecret: string;
  overlapMs: number;
  now: number;
}

/**
 * What a rotation did: `in_progress` when it asked for an overlap while the previous secret
 * still signs (nothing changed: `webhook` is the record as stored).
 */
export type RotationOutcome =
  | { status: "rotated"; webhook: WebhookRecord }
  | { status: "in_progress"; webhook: WebhookRecord }
  | { status: "not_found" };

/** Webhook registrations and their delivery logs. */
export interface WebhookStore {
  /** Adds a webhook unless the owner already has `cap`; false when the cap is reached. */
  addWebhook(webhook: WebhookRecord, cap: number): Promise<boolean>;
  listWebhooks(ownerId: string): Promise<WebhookRecord[]>;
  getWebhook(ownerId: string, id: string): Promise<WebhookRecord | null>;
  /**
   * Replaces the webhook's signing secret, the old one kept signing for `overlapMs`, unless an
   * overlap is asked for while the previous secret still signs (`in_progress`). Checked and
   * written in one step: of racing rotations each sees the one before it, and none writes back a
   * webhook deleted meanwhile.
   */
  rotateWebhookSecret(
    ownerId: string,
    id: string,
    rotation: SecretRotation,
  ): Promise<RotationOutcome>;
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
