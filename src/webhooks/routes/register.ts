import { z } from "zod";
import { ApiError } from "../../http/errors.js";
import { keepIfCredentialHolds, requireCredentialHolds } from "../../http/auth.js";
import { defineRoute } from "../../http/route.js";
import { randomId } from "../../lib/ids.js";
import type { WebhookRecord } from "../../store/types.js";
import { newWebhookSecret, sealSecret } from "../secrets.js";
import { checkWebhookUrl } from "../ssrf.js";
import { type WebhookOwner, webhookView, webhookViewSchema } from "./owner.js";

/** Registers a webhook: its URL passes the SSRF guard; its signing secret is shown in this answer only. */
export const registerWebhook = (owner: WebhookOwner) =>
  defineRoute({
    method: "post",
    path: `${owner.base}/register`,
    summary: `Register one of ${owner.who} webhooks: an HTTPS URL and the events it receives. The signing secret is in this answer only.`,
    auth: owner.auth,
    unrestrictedKey: owner.changesNeedUnrestrictedKey,
    errors: owner.auth === "key" ? ["feature_not_in_tier"] : [],
    successStatus: 201,
    body: z.strictObject({
      url: z.string().max(2048),
      events: z
        .array(z.enum(owner.events as [string, ...string[]]))
        .min(1)
        .refine((e) => new Set(e).size === e.length, "events must not repeat"),
    }),
    response: webhookViewSchema.extend({
      secret: z.string().describe("whsec_… — shown once, never again."),
    }),
    async handler({ services, body, caller }) {
      const ownerId = owner.idOf(caller);
      const check = await checkWebhookUrl(body.url, services.config.webhookAllowPrivateTargets);
      if (!check.ok)
        throw new ApiError(
          "validation_failed",
          `The webhook URL is not allowed: ${check.reason}.`,
          { param: "url" },
        );
      const secret = newWebhookSecret();
      const webhook: WebhookRecord = {
        id: `wh_${randomId(20)}`,
        ownerId,
        url: check.url.href,
        events: body.events,
        createdAt: Date.now(),
        sealedSecret: sealSecret(services.config.secretKeys, secret),
        previousSealedSecret: null,
        previousSecretExpiresAt: null,
      };
      // The URL's check above waits on DNS, which the URL's owner may answer slowly.
      if (caller) await requireCredentialHolds(services, caller);
      if (!(await services.store.addWebhook(webhook, services.config.webhooksPerAccount))) {
        throw new ApiError(
          "validation_failed",
          `At most ${services.config.webhooksPerAccount} webhooks per account.`,
        );
      }
      // A take-back of the account (dashboard/reclaim.ts) while this ran must not leave it a way in.
      if (caller)
        await keepIfCredentialHolds(services, caller, () =>
          services.store.deleteWebhook(ownerId, webhook.id),
        );
      return { status: 201, body: { ...webhookView(webhook), secret } };
    },
  });
