import type { Services } from "../services.js";
import { attempt, deliveryHeaders } from "./deliver.js";
import type { Agent } from "node:https";
import { openSecret } from "./secrets.js";
import { MAX_ATTEMPTS, isDelivered, isPermanent, retryDelayMs, type DeliveryJob } from "./types.js";

/** How many attempts each webhook's delivery log keeps. */
const LOG_LENGTH = 500;

export type DeliveryOutcome = "delivered" | "retry" | "failed" | "dropped";

/**
 * One attempt of one queued delivery, and its line in the webhook's delivery log. Which of
 * retry / failed it is follows the specification: 2xx delivered; 4xx other than 429 never
 * retried; anything else retried up to 3 times.
 */
export async function processDelivery(services: Services, agent: Agent, job: DeliveryJob, attemptNumber: number): Promise<DeliveryOutcome> {
  const webhook = await services.store.getWebhook(job.ownerId, job.webhookId);
  if (!webhook) return "dropped"; // deleted since the event: nothing to deliver to
  const secretKey = services.config.secretKey;
  const previousValid = webhook.previousSealedSecret && (webhook.previousSecretExpiresAt ?? 0) > Date.now();
  const opened = {
    id: webhook.id,
    ownerId: webhook.ownerId,
    url: webhook.url,
    secret: openSecret(secretKey, webhook.sealedSecret),
    previousSecret: previousValid ? openSecret(secretKey, webhook.previousSealedSecret!) : null,
  };
  const headers = deliveryHeaders(opened, { id: job.eventId, event: job.event, timestamp: job.timestamp }, job.body);
  const result = await attempt(agent, webhook.url, headers, job.body);
  const outcome: DeliveryOutcome = isDelivered(result.status) ? "delivered" : isPermanent(result.status) || attemptNumber >= MAX_ATTEMPTS ? "failed" : "retry";
  await services.store.recordDelivery(
    job.ownerId,
    job.webhookId,
    {
      eventId: job.eventId,
      event: job.event,
      attempt: attemptNumber,
      at: Date.now() - result.durationMs,
      status: result.status,
      durationMs: result.durationMs,
      outcome: outcome === "retry" ? "retrying" : outcome === "delivered" ? "delivered" : "failed",
      error: result.error ?? (isDelivered(result.status) ? null : `HTTP ${result.status}`),
      nextAttemptAt: outcome === "retry" ? Date.now() + retryDelayMs(attemptNumber) : null,
      body: job.body,
    },
    LOG_LENGTH,
  );
  services.log.info({ webhook_id: job.webhookId, event_id: job.eventId, attempt: attemptNumber, status: result.status, outcome }, "webhook delivery");
  services.metrics.webhookDeliveries.inc({ outcome });
  return outcome;
}
