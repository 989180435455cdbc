import { MAX_KEY_BUDGET_CREDITS } from "../accounts/key-controls.js";
import { keyView } from "../accounts/views.js";
import { esc } from "../pages/respond.js";
import type { Services } from "../services.js";
import { isLastActiveKey } from "../store/types.js";
import { dashboardPage } from "./layout.js";
import type { DashboardSession } from "./session.js";

/**
 * The Keys page. The table is rendered here; creating, rotating and revoking go through the
 * account API itself (the same routes as /api/v1/keys, mounted under /dashboard/api/v1 with the
 * session as the caller), so every rule — the last active key kept unless forced, rotation
 * grace, "already revoked is not found" — is the API's. After a change the script fetches this
 * page again and swaps the table in. The account controls of a key (expiry, allowed tools, budget)
 * are set when creating it, shown in the list, and changed or removed in the "Change limits"
 * dialog (PATCH /keys/{id}: only the fields changed are sent, an emptied one as null); the API's
 * checks (unknown tool names, an expiry in the past) answer the form. The key this session was
 * opened with is marked: revoking it or giving it limits ends the session (session.ts), and its
 * dialogs say so first.
 */
const date = (iso: string | null) =>
  iso ? `<time datetime="${iso}">${iso.replace("T", " ").slice(0, 16)} UTC</time>` : "—";

