import { SSO_CALLBACK_PATH, ssoConnectionView } from "../accounts/sso/connection.js";
import { TIERS } from "../accounts/tiers.js";
import { esc } from "../pages/respond.js";
import type { Services } from "../services.js";
import { dashboardPage } from "./layout.js";
import type { DashboardSession } from "./session.js";

/**
 * The Single sign-on page (Business): the account's OpenID Connect connection, set up, changed or
 * turned off through the API itself (PUT and DELETE /account/sso under /dashboard/api/v1, with
 * the session as the caller: tier check, SSRF guard, discovery check, sealed secret — all the
 * API's). This file only renders; the dashboard script sends the form.
 */
const PATH = "/dashboard/sso";

export async function renderSsoPage(
  services: Services,
  current: DashboardSession,
): Promise<string> {
  const { account } = current;
  const title = "Single sign-on";
  if (!TIERS[account.tier].features.includes("sso")) {
    const body = `<p>Single sign-on lets your team sign in to this dashboard through your organisation's identity provider (OpenID Connect). It is part of the Business tier; this account is on the ${esc(TIERS[account.tier].label)} tier.</p>`;
    return dashboardPage(current, { basePath: services.config.basePath, title, path: PATH, body });
  }
  const record = await services.store.getSsoConnection(account.id);
  const view = record ? ssoConnectionView(services, record) : null;
  const redirectUri = `${services.config.publicBaseUrl}${SSO_CALLBACK_PATH}`;
  const status = view
    ? `<div class="table-wrap" tabindex="0" role="region" aria-labelledby="status-heading"><table><tbody>
<tr><th scope="row">Status</th><td>On</td></tr>
<tr><th scope="row">Issuer</th><td><code>${esc(view.issuer)}</code></td></tr>
<tr><th scope="row">Client ID</th><td><code>${esc(view.client_id)}</code></td></tr>
<tr><th scope="row">Client secret</th><td>${view.client_secret_set ? "Set (never shown)" : "Not set"}</td></tr>
<tr><th scope="row">E-mail domains</th><td>${view.email_domains.map(esc).join(", ")}</td></tr>
<tr><th scope="row">Last changed</th><td>${esc(view.updated_at.replace("T", " ").slice(0, 19))} UTC</td></tr>
</tbody></table></div>
<p><button type="button" class="danger" data-action="delete-sso">Turn single sign-on off</button></p>`
    : `<p>Single sign-on is off for this account.</p>`;
  const body = `<p>People whose e-mail address is at one of the domains below sign in to this account's dashboard through your identity provider: on the sign-in page they enter their work e-mail address.</p>
<p>Register this redirect URI for the client at your provider: <code class="secret">${esc(redirectUri)}</code></p>
<section aria-labelledby="status-heading"><h2 id="status-heading">Connection</h2><div id="sso-status" data-refresh>${status}</div></section>
<section aria-labelledby="settings-heading"><h2 id="settings-heading">${view ? "Change the connection" : "Set up single sign-on"}</h2>
<form id="sso-settings">
<label for="sso-issuer">Issuer URL</label><input id="sso-issuer" name="issuer" type="url" required placeholder="https://login.example.com" value="${esc(view?.issuer ?? "")}">
<label for="sso-client-id">Client ID</label><input id="sso-client-id" name="client_id" type="text" required spellcheck="false" value="${esc(view?.client_id ?? "")}">
<label for="sso-client-secret">Client secret</label><input id="sso-client-secret" name="client_secret" type="password" autocomplete="off" ${view ? 'placeholder="Stored: leave empty to keep it"' : "required"}>
<label for="sso-domains">E-mail domains (separated by commas)</label><input id="sso-domains" name="email_domains" type="text" required spellcheck="false" placeholder="example.com" value="${esc(view?.email_domains.join(", ") ?? "")}">
<p><button type="submit">Save</button></p></form></section>
<dialog id="delete-sso-dialog" aria-labelledby="delete-sso-title"><form method="dialog"><h2 id="delete-sso-title">Turn single sign-on off?</h2><p>Nobody can sign in through your identity provider any more, and the sessions opened through it end now.</p>${current.session.via === "sso" ? '\n<p class="warning">You signed in through it: this session ends too.</p>' : ""}
<p class="actions"><button value="confirm" class="danger">Turn off</button><button value="cancel" class="secondary" autofocus>Cancel</button></p></form></dialog>`;
  return dashboardPage(current, { basePath: services.config.basePath, title, path: PATH, body });
}
