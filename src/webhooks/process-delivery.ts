import type { Foundation } from "../services.js";
import { attempt, deliveryHeaders } from "./deliver.js";
import type { Agent } from "node:https";
import { openSecret, previousSecretSigns } from "./secrets.js";
import {
  MAX_ATTEMPTS,
  isDelivered,
  isPermanent,
  retryDelayMs,
  type DeliveryJob,
  type StoreAgnosticWebhook,
} from "./types.js";
import type { DeliveryAttempt } from "../store/types.js";

/** How many attempts each webhook's delivery log keeps. */
const LOG_LENGTH = 500;

export type DeliveryOutcome = "delivered" | "retry" | "failed" | "dropped";

/**
 * A delivery that could not be attempted for a reason on our side — a sealed secret no key of
 * SECRET_KEY opens, the store unreachable. The receiver never saw it, so it must not use up the
 * receiver's retries: the queue retries it on its own schedule (`internalRetryDelayMs`), for as
 * long as it takes, and it is logged, counted and alerted on every time.
 */
export class InternalDeliveryError extends Error {}

/** 1 s, 2 s, 4 s … at most a minute between tries of a delivery held up on our side. */
export const internalRetryDelayMs = (failures: number) =>
  Math.min(60_000, 1000 * 2 ** Math.max(0, failures - 1));

/**
 * One attempt of one queued delivery, and its line in the webhook's delivery log. Which of
 * retry / failed it is follows the specification: 2xx delivered; 4xx other than 429 never
 * retried; anything else retried up to 3 times. Throws InternalDeliveryError when nothing could
 * be sent because of a fault of ours.
 */
export async function processDelivery(
  services: Foundation,
  agent: Agent,
  job: DeliveryJob,
  attemptNumber: number,
  internalFailures = 0,
): Promise<DeliveryOutcome> {
  let opened: StoreAgnosticWebhook;
  try {
    const webhook = await services.store.getWebhook(job.ownerId, job.webhookId);
    if (!webhook) {
      // Deleted since the event: nothing to deliver to, and nothing sent.
      services.metrics.webhookDeliveries.inc({ outcome: "dropped" });
      return "dropped";
    }
    opened = {
      id: webhook.id,
      ownerId: webhook.ownerId,
      url: webhook.url,
      secret: openSecret(services.config.secretKeys, webhook.sealedSecret),
      previousSecret: previousSecretSigns(webhook)
        ? openSecret(services.config.secretKeys, webhook.previousSealedSecret!)
        : null,
    };
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    const retryInMs = internalRetryDelayMs(internalFailures + 1);
    services.metrics.webhookInternalErrors.inc();
    services.log.error(
      {
        webhook_id: job.webhookId,
        event_id: job.eventId,
        attempt: attemptNumber,
        reason,
        retry_in_ms: retryInMs,
      },
      "webhook delivery could not be attempted (a fault on our side, not the receiver's): retrying without using the receiver's retries",
    );
    await record(services, job, {
      attempt: attemptNumber,
      status: null,
      durationMs: 0,
      outcome: "retrying",
      error: `not sent (internal error): ${reason}`,
      nextAttemptAt: Date.now() + retryInMs,
    });
    throw new InternalDeliveryError(reason);
  }
  const headers = deliveryHeaders(
    opened,
    { id: job.eventId, event: job.event, timestamp: job.timestamp },
    job.body,
  );
  const result = await attempt(agent, opened.url, headers, job.body);
  const outcome: DeliveryOutcome = isDelivered(result.status)
    ? "delivered"
    : isPermanent(result.status) || attemptNumber >= MAX_ATTEMPTS
      ? "failed"
      : "retry";
  await record(services, job, {
    attempt: attemptNumber,
    status: result.status,
    durationMs: result.durationMs,
    outcome: outcome === "retry" ? "retrying" : outcome === "delivered" ? "delivered" : "failed",
    error: result.error ?? (isDelivered(result.status) ? null : `HTTP ${result.status}`),
    nextAttemptAt: outcome === "retry" ? Date.now() + retryDelayMs(attemptNumber) : null,
  });
  const line = {
    webhook_id: job.webhookId,
    event_id: job.eventId,
    attempt: attemptNumber,
    status: result.status,
    outcome,
    error: result.error,
  };
  if (outcome === "delivered") services.log.info(line, "webhook delivery");
  else services.log.warn(line, "webhook delivery failed");
  services.metrics.webhookDeliveries.inc({ outcome });
  return outcome;
}

/** The attempt's line in the delivery log; a log that cannot be written does not change the delivery's outcome. */
async function record(
  services: Foundation,
  job: DeliveryJob,
  entry: Pick<
    DeliveryAttempt,
    "attempt" | "status" | "durationMs" | "outcome" | "error" | "nextAttemptAt"
  >,
) {
  try {
    await services.store.recordDelivery(
      job.ownerId,
      job.webhookId,
      {
        eventId: job.eventId,
        event: job.event,
        at: Date.now() - entry.durationMs,
        body: job.body,
        ...entry,
      },
      LOG_LENGTH,
    );
  } catch (err) {
    services.log.error(
      {
        webhook_id: job.webhookId,
        event_id: job.eventId,
        err: err instanceof Error ? err.message : String(err),
      },
      "could not write the webhook delivery log",
    );
  }
}
