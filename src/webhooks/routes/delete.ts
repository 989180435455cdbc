import { z } from "zod";
import { ApiError } from "../../http/errors.js";
import { defineRoute } from "../../http/route.js";
import type { WebhookOwner } from "./owner.js";

/** Removes a webhook: nothing more is delivered to it. */
export const deleteWebhook = (owner: WebhookOwner) =>
  defineRoute({
    method: "delete",
    path: `${owner.base}/:id`,
    summary: `Remove one of ${owner.who} webhooks; nothing more is delivered to it.`,
    auth: owner.auth,
    unrestrictedKey: owner.changesNeedUnrestrictedKey,
    errors: owner.auth === "key" ? ["feature_not_in_tier"] : [],
    response: z.object({ id: z.string(), deleted: z.literal(true) }),
    async handler({ services, caller, params }) {
      const ownerId = owner.idOf(caller);
      if (!(await services.store.deleteWebhook(ownerId, params.id!)))
        throw new ApiError("not_found", "No such webhook.", { param: "id" });
      return { body: { id: params.id, deleted: true } };
    },
  });
