import { z } from "zod";
import { defineRoute } from "../../http/route.js";
import { type WebhookOwner, webhookView, webhookViewSchema } from "./owner.js";

/** Lists the owner's webhooks, never their secrets. */
export const listWebhooks = (owner: WebhookOwner) =>
  defineRoute({
    method: "get",
    path: owner.base,
    summary: `List ${owner.who} webhooks (never their secrets).`,
    auth: owner.auth,
    errors: owner.auth === "key" ? ["feature_not_in_tier"] : [],
    response: z.object({ object: z.literal("list"), data: z.array(webhookViewSchema) }),
    async handler({ services, caller }) {
      const hooks = await services.store.listWebhooks(owner.idOf(caller));
      return { body: { object: "list", data: hooks.map(webhookView) } };
    },
  });
