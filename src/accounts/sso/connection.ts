import { z } from "zod";
import type { Services } from "../../services.js";
import type { SsoConnectionRecord } from "../../store/types.js";
import { checkWebhookUrl } from "../../webhooks/ssrf.js";

/**
 * A Business account's single sign-on connection: which OpenID Connect provider signs its people
 * in (the issuer, and the client registered there), and which e-mail domains may. The client
 * secret is sealed (AES-256-GCM under SECRET_KEY, as webhook secrets are) and never returned:
 * the API says only whether one is set. The redirect URI to register at the provider is
 * Toolgate's, one for every account: `<PUBLIC_BASE_URL>/dashboard/sso/callback`.
 */
export const SSO_CALLBACK_PATH = "/dashboard/sso/callback";
export const MAX_SSO_DOMAINS = 20;

/** A DNS name as e-mail addresses carry it after the @ (IDNs in their xn-- form), lower-cased. */
export const emailDomainSchema = z
  .string()
  .trim()
  .toLowerCase()
  .max(253)
  .regex(
    /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]$/,
    "an e-mail domain such as example.com",
  );

/** The domain of an e-mail address, lower-cased; null when it is not an address. */
export function emailDomainOf(email: string): string | null {
  const at = email.lastIndexOf("@");
  if (at < 1) return null;
  const domain = emailDomainSchema.safeParse(email.slice(at + 1));
  return domain.success ? domain.data : null;
}

export const ssoConnectionViewSchema = z.object({
  issuer: z.string().describe("The provider's issuer URL (its discovery document is under it)."),
  client_id: z.string(),
  client_secret_set: z
    .boolean()
    .describe("Whether a client secret is stored; the secret itself is never returned."),
  email_domains: z.array(z.string()),
  redirect_uri: z
    .string()
    .describe("The redirect URI to register for this client at the provider."),
  sign_in_url: z.string().describe("The dashboard's sign-in page, where SSO starts."),
  created_at: z.string(),
  updated_at: z.string(),
});

export function ssoConnectionView(services: Services, record: SsoConnectionRecord) {
  const base = services.config.publicBaseUrl;
  return {
    issuer: record.issuer,
    client_id: record.clientId,
    client_secret_set: record.sealedClientSecret !== "",
    email_domains: record.emailDomains,
    redirect_uri: `${base}${SSO_CALLBACK_PATH}`,
    sign_in_url: `${base}/dashboard/sign-in`,
    created_at: new Date(record.createdAt).toISOString(),
    updated_at: new Date(record.updatedAt).toISOString(),
  };
}

/**
 * An issuer URL Toolgate may call: HTTPS, no credentials, query or fragment (an OpenID issuer
 * identifier has none), and every address it resolves to public — the webhooks' SSRF guard, with
 * SSO_ALLOW_PRIVATE_TARGETS opening loopback and private networks for development and tests.
 */
export async function checkIssuerUrl(
  raw: string,
  allowPrivate: boolean,
): Promise<{ ok: true } | { ok: false; reason: string }> {
  const check = await checkWebhookUrl(raw, allowPrivate);
  if (!check.ok) return { ok: false, reason: check.reason.replace("webhook URLs", "issuer URLs") };
  if (check.url.search || check.url.hash || raw.includes("#"))
    return { ok: false, reason: "an issuer URL has no query or fragment" };
  return { ok: true };
}
