import type { AnyRoute } from "../../http/route.js";
import { deleteWebhook } from "./delete.js";
import { listDeliveries } from "./deliveries.js";
import { listWebhooks } from "./list.js";
import { ACCOUNT_WEBHOOKS, PLATFORM_WEBHOOKS } from "./owner.js";
import { registerWebhook } from "./register.js";
import { resendDelivery } from "./resend.js";
import { rotateWebhookSecret } from "./rotate-secret.js";
import { sendTestEvent } from "./send-test.js";

/** The webhook API (one route per file), for an account's own webhooks or the platform's (see owner.ts). */
export function webhookRoutes(owner: "account" | "platform"): AnyRoute[] {
  const whose = owner === "account" ? ACCOUNT_WEBHOOKS : PLATFORM_WEBHOOKS;
  return [
    registerWebhook,
    listWebhooks,
    deleteWebhook,
    sendTestEvent,
    rotateWebhookSecret,
    listDeliveries,
    resendDelivery,
  ].map((route) => route(whose));
}
