import { z } from "zod";
import { ApiError } from "../../http/errors.js";
import { defineRoute } from "../../http/route.js";
import { randomId } from "../../lib/ids.js";
import { findWebhook, type WebhookOwner } from "./owner.js";

/** Sends one logged event again: the same event id and body, newly signed. */
export const resendDelivery = (owner: WebhookOwner) =>
  defineRoute({
    method: "post",
    path: `${owner.base}/:id/deliveries/:event_id/resend`,
    summary: "Send one logged event to the webhook again: same event id and body, newly signed.",
    auth: owner.auth,
    errors: owner.auth === "key" ? ["feature_not_in_tier"] : [],
    limit: "webhook-resend",
    successStatus: 202,
    response: z.object({ webhook_id: z.string(), event_id: z.string() }),
    async handler({ services, caller, params }) {
      const webhook = await findWebhook(services, owner.idOf(caller), params.id);
      const logged = (await services.store.listDeliveries(webhook.ownerId, webhook.id, 500)).find(
        (a) => a.eventId === params.event_id,
      );
      if (!logged)
        throw new ApiError("not_found", "No delivery of that event is in this webhook's log.", {
          param: "event_id",
        });
      const { timestamp } = JSON.parse(logged.body) as { timestamp: string };
      const job = {
        ownerId: webhook.ownerId,
        webhookId: webhook.id,
        eventId: logged.eventId,
        event: logged.event,
        timestamp,
        body: logged.body,
      };
      await services.deliveries.enqueue(
        `${logged.eventId}_${webhook.id}_resend_${randomId(8)}`,
        job,
      );
      return { status: 202, body: { webhook_id: webhook.id, event_id: logged.eventId } };
    },
  });