export async function renderKeysPage(
  services: Services,
  current: DashboardSession,
): Promise<string> {
  const records = await services.store.listKeys(current.account.id);
  // The key the API keeps unless forced (409 last_active_key): the revoke dialog warns, then forces.
  const lastActive = records.find((key) => isLastActiveKey(records, key))?.id;
  const keys = records
    .map((key) => keyView(key))
    .sort((a, b) => (b.created_at ?? "").localeCompare(a.created_at ?? ""));
  const active = keys.filter((k) => k.status === "active").length;
  const rows = keys
    .map((k) => {
      const label = `${k.prefix}…${k.last4}`;
      const ours = k.id === current.session.keyId ? ` data-session-key="true"` : "";
      const actions =
        k.status === "revoked"
          ? ""
          : `<div class="actions"><button type="button" class="secondary" data-action="edit-limits" data-key-id="${esc(k.id)}" data-key-label="${esc(label)}" data-expires-at="${esc(k.expires_at ?? "")}" data-allowed-tools="${esc(k.allowed_tools?.join(", ") ?? "")}" data-budget-credits="${k.budget?.credits ?? ""}" data-budget-period="${k.budget?.period ?? "day"}"${ours}>Change limits</button>` +
            // Only an active key rotates: one rotating already, or expired, is refused (409, 422).
            (k.status === "active"
              ? `<button type="button" class="secondary" data-action="rotate-key" data-key-id="${esc(k.id)}" data-key-label="${esc(label)}"${ours}>Rotate</button>`
              : "") +
            `<button type="button" class="danger" data-action="revoke-key" data-key-id="${esc(k.id)}" data-key-label="${esc(label)}" data-last-active="${k.id === lastActive}"${ours}>Revoke</button></div>`;
      return `<tr data-key-id="${esc(k.id)}"><td dir="auto">${esc(k.name ?? "—")}${ours ? ` <span class="muted">(you signed in with it)</span>` : ""}</td><td><code>${esc(k.prefix)}</code></td><td><code>${esc(k.last4)}</code></td><td>${date(k.created_at)}</td><td>${date(k.last_used_at)}</td><td class="status">${k.status}${k.status === "expiring" ? ` (until ${date(k.revoked_at)})` : ""}</td><td class="expires">${date(k.expires_at)}</td><td class="tools">${k.allowed_tools ? k.allowed_tools.map((t) => `<code>${esc(t)}</code>`).join(" ") : "all"}</td><td class="budget">${k.budget ? `${k.budget.spent} of ${k.budget.credits} credits per ${k.budget.period}` : "—"}</td><td>${actions}</td></tr>`;
    })
    .join("");
  const body = `
<section aria-labelledby="create-heading"><h2 id="create-heading">Create a key</h2>
<form id="create-key"><label for="key-name">Name (optional)</label><input id="key-name" name="name" type="text" maxlength="64" autocomplete="off">
<fieldset class="stacked"><legend>Limits (optional)</legend>
<p class="muted" id="limits-help">A key with limits calls tools within them, and cannot manage keys.</p>
<label for="key-expires">Expires at (your local time)</label><input id="key-expires" name="expires_at" type="datetime-local" max="9999-12-31T23:59" aria-describedby="limits-help">
<label for="key-tools">Allowed tools (names separated by commas; empty: every tool)</label><input id="key-tools" name="allowed_tools" type="text" autocomplete="off" placeholder="hash, qr-code">
<label for="key-budget">Budget in credits</label><input id="key-budget" name="budget_credits" type="number" min="1" max="${MAX_KEY_BUDGET_CREDITS}" step="1" inputmode="numeric">
<label for="key-budget-period">Budget period</label><select id="key-budget-period" name="budget_period"><option value="day">per day (UTC)</option><option value="month">per calendar month (UTC)</option></select>
</fieldset>
<p><button type="submit">Create key</button></p></form>
<div id="new-key" hidden><p class="warning" id="new-key-label">Copy this key now: it is shown only once.</p><code class="secret" id="new-key-secret"></code><button type="button" class="secondary" data-copy="new-key-secret">Copy</button></div>
</section>
<section aria-labelledby="keys-heading"><h2 id="keys-heading">Your keys</h2>
<div class="table-wrap" tabindex="0" role="region" aria-labelledby="keys-heading"><table id="keys-table" data-refresh><caption class="muted">${active} active key${active === 1 ? "" : "s"}</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Prefix</th><th scope="col">Last four</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Status</th><th scope="col">Expires</th><th scope="col">Tools</th><th scope="col">Budget</th><th scope="col">Actions</th></tr></thead>
<tbody>${rows}</tbody></table></div></section>
<dialog id="limits-dialog" aria-labelledby="limits-title"><form id="limits-form"><h2 id="limits-title">Limits of key <span class="key-label"></span></h2>
<p class="muted" id="limits-edit-help">Empty a field to remove that limit. Changes apply from the key's next call, on every server.</p>
<p class="notice error" id="limits-error" role="alert" hidden></p>
<p class="warning session-key-warning" hidden>You signed in with this key: a key with limits opens no dashboard session, so saving limits signs you out here.</p>
<label for="limits-expires">Expires at (your local time)</label><input id="limits-expires" name="expires_at" type="datetime-local" max="9999-12-31T23:59" aria-describedby="limits-edit-help">
<label for="limits-tools">Allowed tools (names separated by commas; empty: every tool)</label><input id="limits-tools" name="allowed_tools" type="text" autocomplete="off">
<label for="limits-budget">Budget in credits (empty: no budget)</label><input id="limits-budget" name="budget_credits" type="number" min="1" max="${MAX_KEY_BUDGET_CREDITS}" step="1" inputmode="numeric">
<label for="limits-budget-period">Budget period</label><select id="limits-budget-period" name="budget_period"><option value="day">per day (UTC)</option><option value="month">per calendar month (UTC)</option></select>
<p class="actions"><button type="submit">Save limits</button><button type="button" class="secondary" data-action="clear-limits">Remove all limits</button><button type="button" class="secondary" data-action="close-dialog">Cancel</button></p></form></dialog>
<dialog id="rotate-dialog" aria-labelledby="rotate-title"><form method="dialog"><h2 id="rotate-title">Rotate key <span class="key-label"></span></h2>
<p>A new key is created now. The old key keeps working for:</p>
<p class="warning session-key-warning" hidden>You signed in with this key: once it stops, so does this session (sign in again with the new key).</p>
<label for="rotate-grace">Grace period</label><select id="rotate-grace" name="grace"><option value="0">None: it stops now (regenerate)</option><option value="3600">1 hour</option><option value="86400">1 day</option><option value="604800">7 days</option></select>
<p class="actions"><button value="confirm">Rotate</button><button value="cancel" class="secondary" formnovalidate>Cancel</button></p></form></dialog>
<dialog id="revoke-dialog" aria-labelledby="revoke-title"><form method="dialog"><h2 id="revoke-title">Revoke key <span class="key-label"></span>?</h2>
<p>Every call with this key fails from now on, on every server. This cannot be undone.</p>
<p class="warning session-key-warning" hidden>You signed in with this key: revoking it signs you out here too.</p>
<p class="warning" id="last-key-warning" hidden>This is your last key without limits, the only one that can manage keys through the API. Without it, no program can create, change or revoke keys (nor, if it is your only key, call the API) until you create another key here (you can still sign in to the dashboard with a link e-mailed to your account's address).</p>
<p class="actions"><button value="confirm" class="danger">Revoke</button><button value="cancel" class="secondary" autofocus>Cancel</button></p></form></dialog>`;
  return dashboardPage(current, {
    basePath: services.config.basePath,
    title: "API keys",
    path: "/dashboard/keys",
    body,
  });
}
