import { z } from "zod";
import { requireFeature } from "../../accounts/tiers.js";
import type { KeyCaller } from "../../http/auth.js";
import { ApiError } from "../../http/errors.js";
import { ACCOUNT_EVENTS, SUBSCRIBABLE_EVENTS } from "../../events/types.js";
import type { Services } from "../../services.js";
import type { WebhookRecord } from "../../store/types.js";
import { PLATFORM_OWNER } from "../relay.js";
import { previousSecretSigns } from "../secrets.js";

/**
 * Whose webhooks a route manages. The webhook API is defined once and mounted twice: under
 * /api/v1/webhooks for an account's own webhooks (a Pro feature, decisions.md D9), and under
 * /api/v1/admin/webhooks, with the admin key, for the platform's webhooks (which receive
 * `agent.registered` for every new account). Another owner's webhook id is simply not found.
 */
export interface WebhookOwner {
  auth: "key" | "admin";
  /** Where the routes are mounted, under /api/v1. */
  base: string;
  /** "the account's" / "the platform's", for the routes' summaries. */
  who: string;
  /** The events its webhooks may subscribe to. */
  events: readonly string[];
  /** The owner's id, after the tier check for accounts. */
  idOf(caller: KeyCaller | null): string;
  /**
   * Whether a change of where its events go or how they are signed (register, delete, rotate a
   * secret) needs a key without account controls: for an account, as a limited key may only call
   * tools and read (RouteDef.unrestrictedKey).
   */
  changesNeedUnrestrictedKey: boolean;
}

export const ACCOUNT_WEBHOOKS: WebhookOwner = {
  auth: "key",
  base: "/webhooks",
  who: "the account's",
  events: ACCOUNT_EVENTS,
  idOf(caller) {
    requireFeature(caller!.account.tier, "webhooks");
    return caller!.account.id;
  },
  changesNeedUnrestrictedKey: true,
};

export const PLATFORM_WEBHOOKS: WebhookOwner = {
  auth: "admin",
  base: "/admin/webhooks",
  who: "the platform's",
  events: SUBSCRIBABLE_EVENTS,
  idOf: () => PLATFORM_OWNER,
  changesNeedUnrestrictedKey: false,
};

/** The owner's webhook with this id, or 404 (another owner's included). */
export async function findWebhook(
  services: Services,
  ownerId: string,
  id: string | undefined,
): Promise<WebhookRecord> {
  const webhook = id ? await services.store.getWebhook(ownerId, id) : null;
  if (!webhook) throw new ApiError("not_found", "No such webhook.", { param: "id" });
  return webhook;
}

export const iso = (ms: number | null) => (ms ? new Date(ms).toISOString() : null);

export const webhookViewSchema = z.object({
  id: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  created_at: z.string(),
  previous_secret_expires_at: z
    .string()
    .nullable()
    .describe("While a rotation overlaps: when the previous secret stops signing."),
});

/** A webhook as the API shows it: never its secrets. */
export function webhookView(w: WebhookRecord): z.infer<typeof webhookViewSchema> {
  return {
    id: w.id,
    url: w.url,
    events: w.events,
    created_at: iso(w.createdAt)!,
    previous_secret_expires_at: previousSecretSigns(w) ? iso(w.previousSecretExpiresAt) : null,
  };
}
