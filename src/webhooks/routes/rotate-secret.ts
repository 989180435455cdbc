import { z } from "zod";
import { ApiError } from "../../http/errors.js";
import { defineRoute } from "../../http/route.js";
import { newWebhookSecret, sealSecret } from "../secrets.js";
import { iso, type WebhookOwner, webhookView, webhookViewSchema } from "./owner.js";

/** The longest overlap during which the previous secret still signs. */
const MAX_OVERLAP_SECONDS = 7 * 24 * 3600;

/**
 * Replaces the signing secret; the old one keeps signing (beside the new) during the overlap.
 * A webhook has at most two secrets: while an old one still signs, a rotation with an overlap
 * would have to drop it before the expiry it was promised, or sign with ever more secrets, so it
 * is refused (409). A rotation with no overlap (a leaked secret) is always allowed: it asks for
 * the new secret alone.
 */
export const rotateWebhookSecret = (owner: WebhookOwner) =>
  defineRoute({
    method: "post",
    path: `${owner.base}/:id/rotate-secret`,
    summary:
      "Replace the signing secret. During the overlap, webhook-signature carries signatures of both secrets; X-Webhook-Signature uses the new one.",
    auth: owner.auth,
    unrestrictedKey: owner.changesNeedUnrestrictedKey,
    errors:
      owner.auth === "key"
        ? ["feature_not_in_tier", "secret_rotation_in_progress"]
        : ["secret_rotation_in_progress"],
    body: z.strictObject({
      overlap_seconds: z.number().int().min(0).max(MAX_OVERLAP_SECONDS).default(86_400),
    }),
    response: webhookViewSchema.extend({
      secret: z.string().describe("The new secret — shown once."),
    }),
    async handler({ services, body, caller, params }) {
      const ownerId = owner.idOf(caller);
      const secret = newWebhookSecret();
      // The store checks the overlap rule and writes in one step (store/webhooks): racing
      // rotations are decided one after the other, and a webhook deleted meanwhile stays deleted.
      const outcome = await services.store.rotateWebhookSecret(ownerId, params.id!, {
        sealedSecret: sealSecret(services.config.secretKeys, secret),
        overlapMs: body.overlap_seconds * 1000,
        now: Date.now(),
      });
      if (outcome.status === "not_found")
        throw new ApiError("not_found", "No such webhook.", { param: "id" });
      if (outcome.status === "in_progress")
        throw new ApiError(
          "secret_rotation_in_progress",
          `The previous secret still signs until ${iso(outcome.webhook.previousSecretExpiresAt)}, as the last rotation promised; rotate again after that, or now with overlap_seconds 0 to keep the new secret alone.`,
        );
      return { body: { ...webhookView(outcome.webhook), secret } };
    },
  });
