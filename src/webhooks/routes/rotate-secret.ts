import { z } from "zod";
import { defineRoute } from "../../http/route.js";
import type { WebhookRecord } from "../../store/types.js";
import { newWebhookSecret, sealSecret } from "../secrets.js";
import { findWebhook, type WebhookOwner, webhookView, webhookViewSchema } from "./owner.js";

/** The longest overlap during which the previous secret still signs. */
const MAX_OVERLAP_SECONDS = 7 * 24 * 3600;

/** Replaces the signing secret; the old one keeps signing (beside the new) during the overlap. */
export const rotateWebhookSecret = (owner: WebhookOwner) =>
  defineRoute({
    method: "post",
    path: `${owner.base}/:id/rotate-secret`,
    summary:
      "Replace the signing secret. During the overlap, webhook-signature carries signatures of both secrets; X-Webhook-Signature uses the new one.",
    auth: owner.auth,
    errors: owner.auth === "key" ? ["feature_not_in_tier", "unrestricted_key_required"] : [],
    body: z.strictObject({
      overlap_seconds: z.number().int().min(0).max(MAX_OVERLAP_SECONDS).default(86_400),
    }),
    response: webhookViewSchema.extend({
      secret: z.string().describe("The new secret — shown once."),
    }),
    async handler({ services, body, caller, params }) {
      const webhook = await findWebhook(services, owner.managerIdOf(caller), params.id);
      const secret = newWebhookSecret();
      const rotated: WebhookRecord = {
        ...webhook,
        sealedSecret: sealSecret(services.config.secretKeys, secret),
        previousSealedSecret: body.overlap_seconds > 0 ? webhook.sealedSecret : null,
        previousSecretExpiresAt:
          body.overlap_seconds > 0 ? Date.now() + body.overlap_seconds * 1000 : null,
      };
      await services.store.putWebhook(rotated);
      return { body: { ...webhookView(rotated), secret } };
    },
  });
