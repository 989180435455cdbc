import type { LookupAddress } from "node:dns";
import type { Agent as HttpAgent } from "node:http";
import { isIP } from "node:net";
import ipaddr from "ipaddr.js";
import { type ResolveHost, systemResolveHost } from "./resolve-host.js";

/**
 * The SSRF guard for webhook URLs. A target must be HTTPS and every address its host resolves
 * to must be public unicast: no loopback, private, link-local (cloud metadata), CGNAT,
 * multicast, broadcast, reserved or unspecified range, in IPv4 or IPv6. IPv6 must lie in the
 * global unicast space (2000::/3) outside its documentation, ORCHID and protocol-assignment
 * blocks; forms that carry an IPv4 address (IPv4-compatible, SIIT, NAT64, 6to4, Teredo) are
 * refused and named by that address; IPv4-mapped addresses are judged as the IPv4 address.
 * Numeric-host tricks (2130706433, 0x7f.1, 127.1) are normalised by the WHATWG URL parser
 * before the check. The same rule runs again when connecting (`guardAgent`): in the DNS lookup,
 * so a host that re-resolves to a private address later (DNS rebinding) is refused, and on an
 * IP-literal host, which no lookup sees, so a URL accepted while private targets were allowed is
 * refused once they are not. Names are resolved by `resolve-host.ts` (c-ares, with a deadline).
 */
export class BlockedTargetError extends Error {}

/** The ranges the development escape hatch opens: loopback and private networks, never metadata or multicast. */
const PRIVATE_RANGES = new Set(["loopback", "private", "uniqueLocal"]);

const cidr = (text: string) => ipaddr.IPv6.parseCIDR(text);
/** IANA's global unicast space; everything outside it is special, deprecated or unassigned. */
const GLOBAL_UNICAST = cidr("2000::/3");
/** RFC 8215 local-use NAT64: the IPv4 address's place depends on the operator's prefix length. */
const NAT64_LOCAL_USE = cidr("64:ff9b:1::/48");
/** Ranges inside 2000::/3 that are not ordinary public hosts (checked in order, narrowest first). */
const SPECIAL_GLOBAL: [string, [ipaddr.IPv6, number]][] = [
  ["documentation", cidr("2001:db8::/32")],
  ["documentation", cidr("3fff::/20")],
  ["ORCHID", cidr("2001:10::/28")],
  ["ORCHID", cidr("2001:20::/28")],
  ["IETF protocol assignments", cidr("2001::/23")],
  ["AS112", cidr("2620:4f:8000::/48")],
];

/** IPv6 forms that carry an IPv4 address: the form's name, and where the IPv4 address sits. */
const EMBEDDING: {
  form: string;
  range: [ipaddr.IPv6, number];
  ipv4: (bytes: number[]) => number[];
}[] = [
  // RFC 6145 SIIT (::ffff:0:a.b.c.d) and RFC 6052 NAT64 (64:ff9b::a.b.c.d): the last 32 bits.
  { form: "IPv4-translated", range: cidr("::ffff:0:0:0/96"), ipv4: (b) => b.slice(12) },
  { form: "NAT64", range: cidr("64:ff9b::/96"), ipv4: (b) => b.slice(12) },
  // RFC 3056 6to4: bits 16–47.
  { form: "6to4", range: cidr("2002::/16"), ipv4: (b) => b.slice(2, 6) },
  // RFC 4380 Teredo: the client's address, inverted, in the last 32 bits.
  { form: "Teredo", range: cidr("2001::/32"), ipv4: (b) => b.slice(12).map((x) => x ^ 0xff) },
  // RFC 4291 §2.5.5.1 IPv4-compatible (::a.b.c.d), deprecated; :: and ::1 are caught before.
  { form: "IPv4-compatible", range: cidr("::/96"), ipv4: (b) => b.slice(12) },
];

function ipv4Reason(ip: ipaddr.IPv4, allowPrivate: boolean): string | null {
  const range = ip.range();
  if (range === "unicast" || (allowPrivate && PRIVATE_RANGES.has(range))) return null;
  return `${ip.toString()} is in the ${range} range`;
}

function ipv6Reason(ip: ipaddr.IPv6, address: string, allowPrivate: boolean): string | null {
  // A mapped address is the IPv4 address itself on the wire (the socket connects over IPv4).
  if (ip.isIPv4MappedAddress()) return ipv4Reason(ip.toIPv4Address(), allowPrivate);
  const range = ip.range();
  if (range === "unspecified" || range === "loopback")
    return allowPrivate && range === "loopback" ? null : `${address} is in the ${range} range`;
  // Translation and tunnelling forms reach whatever IPv4 address they carry, through a relay or
  // gateway that does not check it: refused outright, and named by that address.
  const embedding = EMBEDDING.find((e) => ip.match(e.range));
  if (embedding) {
    const ipv4 = new ipaddr.IPv4(embedding.ipv4(ip.toByteArray()));
    const ipv4Range = ipv4.range() === "unicast" ? "public" : ipv4.range();
    return `${address} is an ${embedding.form} address of ${ipv4.toString()} (${ipv4Range}); such addresses are not allowed`;
  }
  if (ip.match(NAT64_LOCAL_USE)) return `${address} is in the NAT64 local-use range`;
  if (!ip.match(GLOBAL_UNICAST)) {
    if (allowPrivate && PRIVATE_RANGES.has(range)) return null;
    return range === "unicast"
      ? `${address} is outside the global unicast space (2000::/3)`
      : `${address} is in the ${range} range`;
  }
  const special = SPECIAL_GLOBAL.find(([, r]) => ip.match(r));
  return special ? `${address} is in the ${special[0]} range` : null;
}

