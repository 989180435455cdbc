import { z } from "zod";
import { requireFeature } from "../../accounts/tiers.js";
import { SUBSCRIBABLE_EVENTS, eventRecord } from "../../events/types.js";
import { ApiError } from "../../http/errors.js";
import { defineRoute, type RouteContext, type RouteDef } from "../../http/route.js";
import type { KeyCaller } from "../../http/auth.js";
import { newEventId, randomId } from "../../lib/ids.js";
import type { Services } from "../../services.js";
import type { WebhookRecord } from "../../store/types.js";
import { PLATFORM_OWNER, jobFor } from "../relay.js";
import { newWebhookSecret, sealSecret } from "../secrets.js";
import { checkWebhookUrl } from "../ssrf.js";

/**
 * The webhook API, defined once and mounted twice: under /api/v1/webhooks for an account's own
 * webhooks (a Pro feature, DESIGN D9), and under /api/v1/admin/webhooks, with the admin key,
 * for the platform's webhooks (which receive `agent.registered` for every new account).
 * Another owner's webhook id is simply not found.
 */
const iso = (ms: number | null) => (ms ? new Date(ms).toISOString() : null);

export const webhookViewSchema = z.object({
  id: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  created_at: z.string(),
  previous_secret_expires_at: z.string().nullable().describe("While a rotation overlaps: when the previous secret stops signing."),
});

function webhookView(w: WebhookRecord): z.infer<typeof webhookViewSchema> {
  const overlapping = w.previousSecretExpiresAt && w.previousSecretExpiresAt > Date.now();
  return { id: w.id, url: w.url, events: w.events, created_at: iso(w.createdAt)!, previous_secret_expires_at: overlapping ? iso(w.previousSecretExpiresAt) : null };
}

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

const MAX_OVERLAP_SECONDS = 7 * 24 * 3600;

