import { TIERS } from "../accounts/tiers.js";
import type { EventRecord } from "../events/types.js";
import type { Foundation } from "../services.js";
import type { AccountRecord, WebhookRecord } from "../store/types.js";
import { every } from "../lib/periodic.js";
import type { DeliveryQueue } from "./queue.js";
import type { DeliveryJob } from "./types.js";

export const PLATFORM_OWNER = "platform";
/** How many accounts' outboxes one relay works on at once (read together, handed on together). */
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

/** Side-by-side work that went on past a failure reports it once all of it is done. */
function throwFirstFailure(outcomes: PromiseSettledResult<unknown>[]): void {
  const failed = outcomes.find((outcome) => outcome.status === "rejected");
  if (failed) throw failed.reason;
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

  /**
   * Relays some accounts' outboxes: their waiting events and the accounts (whose tier decides
   * their own webhooks) read in one request each, every event enqueued for its webhooks, then
   * all handed on in one request. An account whose enqueueing failed is not handed on: its
   * events stay waiting for the next tick (the queue keeps a job id once).
   */
  const relayAccounts = async (accountIds: string[], platform: WebhookRecord[]): Promise<void> => {
    let outboxes: EventRecord[][];
    let accounts: (AccountRecord | null)[];
    try {
      [outboxes, accounts] = await Promise.all([
        services.store.readOutboxes(accountIds, 200),
        services.store.getAccounts(accountIds),
      ]);
    } catch (err) {
      // One account's outbox that cannot be read (an event that fails validation) must hold up
      // only itself: each account is then relayed alone.
      if (accountIds.length === 1) throw err;
      return throwFirstFailure(
        await Promise.allSettled(accountIds.map((id) => relayAccounts([id], platform))),
      );
    }
    const enqueued = await Promise.allSettled(
      accountIds.map(async (accountId, i) => {
        const events = outboxes[i]!;
        const account = accounts[i];
        const own =
          events.length > 0 && account && TIERS[account.tier].features.includes("webhooks")
            ? await services.store.listWebhooks(accountId)
            : [];
        // Validated as read (Redis: parseEventRecord in readOutboxes) before anything leaves the service.
        for (const event of events) {
          for (const webhook of [...own, ...platform]) {
            if (webhook.events.includes(event.event))
              await queue.enqueue(`${event.id}_${webhook.id}`, jobFor(webhook, event));
          }
        }
        return { accountId, events };
      }),
    );
    await services.store.handOn(
      enqueued.flatMap((outcome) => (outcome.status === "fulfilled" ? [outcome.value] : [])),
      keep,
    );
    throwFirstFailure(enqueued);
  };

  const tick = async () => {
    if (ready) await ready.finally(() => (ready = null));
    const platform = await services.store.listWebhooks(PLATFORM_OWNER);
    const accounts = await services.store.outboxAccounts();
    // Accounts are independent of each other: relayed side by side, a bounded number at once,
    // rather than each waiting for the one before.
    for (let i = 0; i < accounts.length; i += RELAY_CONCURRENCY)
      await relayAccounts(accounts.slice(i, i + RELAY_CONCURRENCY), platform);
  };
  return every(options.intervalMs ?? 200, tick, (err) =>
    services.log.warn({ err: String(err) }, "webhook relay tick failed; retrying"),
  );
}
