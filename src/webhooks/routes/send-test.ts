import { z } from "zod";
import { eventRecord } from "../../events/types.js";
import { defineRoute } from "../../http/route.js";
import { newEventId } from "../../lib/ids.js";
import { jobFor } from "../relay.js";
import { findWebhook, type WebhookOwner } from "./owner.js";

/** Sends a `webhook.test` event to one webhook, or to all of the owner's, whatever they subscribe to. */
export const sendTestEvent = (owner: WebhookOwner) =>
  defineRoute({
    method: "post",
    path: `${owner.base}/test`,
    summary:
      "Send a webhook.test event to the named webhook, or to every webhook when webhook_id is omitted, whatever their subscriptions.",
    auth: owner.auth,
    errors: owner.auth === "key" ? ["feature_not_in_tier"] : [],
    limit: "webhook-test",
    successStatus: 202,
    body: z.strictObject({ webhook_id: z.string().min(1).max(64).optional() }),
    response: z.object({
      sent: z.array(z.object({ webhook_id: z.string(), event_id: z.string() })),
    }),
    async handler({ services, body, caller }) {
      const ownerId = owner.idOf(caller);
      const targets =
        body.webhook_id !== undefined
          ? [await findWebhook(services, ownerId, body.webhook_id)]
          : await services.store.listWebhooks(ownerId);
      const sent = [];
      for (const webhook of targets) {
        const event = eventRecord(newEventId(), "webhook.test", ownerId, {
          webhook_id: webhook.id,
          message: "A test event from Toolgate.",
        });
        await services.deliveries.enqueue(`${event.id}_${webhook.id}`, jobFor(webhook, event));
        sent.push({ webhook_id: webhook.id, event_id: event.id });
      }
      return { status: 202, body: { sent } };
    },
  });
