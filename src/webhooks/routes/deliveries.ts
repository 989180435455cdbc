import { z } from "zod";
import { queryInteger } from "../../http/query-integer.js";
import { defineRoute } from "../../http/route.js";
import { findWebhook, iso, type WebhookOwner } from "./owner.js";

const deliveryViewSchema = z.object({
  event_id: z.string(),
  event: z.string(),
  attempt: z.number().int(),
  at: z.string(),
  status: z.number().int().nullable(),
  duration_ms: z.number().int(),
  outcome: z.enum(["delivered", "retrying", "failed"]),
  error: z.string().nullable(),
  next_attempt_at: z.string().nullable(),
});

/** The webhook's delivery log, newest first. */
export const listDeliveries = (owner: WebhookOwner) =>
  defineRoute({
    method: "get",
    path: `${owner.base}/:id/deliveries`,
    summary:
      "The webhook's delivery log: every attempt with its status, duration, error and next attempt, newest first.",
    auth: owner.auth,
    errors: owner.auth === "key" ? ["feature_not_in_tier"] : [],
    query: z.strictObject({ limit: queryInteger({ min: 1, max: 500, default: 100 }) }),
    response: z.object({ object: z.literal("list"), data: z.array(deliveryViewSchema) }),
    async handler({ services, caller, params, query }) {
      const webhook = await findWebhook(services, owner.idOf(caller), params.id);
      const attempts = await services.store.listDeliveries(
        webhook.ownerId,
        webhook.id,
        query.limit,
      );
      const data = attempts.map((a) => ({
        event_id: a.eventId,
        event: a.event,
        attempt: a.attempt,
        at: iso(a.at)!,
        status: a.status,
        duration_ms: a.durationMs,
        outcome: a.outcome,
        error: a.error,
        next_attempt_at: iso(a.nextAttemptAt),
      }));
      return { body: { object: "list", data } };
    },
  });
