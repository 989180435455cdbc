import { TIERS } from "../accounts/tiers.js";
import { blockedHostReason } from "../webhooks/ssrf.js";
import type { AccountRecord } from "../store/types.js";

/**
 * Dedicated workers (Business): an operator binds an account to its own worker pool, and every
 * call of that account to a catalogue tool — REST, MCP, paid, whatever the tool's pool — goes to
 * that pool and nowhere else; when it is down the call fails (refunded), never falls back to the
 * shared pools. The pool is a workers deployment, which serves the catalogue's tools only: a
 * custom or operator tool's call goes to its own endpoint, bound or not.
 *
 * The binding is a field of the account record, so the admission that already reads the account
 * (one store round trip) brings it back: routing costs no extra round trip and needs no cache.
 * It applies while the account's tier includes `dedicated_workers`; a downgrade keeps it stored
 * but unused, and an upgrade brings it back.
 */

/** The origin a call of this account must go to, or null for the shared pools. */
export function dedicatedOrigin(account: AccountRecord): string | null {
  if (!account.dedicatedWorkersUrl) return null;
  return TIERS[account.tier].features.includes("dedicated_workers")
    ? account.dedicatedWorkersUrl
    : null;
}

/**
 * A pool URL an operator may bind: http(s) origin only (no credentials, path, query or
 * fragment); HTTPS to a public address, or — with the development setting — also plain HTTP
 * and loopback or private addresses. The same rule runs again at connect time (the pools'
 * guarded agents), so a name that later resolves elsewhere is refused then.
 */
export async function checkDedicatedWorkersUrl(
  raw: string,
  allowPrivate: boolean,
): Promise<{ ok: true; origin: string } | { ok: false; reason: string }> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: "not a URL" };
  }
  if (url.protocol !== "https:" && !(allowPrivate && url.protocol === "http:"))
    return { ok: false, reason: "a dedicated worker pool must be reached over https" };
  if (url.username || url.password)
    return { ok: false, reason: "credentials in the URL are not allowed" };
  if ((url.pathname !== "/" && url.pathname !== "") || url.search || url.hash)
    return {
      ok: false,
      reason: "give the pool's origin only (scheme, host and port), with no path or query",
    };
  const blocked = await blockedHostReason(url, allowPrivate);
  return blocked ? { ok: false, reason: blocked } : { ok: true, origin: url.origin };
}
