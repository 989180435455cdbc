import type { IncomingMessage } from "node:http";
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
