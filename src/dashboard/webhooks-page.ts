import { TIERS } from "../accounts/tiers.js";
import { ACCOUNT_EVENTS } from "../events/types.js";
import { esc } from "../pages/respond.js";
import type { Services } from "../services.js";
import { dashboardPage } from "./layout.js";
import type { DashboardSession } from "./session.js";

/**
 * The Webhooks page (a Pro feature, decisions.md D9): register, list, delete, send a test, and each
 * webhook's delivery log. Changes go through the webhook API itself, mounted under
 * /dashboard/api/v1 with the session as the caller (tier check, SSRF guard, cap, secrets shown
 * once: all the API's); this file only renders.
 */
const time = (ms: number) =>
  `<time datetime="${new Date(ms).toISOString()}">${new Date(ms).toISOString().replace("T", " ").slice(0, 19)} UTC</time>`;

export async function renderWebhooksPage(
  services: Services,
  current: DashboardSession,
): Promise<string> {
  const { account } = current;
  if (!TIERS[account.tier].features.includes("webhooks")) {
    const body = `<p>Webhooks push your account's events (payments, credit alerts, tool errors) to your HTTPS endpoint. They are part of the Pro tier; this account is on the ${esc(TIERS[account.tier].label)} tier.</p>`;
    return dashboardPage(current, {
      basePath: services.config.basePath,
      title: "Webhooks",
      path: "/dashboard/webhooks",
      body,
    });
  }
  const hooks = await services.store.listWebhooks(account.id);
  const rows = hooks
    .map(
      (w) =>
        `<tr data-webhook-id="${esc(w.id)}"><td><code>${esc(w.url)}</code></td><td>${w.events.map(esc).join(", ")}</td><td>${time(w.createdAt)}</td><td><div class="actions">` +
        `<a href="${services.config.basePath}/dashboard/webhooks/${encodeURIComponent(w.id)}">Delivery log</a>` +
        `<button type="button" class="secondary" data-action="test-webhook" data-webhook-id="${esc(w.id)}">Send test</button>` +
        `<button type="button" class="danger" data-action="delete-webhook" data-webhook-id="${esc(w.id)}" data-webhook-url="${esc(w.url)}">Delete</button></div></td></tr>`,
    )
    .join("");
  const boxes = ACCOUNT_EVENTS.map(
    (e, i) =>
      `<input type="checkbox" id="event-${i}" name="events" value="${esc(e)}" checked><label for="event-${i}">${esc(e)}</label>`,
  ).join(" ");
  const body = `
<section aria-labelledby="register-heading"><h2 id="register-heading">Register a webhook</h2>
<form id="register-webhook"><label for="webhook-url">HTTPS URL</label><input id="webhook-url" name="url" type="url" required placeholder="https://example.com/toolgate-events">
<fieldset><legend>Events</legend>${boxes}</fieldset>
<p><button type="submit">Register webhook</button></p></form>
<div id="new-secret" hidden><p class="warning">Copy the signing secret now: it is shown only once.</p><code class="secret" id="new-secret-value"></code><button type="button" class="secondary" data-copy="new-secret-value">Copy</button></div>
</section>
<section aria-labelledby="webhooks-heading"><h2 id="webhooks-heading">Your webhooks</h2>
<div class="table-wrap" tabindex="0" role="region" aria-labelledby="webhooks-heading"><table id="webhooks-table" data-refresh><caption class="muted">${hooks.length} of ${services.config.webhooksPerAccount}</caption>
<thead><tr><th scope="col">URL</th><th scope="col">Events</th><th scope="col">Registered</th><th scope="col">Actions</th></tr></thead>
<tbody>${rows}</tbody></table></div></section>
<dialog id="delete-dialog" aria-labelledby="delete-title"><form method="dialog"><h2 id="delete-title">Delete this webhook?</h2><p class="target"></p><p>Nothing more is delivered to it.</p>
<p class="actions"><button value="confirm" class="danger">Delete</button><button value="cancel" class="secondary" autofocus>Cancel</button></p></form></dialog>`;
  return dashboardPage(current, {
    basePath: services.config.basePath,
    title: "Webhooks",
    path: "/dashboard/webhooks",
    body,
  });
}

/** One webhook's delivery log: each attempt's status, timing and outcome (null when not the account's). */
export async function renderDeliveriesPage(
  services: Services,
  current: DashboardSession,
  webhookId: string,
): Promise<string | null> {
  if (!TIERS[current.account.tier].features.includes("webhooks")) return null;
  const webhook = await services.store.getWebhook(current.account.id, webhookId);
  if (!webhook) return null;
  const attempts = await services.store.listDeliveries(current.account.id, webhook.id, 100);
  const rows = attempts
    .map(
      (a) =>
        `<tr><td>${time(a.at)}</td><td>${esc(a.event)}</td><td><code>${esc(a.eventId)}</code></td><td>${a.attempt}</td><td>${a.status ?? "no answer"}</td><td>${a.durationMs} ms</td><td>${a.outcome}${a.error ? ` <span class="muted">(${esc(a.error)})</span>` : ""}</td></tr>`,
    )
    .join("");
  const body = `<p><code>${esc(webhook.url)}</code> · <a href="${services.config.basePath}/dashboard/webhooks">All webhooks</a></p>
<div class="table-wrap" tabindex="0" role="region" aria-label="Delivery attempts, scrollable"><table id="deliveries-table"><caption class="muted">The latest ${attempts.length} attempts, newest first</caption>
<thead><tr><th scope="col">At</th><th scope="col">Event</th><th scope="col">Event id</th><th scope="col">Attempt</th><th scope="col">Status</th><th scope="col">Time</th><th scope="col">Outcome</th></tr></thead>
<tbody>${rows || `<tr><td colspan="7">Nothing delivered yet: send a test from the webhooks list.</td></tr>`}</tbody></table></div>`;
  return dashboardPage(current, {
    basePath: services.config.basePath,
    title: "Delivery log",
    path: "/dashboard/webhooks",
    body,
  });
}