export function webhookRoutes(owner: "account" | "platform"): RouteDef<any, any, any>[] {
  const auth = owner === "account" ? ("key" as const) : ("admin" as const);
  const base = owner === "account" ? "/webhooks" : "/admin/webhooks";
  const who = owner === "account" ? "the account's" : "the platform's";

  /** The owner id, after the tier check for accounts. */
  const ownerOf = (ctx: { caller: KeyCaller | null }) => {
    if (owner === "platform") return PLATFORM_OWNER;
    requireFeature(ctx.caller!.account.tier, "webhooks");
    return ctx.caller!.account.id;
  };
  const find = async (services: Services, ownerId: string, id: string | undefined) => {
    const webhook = id ? await services.store.getWebhook(ownerId, id) : null;
    if (!webhook) throw new ApiError("not_found", "No such webhook.", { param: "id" });
    return webhook;
  };
  type Ctx = RouteContext<any, any, any> & { caller: KeyCaller | null };

  return [
    defineRoute({
      method: "post",
      path: `${base}/register`,
      summary: `Register one of ${who} webhooks: an HTTPS URL and the events it receives. The signing secret is in this answer only.`,
      auth,
      successStatus: 201,
      body: z.strictObject({
        url: z.string().max(2048),
        events: z.array(z.enum(SUBSCRIBABLE_EVENTS as [string, ...string[]])).min(1).refine((e) => new Set(e).size === e.length, "events must not repeat"),
      }),
      response: webhookViewSchema.extend({ secret: z.string().describe("whsec_… — shown once, never again.") }),
      async handler(ctx: Ctx) {
        const { services, body } = ctx;
        const ownerId = ownerOf(ctx);
        const check = await checkWebhookUrl(body.url, services.config.webhookAllowPrivateTargets);
        if (!check.ok) throw new ApiError("validation_failed", `The webhook URL is not allowed: ${check.reason}.`, { param: "url" });
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
        if (!(await services.store.addWebhook(webhook, services.config.webhooksPerAccount))) {
          throw new ApiError("validation_failed", `At most ${services.config.webhooksPerAccount} webhooks per account.`);
        }
        return { status: 201, body: { ...webhookView(webhook), secret } };
      },
    }),
    defineRoute({
      method: "get",
      path: base,
      summary: `List ${who} webhooks (never their secrets).`,
      auth,
      response: z.object({ object: z.literal("list"), data: z.array(webhookViewSchema) }),
      async handler(ctx: Ctx) {
        const hooks = await ctx.services.store.listWebhooks(ownerOf(ctx));
        return { body: { object: "list", data: hooks.map(webhookView) } };
      },
    }),
    defineRoute({
      method: "delete",
      path: `${base}/:id`,
      summary: `Remove one of ${who} webhooks; nothing more is delivered to it.`,
      auth,
      response: z.object({ id: z.string(), deleted: z.literal(true) }),
      async handler(ctx: Ctx) {
        const ownerId = ownerOf(ctx);
        if (!(await ctx.services.store.deleteWebhook(ownerId, ctx.params.id!))) throw new ApiError("not_found", "No such webhook.", { param: "id" });
        return { body: { id: ctx.params.id, deleted: true } };
      },
    }),
    defineRoute({
      method: "post",
      path: `${base}/test`,
      summary: "Send a webhook.test event to the named webhook, or to every webhook when webhook_id is omitted, whatever their subscriptions.",
      auth,
      limit: "webhook-test",
      successStatus: 202,
      body: z.strictObject({ webhook_id: z.string().max(64).optional() }),
      response: z.object({ sent: z.array(z.object({ webhook_id: z.string(), event_id: z.string() })) }),
      async handler(ctx: Ctx) {
        const { services, body } = ctx;
        const ownerId = ownerOf(ctx);
        const targets = body.webhook_id ? [await find(services, ownerId, body.webhook_id)] : await services.store.listWebhooks(ownerId);
        const sent = [];
        for (const webhook of targets) {
          const event = eventRecord(newEventId(), "webhook.test", ownerId, { webhook_id: webhook.id, message: "A test event from Toolgate." });
          await services.deliveries.enqueue(`${event.id}_${webhook.id}`, jobFor(webhook, event));
          sent.push({ webhook_id: webhook.id, event_id: event.id });
        }
        return { status: 202, body: { sent } };
      },
    }),
    defineRoute({
      method: "post",
      path: `${base}/:id/rotate-secret`,
      summary: "Replace the signing secret. During the overlap, webhook-signature carries signatures of both secrets; X-Webhook-Signature uses the new one.",
      auth,
      body: z.strictObject({ overlap_seconds: z.number().int().min(0).max(MAX_OVERLAP_SECONDS).default(86_400) }),
      response: webhookViewSchema.extend({ secret: z.string().describe("The new secret — shown once.") }),
      async handler(ctx: Ctx) {
        const { services, body } = ctx;
        const webhook = await find(services, ownerOf(ctx), ctx.params.id);
        const secret = newWebhookSecret();
        const rotated: WebhookRecord = {
          ...webhook,
          sealedSecret: sealSecret(services.config.secretKeys, secret),
          previousSealedSecret: body.overlap_seconds > 0 ? webhook.sealedSecret : null,
          previousSecretExpiresAt: body.overlap_seconds > 0 ? Date.now() + body.overlap_seconds * 1000 : null,
        };
        await services.store.putWebhook(rotated);
        return { body: { ...webhookView(rotated), secret } };
      },
    }),
    defineRoute({
      method: "get",
      path: `${base}/:id/deliveries`,
      summary: "The webhook's delivery log: every attempt with its status, duration, error and next attempt, newest first.",
      auth,
      query: z.strictObject({ limit: z.coerce.number().int().min(1).max(500).default(100) }),
      response: z.object({ object: z.literal("list"), data: z.array(deliveryViewSchema) }),
      async handler(ctx: Ctx) {
        const webhook = await find(ctx.services, ownerOf(ctx), ctx.params.id);
        const attempts = await ctx.services.store.listDeliveries(webhook.ownerId, webhook.id, ctx.query.limit);
        return {
          body: {
            object: "list",
            data: attempts.map((a) => ({
              event_id: a.eventId,
              event: a.event,
              attempt: a.attempt,
              at: iso(a.at),
              status: a.status,
              duration_ms: a.durationMs,
              outcome: a.outcome,
              error: a.error,
              next_attempt_at: iso(a.nextAttemptAt),
            })),
          },
        };
      },
    }),
    defineRoute({
      method: "post",
      path: `${base}/:id/deliveries/:event_id/resend`,
      summary: "Send one logged event to the webhook again: same event id and body, newly signed.",
      auth,
      limit: "webhook-resend",
      successStatus: 202,
      response: z.object({ webhook_id: z.string(), event_id: z.string() }),
      async handler(ctx: Ctx) {
        const { services, params } = ctx;
        const webhook = await find(services, ownerOf(ctx), params.id);
        const logged = (await services.store.listDeliveries(webhook.ownerId, webhook.id, 500)).find((a) => a.eventId === params.event_id);
        if (!logged) throw new ApiError("not_found", "No delivery of that event is in this webhook's log.", { param: "event_id" });
        const job = { ownerId: webhook.ownerId, webhookId: webhook.id, eventId: logged.eventId, event: logged.event, timestamp: JSON.parse(logged.body).timestamp as string, body: logged.body };
        await services.deliveries.enqueue(`${logged.eventId}_${webhook.id}_resend_${randomId(8)}`, job);
        return { status: 202, body: { webhook_id: webhook.id, event_id: logged.eventId } };
      },
    }),
  ];
}
