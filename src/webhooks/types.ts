/** A webhook with its secrets opened, as the delivery code needs it (never stored this way). */
export interface StoreAgnosticWebhook {
  id: string;
  ownerId: string;
  url: string;
  secret: string;
  previousSecret: string | null;
}

/** What a queued delivery carries: the exact body, serialised once, so every retry sends the same bytes. */
export interface DeliveryJob {
  ownerId: string;
  webhookId: string;
  eventId: string;
  event: string;
  timestamp: string;
  body: string;
  /** Tries that could not be sent for a fault of ours (queue.ts): they use none of the receiver's attempts. */
  internalFailures?: number;
}

/** The retry rule of the specification: at most 3 retries, 1 s, 4 s and 9 s after the failures. */
export const MAX_ATTEMPTS = 4;
export const retryDelayMs = (failedAttempts: number) => failedAttempts * failedAttempts * 1000;
/** Not retried: a 4xx other than 429 (the receiver refused it; retrying cannot help). */
export const isPermanent = (status: number | null) =>
  status !== null && status >= 400 && status < 500 && status !== 429;
export const isDelivered = (status: number | null) =>
  status !== null && status >= 200 && status < 300;
