import { isIP } from "node:net";
import { blockedReason, checkWebhookUrl, NOT_PUBLIC, portReason } from "../../webhooks/ssrf.js";

/**
 * Where an upstream tool may point: the webhook SSRF guard's rule (public addresses only, checked
 * again at connect time), with HTTPS required. The development switch
 * (UPSTREAM_ALLOW_PRIVATE_TARGETS) opens loopback and private networks, and plain http to
 * loopback only — the development receivers run on this machine.
 */
export type TargetCheck = { ok: true; url: URL } | { ok: false; reason: string };

/** Names that mean this machine whatever DNS says (RFC 6761 `localhost`, with or without its root dot). */
const isLoopbackName = (host: string) => /^(?:.+\.)?localhost\.?$/.test(host);

/** The URL's form: https, or http to a loopback host when private targets are allowed. Synchronous (no DNS). */
export function checkUpstreamForm(raw: string, allowPrivate: boolean): TargetCheck {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: "not a URL" };
  }
  if (url.username || url.password)
    return { ok: false, reason: "credentials in the URL are not allowed" };
  const port = portReason(url);
  if (port) return { ok: false, reason: port };
  if (url.protocol === "https:") return { ok: true, url };
  if (url.protocol !== "http:") return { ok: false, reason: "endpoint URLs must use https" };
  if (!allowPrivate) return { ok: false, reason: "endpoint URLs must use https" };
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const loopback =
    isLoopbackName(host) ||
    (isIP(host) !== 0 && blockedReason(host, false)?.includes("loopback") === true);
  return loopback
    ? { ok: true, url }
    : {
        ok: false,
        reason: "plain http is allowed to loopback hosts only (development); use https",
      };
}

/** The form, then every address the host resolves to now (registration time). */
export async function checkUpstreamUrl(raw: string, allowPrivate: boolean): Promise<TargetCheck> {
  const form = checkUpstreamForm(raw, allowPrivate);
  if (!form.ok) return form;
  // The address rule is the webhooks' own; it is asked about the same host over https.
  const secure = new URL(form.url);
  secure.protocol = "https:";
  const addresses = await checkWebhookUrl(secure.href, allowPrivate);
  return addresses.ok ? form : addresses;
}

/**
 * Why the URL's host is refused on its face, without asking DNS, or null: an IP literal outside the
 * allowed ranges (no DNS lookup, and so no guarded lookup, ever sees it), or `localhost`, which is
 * this machine whatever it resolves to. Asked at start-up (TOOLS_FILE: an entry refused here would
 * fail every call) and again at connect time. Any other name can be judged only by what it
 * resolves to, which changes: that stays the guarded lookup's check, on every call.
 */
export function hostReasonWithoutDns(url: URL, allowPrivate: boolean): string | null {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (isIP(host)) return blockedReason(host, allowPrivate);
  // Said as the guarded lookup says it of a name (it resolves to loopback only).
  return !allowPrivate && isLoopbackName(host) ? `${host} ${NOT_PUBLIC}` : null;
}
