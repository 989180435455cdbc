import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP } from "node:net";
import ipaddr from "ipaddr.js";

/**
 * The SSRF guard for webhook URLs. A target must be HTTPS and every address its host resolves
 * to must be public unicast: no loopback, private, link-local (cloud metadata), CGNAT,
 * multicast, broadcast, reserved or unspecified range, in IPv4 or IPv6, including IPv4-mapped
 * and NAT64 forms. Numeric-host tricks (2130706433, 0x7f.1, 127.1) are normalised by the
 * WHATWG URL parser before the check. The same rule runs again inside the delivery agent's DNS
 * lookup, so a host that re-resolves to a private address later (DNS rebinding) is refused
 * at connect time.
 */
export class BlockedTargetError extends Error {}

/** Why an address may not be a webhook target, or null when it may. */
export function blockedReason(address: string, allowPrivate: boolean): string | null {
  if (!ipaddr.isValid(address)) return "not an IP address";
  let ip = ipaddr.parse(address);
  if (ip.kind() === "ipv6") {
    const v6 = ip as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) ip = v6.toIPv4Address();
    else if (v6.range() === "rfc6052" || v6.range() === "6to4" || v6.range() === "teredo") return `${v6.range()} addresses embed other addresses`;
  }
  const range = ip.range();
  if (range === "unicast") return null;
  // The development/test escape hatch opens loopback and private networks, never metadata or multicast.
  if (allowPrivate && ["loopback", "private", "uniqueLocal"].includes(range)) return null;
  return `${address} is in the ${range} range`;
}

/** Checks a URL's form and every address its host resolves to now. */
export async function checkWebhookUrl(raw: string, allowPrivate: boolean): Promise<{ ok: true; url: URL } | { ok: false; reason: string }> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: "not a URL" };
  }
  if (url.protocol !== "https:") return { ok: false, reason: "webhook URLs must use https" };
  if (url.username || url.password) return { ok: false, reason: "credentials in the URL are not allowed" };
  const host = url.hostname.replace(/^\[|\]$/g, "");
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    try {
      addresses = (await new Promise<LookupAddress[]>((resolve, reject) => dnsLookup(host, { all: true }, (err, list) => (err ? reject(err) : resolve(list))))).map((a) => a.address);
    } catch {
      return { ok: false, reason: `${host} does not resolve` };
    }
  }
  for (const address of addresses) {
    const reason = blockedReason(address, allowPrivate);
    if (reason) return { ok: false, reason };
  }
  return { ok: true, url };
}

/** A `lookup` for http(s) agents that refuses blocked addresses at connect time. */
export function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: object, callback: (err: Error | null, address: string | LookupAddress[], family?: number) => void) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, "");
      for (const a of addresses) {
        const reason = blockedReason(a.address, allowPrivate);
        if (reason) return callback(new BlockedTargetError(`refused to connect to ${hostname}: ${reason}`), "");
      }
      if ((options as { all?: boolean }).all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}
