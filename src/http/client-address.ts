import type { IncomingMessage } from "node:http";
import ipaddr from "ipaddr.js";
import proxyAddr from "proxy-addr";

/** Whether the hop at `address` (the `hop`-th from the socket) is a proxy we trust (TRUST_PROXY). */
export type TrustProxy = (address: string, hop: number) => boolean;

/**
 * TRUST_PROXY (as config.ts checked it: false, a hop count, or proxies' addresses and subnets)
 * compiled once, as express compiles its "trust proxy" setting. The app gives this very function
 * to express (app.ts), so `req.ip` and `clientAddress` on Node's own request objects (the keyed
 * lane) name the same client.
 */
export function trustProxy(setting: false | string | number): TrustProxy {
  if (setting === false) return () => false;
  if (typeof setting === "number") return (_address, hop) => hop < setting;
  return proxyAddr.compile(setting.split(",").map((entry) => entry.trim()));
}

/** The request's client address: express's `req.ip` where express set it up, else worked out the same way. */
export const clientAddress = (req: IncomingMessage, trust: TrustProxy): string =>
  (req as { ip?: string }).ip ?? proxyAddr(req, trust);

/**
 * The address a per-address limit counts for a client address (as `clientAddress` or `req.ip`
 * gives it): an IPv6 client by its /64, the smallest block a home line or a cloud host is handed
 * (counted address by address, one /64 had as many sign-ups, 409s and requests as it has
 * addresses); an IPv4-mapped IPv6 address as the IPv4 address; an IPv4 address (or anything else)
 * as itself. Every per-address limit counts this; whatever shows the client (a log, a record)
 * keeps the full address.
 */
export function countedAddress(address: string | undefined): string {
  if (!address) return "unknown";
  if (!ipaddr.IPv6.isValid(address)) return address;
  const ip = ipaddr.IPv6.parse(address);
  if (ip.isIPv4MappedAddress()) return ip.toIPv4Address().toString();
  return `${new ipaddr.IPv6([...ip.parts.slice(0, 4), 0, 0, 0, 0]).toString()}/64`;
}

/** `clientAddress` as a per-address limit counts it (`countedAddress`). */
export const countedClientAddress = (req: IncomingMessage, trust: TrustProxy): string =>
  countedAddress(clientAddress(req, trust));