/** Why an address may not be a webhook target, or null when it may. */
export function blockedReason(address: string, allowPrivate: boolean): string | null {
  const family = isIP(address);
  if (family === 4) return ipv4Reason(ipaddr.IPv4.parse(address), allowPrivate);
  if (family !== 6) return "not an IP address";
  // ipaddr.js reads any dotted tail as IPv4-mapped (`::127.0.0.1` becomes `::ffff:7f00:1`), and
  // resolvers print IPv4-compatible addresses that way: the WHATWG serialiser spells it in hex.
  let canonical: string;
  try {
    canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return "not an IP address";
  }
  return ipv6Reason(ipaddr.IPv6.parse(canonical), address, allowPrivate);
}

/** Checks a URL's form and every address its host resolves to now. */
export async function checkWebhookUrl(
  raw: string,
  allowPrivate: boolean,
  resolveHost: ResolveHost = systemResolveHost,
): Promise<{ ok: true; url: URL } | { ok: false; reason: string }> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: "not a URL" };
  }
  if (url.protocol !== "https:") return { ok: false, reason: "webhook URLs must use https" };
  if (url.username || url.password)
    return { ok: false, reason: "credentials in the URL are not allowed" };
  const reason = await blockedHostReason(url, allowPrivate, resolveHost);
  return reason ? { ok: false, reason } : { ok: true, url };
}

/**
 * What a refusal says of a host name: whoever names a URL (a webhook, an issuer, a page to read)
 * must not learn the gateway's internal DNS from it — what an internal name resolves to, or
 * whether it resolves at all. An IP literal's refusal names its range: the caller wrote it.
 */
export const NOT_PUBLIC = "does not resolve to a public address";

/**
 * Why a URL's port cannot be the target's, or null. Port 0 is no port a server listens on: an
 * HTTP client connecting to it goes to the scheme's default port instead (Node's does), so the
 * URL accepted would not be the one reached.
 */
export function portReason(url: URL): string | null {
  return url.port === "0" ? "port 0 is not a port a server can listen on" : null;
}

/** Why a URL's host may not be reached — its port is 0, it does not resolve, or one of its addresses is blocked — or null when it may. */
export async function blockedHostReason(
  url: URL,
  allowPrivate: boolean,
  resolveHost: ResolveHost = systemResolveHost,
): Promise<string | null> {
  const port = portReason(url);
  if (port) return port;
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (isIP(host)) return blockedReason(host, allowPrivate);
  let addresses: string[];
  try {
    addresses = (await resolveHost(host)).map((a) => a.address);
  } catch {
    return `${host} ${NOT_PUBLIC}`;
  }
  return addresses.some((address) => blockedReason(address, allowPrivate))
    ? `${host} ${NOT_PUBLIC}`
    : null;
}

/** A `lookup` for http(s) agents that refuses blocked addresses at connect time. */
export function guardedLookup(allowPrivate: boolean, resolveHost: ResolveHost = systemResolveHost) {
  return (
    hostname: string,
    options: { family?: number | string; all?: boolean },
    callback: (err: Error | null, address: string | LookupAddress[], family?: number) => void,
  ) => {
    // Node passes 4, 6 or 0 (either); older callers spell them "IPv4" and "IPv6".
    const family = [4, "IPv4"].includes(options.family!)
      ? 4
      : [6, "IPv6"].includes(options.family!)
        ? 6
        : 0;
    const answered = (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => {
      // A name that does not exist is refused like an internal one: the difference (a failed
      // read against a refusal) told a prober which names the gateway's network has. A DNS
      // server that did not answer (EAI_AGAIN) stays a failure worth retrying.
      const noSuchName = err?.code === "ENOTFOUND" || err?.code === "ENODATA";
      if (err && !noSuchName) return callback(err, "");
      if (noSuchName || addresses.some((a) => blockedReason(a.address, allowPrivate)))
        return callback(
          new BlockedTargetError(`refused to connect to ${hostname}: it ${NOT_PUBLIC}`),
          "",
        );
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    };
    resolveHost(hostname, family).then(
      (addresses) => answered(null, addresses),
      (err: NodeJS.ErrnoException) => answered(err, []),
    );
  };
}

/**
 * Puts an http(s) agent's connections behind the guard: a name through `guardedLookup`, and an
 * IP-literal host — which Node connects to without calling any lookup — by the same rule, with the
 * same error. One place for both halves, so no outbound client can have one without the other.
 */
export function guardAgent<A extends HttpAgent>(
  agent: A,
  allowPrivate: boolean,
  resolveHost: ResolveHost = systemResolveHost,
): A {
  const lookup = guardedLookup(allowPrivate, resolveHost);
  const connect = agent.createConnection.bind(agent);
  agent.createConnection = (options, callback) => {
    const host = String(options.host ?? "").replace(/^\[|\]$/g, "");
    const reason = isIP(host) ? blockedReason(host, allowPrivate) : null;
    if (!reason) return connect({ ...options, lookup } as never, callback);
    callback?.(new BlockedTargetError(`refused to connect to ${host}: ${reason}`), null as never);
    return undefined;
  };
  return agent;
}
