import { TIERS } from "../accounts/tiers.js";
import type { EventRecord } from "../events/types.js";
import type { Foundation } from "../services.js";
import type { WebhookRecord } from "../store/types.js";
import { every } from "../lib/periodic.js";
import type { DeliveryQueue } from "./queue.js";
import type { DeliveryJob } from "./types.js";

export const PLATFORM_OWNER = "platform";
/** How many accounts' outboxes one relay works on at once. */
const RELAY_CONCURRENCY = 32;
/** How many recent events each account's event log keeps without the books (GET /api/v1/events). */
const EVENT_LOG_LENGTH = 1000;

/** The envelope, serialised once: the bytes every attempt sends and signs. */
export function envelopeOf(event: EventRecord): string {
  return JSON.stringify({
    id: event.id,
    event: event.event,
    timestamp: event.timestamp,
    data: event.data,
  });
}

export function jobFor(webhook: WebhookRecord, event: EventRecord): DeliveryJob {
  return {
    ownerId: webhook.ownerId,
    webhookId: webhook.id,
    eventId: event.id,
    event: event.event,
    timestamp: event.timestamp,
    body: envelopeOf(event),
  };
}

/**
 * Moves events from the accounts' outboxes into the delivery queue, then acknowledges them.
 * Every gateway process runs it; two relays reading the same event enqueue the same job ids,
 * which the queue keeps once — so a crash between enqueue and acknowledge duplicates nothing.
 * Account events go to the account's subscribed webhooks while its tier has webhooks (Pro and
 * up); every event also goes to the platform webhooks subscribed to it (agent.registered above all).
 *
 * Each event handed on is logged in the account's event log: with the books on (`exportsEvents`)
 * every one is kept there until the books exporter has moved it to PostgreSQL (src/books/events.ts);
 * without them the log keeps the last EVENT_LOG_LENGTH.
 */
export function startRelay(
  services: Foundation,
  queue: DeliveryQueue,
  options: { exportsEvents: boolean; intervalMs?: number },
): { stop(): Promise<void> } {
  const keep = options.exportsEvents ? null : EVENT_LOG_LENGTH;
  // First, re-index outboxes a crashed process may have left unindexed.
  let ready: Promise<void> | null = services.store
    .rebuildOutboxIndex()
    .then(
      (n) => void (n && services.log.info({ accounts: n }, "re-indexed outboxes left by a crash")),
    )
    .catch((err) => services.log.warn({ err: String(err) }, "could not rebuild the outbox index"));

  const relayAccount = async (accountId: string, platform: WebhookRecord[]) => {
    // Its waiting events and the account (whose tier decides its own webhooks), read together.
    const [events, account] = await Promise.all([
      services.store.readOutbox(accountId, 200),
      services.store.getAccount(accountId),
    ]);
    if (events.length === 0) return services.store.ackOutbox(accountId, []);
    const own =
      account && TIERS[account.tier].features.includes("webhooks")
        ? await services.store.listWebhooks(accountId)
        : [];
    // Validated as read (Redis: parseEventRecord in readOutbox) before anything leaves the service.
    for (const event of events) {
      for (const webhook of [...own, ...platform]) {
        if (webhook.events.includes(event.event))
          await queue.enqueue(`${event.id}_${webhook.id}`, jobFor(webhook, event));
      }
    }
    await services.store.handOn(accountId, events, keep);
  };

  const tick = async () => {
    if (ready) await ready.finally(() => (ready = null));
    const platform = await services.store.listWebhooks(PLATFORM_OWNER);
    const accounts = await services.store.outboxAccounts();
    // Accounts are independent of each other: relayed side by side, a bounded number at once,
    // rather than each waiting for the one before.
    for (let i = 0; i < accounts.length; i += RELAY_CONCURRENCY) {
      const outcomes = await Promise.allSettled(
        accounts.slice(i, i + RELAY_CONCURRENCY).map((id) => relayAccount(id, platform)),
      );
      const failed = outcomes.find((o) => o.status === "rejected");
      if (failed) throw failed.reason;
    }
  };
  return every(options.intervalMs ?? 200, tick, (err) =>
    services.log.warn({ err: String(err) }, "webhook relay tick failed; retrying"),
  );
}
