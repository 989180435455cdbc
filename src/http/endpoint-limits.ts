import type { Request } from "express";
import type { Services } from "../services.js";
import type { HttpResponse } from "./exchange.js";
import type { RateState } from "../store/types.js";
import { countedAddress } from "./client-address.js";
import { ApiError } from "./errors.js";

/**
 * Limits for endpoints that cost us something per call and are not counted by an account's
 * tier limit: they make Redis keys (wallet challenges), send e-mail (verification), or make
 * outbound requests (webhook test and resend). A route names its limit (`RouteDef.limit`);
 * `mountRoutes` applies it after authentication and before anything else runs. Each limit
 * counts per client address and, for a keyed caller, per account too, so neither many
 * addresses nor many keys get around it. A refusal is 429 `rate_limited` with Retry-After, in
 * the one error shape, and counts nowhere.
 *
 * Defaults below; `ENDPOINT_LIMITS=wallet-challenge=60/60,verification-email=5/3600` overrides
 * them (calls per window in seconds).
 */
export const ENDPOINT_LIMITS = {
  // Every request no account's tier counts, whatever headers it carries (http/anonymous-limit.ts):
  // pages, documents, the catalogue, a keyless call's 402 offer, /mcp without a key, a key
  // sent to a route that never reads it, junk credentials. The message keeps its old wording.
  anonymous: { count: 600, windowSeconds: 60, what: "requests without credentials" },
  // /healthz, /readyz and /metrics, per address, counted in each process's memory rather than the
  // store (http/probe-limit.ts): an orchestrator's probes must not wait on Redis, nor share an
  // address's budget with its page views.
  probes: { count: 600, windowSeconds: 60, what: "health and metrics probes" },
  // CORS preflights (OPTIONS, any path), per address, in memory too (http/cors.ts): answered from
  // memory with no store work, but an unauthenticated door like any other.
  preflights: { count: 600, windowSeconds: 60, what: "CORS preflight requests" },
  "wallet-challenge": { count: 30, windowSeconds: 60, what: "wallet sign-in challenges" },
  "wallet-claim": { count: 30, windowSeconds: 60, what: "wallet sign-in claims" },
  "verification-email": { count: 3, windowSeconds: 3600, what: "verification e-mails" },
  // The link's token is an HMAC, beyond guessing; counted anyway, as every unauthenticated door is.
  "verify-email": { count: 30, windowSeconds: 60, what: "e-mail verifications" },
  "webhook-test": { count: 20, windowSeconds: 60, what: "webhook test events" },
  "webhook-resend": { count: 30, windowSeconds: 60, what: "webhook resends" },
  // Compiling a custom tool's two schemas can take Ajv a few hundred milliseconds of the event
  // loop for a 32 KB schema it accepts (schema-cost.ts bounds the calls, not the compile).
  "custom-tool-register": { count: 20, windowSeconds: 60, what: "custom tool registrations" },
  // Sign-ups refused because the address has an account (409 email_taken): each answer says who
  // has one, so they are limited per client address (src/accounts/routes/signup.ts).
  "signup-refused": {
    count: 20,
    windowSeconds: 3600,
    what: "sign-ups refused for an address that has an account",
  },
  "dashboard-sign-in": { count: 20, windowSeconds: 60, what: "dashboard sign-in attempts" },
  "dashboard-sign-in-link": { count: 5, windowSeconds: 3600, what: "dashboard sign-in e-mails" },
  // Per recipient address, whether or not it has an account, and never refused aloud (a 429 would
  // tell who has one): past it, the form answers as always and sends nothing. The window is the
  // link's lifetime (DASHBOARD_SIGN_IN_LINK_MINUTES, 15): whoever spends it has had links sent that
  // still work, so flooding an address cannot keep its owner out.
  "dashboard-sign-in-link-recipient": {
    count: 3,
    windowSeconds: 900,
    what: "dashboard sign-in e-mails per recipient",
  },
  // Each start asks the account's identity provider for its metadata: counted per account too.
  "dashboard-sso": { count: 20, windowSeconds: 60, what: "single sign-on attempts" },
  // A keyless REST call's new payment is checked on chain before anything proves its payer, so
  // each forged one costs an RPC round trip; only refused ones count (http/refusal-limit.ts).
  "x402-refused": { count: 60, windowSeconds: 60, what: "refused x402 payments" },
  // A request whose API key (or admin key, metrics token, dashboard session cookie) is refused
  // costs a store round trip or a secret's comparison before anything proves who sent it, and no
  // account's tier counts it: only refusals count, and past the limit that address's requests
  // with credentials are 429 before they are read (http/refused-credentials.ts).
  "refused-credentials": {
    count: 60,
    windowSeconds: 60,
    what: "requests with refused credentials",
  },
} as const;

export type EndpointLimitName = keyof typeof ENDPOINT_LIMITS;
export type EndpointLimits = Record<EndpointLimitName, { count: number; windowSeconds: number }>;

export const ENDPOINT_LIMITS_PATTERN = /^([a-z0-9-]+=\d+\/\d+)(,[a-z0-9-]+=\d+\/\d+)*$/;

/** The defaults with ENDPOINT_LIMITS applied; unknown names are reported in `problems`. */
export function endpointLimits(setting: string | undefined, problems: string[]): EndpointLimits {
  const limits = Object.fromEntries(
    Object.entries(ENDPOINT_LIMITS).map(([name, l]) => [
      name,
      { count: l.count, windowSeconds: l.windowSeconds },
    ]),
  ) as EndpointLimits;
  for (const pair of setting?.split(",") ?? []) {
    const [name, value] = pair.split("=") as [string, string];
    const [count, windowSeconds] = value.split("/").map(Number) as [number, number];
    if (!(name in limits))
      problems.push(
        `ENDPOINT_LIMITS: unknown limit ${name} (known: ${Object.keys(limits).join(", ")})`,
      );
    else if (count < 1 || windowSeconds < 1)
      problems.push(`ENDPOINT_LIMITS: ${name} needs at least 1 call per at least 1 second`);
    else limits[name as EndpointLimitName] = { count, windowSeconds };
  }
  return limits;
}

/**
 * Counts one use of `name` for `subject` (what is limited, not who asks): whether it is within the
 * limit. For a limit whose refusal must not show; a refused use counts nowhere.
 */
export async function withinEndpointLimit(
  services: Services,
  name: EndpointLimitName,
  subject: string,
  requestId: string,
): Promise<boolean> {
  return (await countEndpointUse(services, name, subject, requestId)).allowed;
}

/** The store's rate-limit bucket of `name` for `subject`: what `countEndpointUse` counts in (and a caller may give back). */
export const endpointBucket = (name: EndpointLimitName, subject: string) =>
  `endpoint:${name}:${subject}`;

/** Counts one use of `name` for `subject`: the window as the store then has it. */
export function countEndpointUse(
  services: Pick<Services, "config" | "store">,
  name: EndpointLimitName,
  subject: string,
  requestId: string,
): Promise<RateState & { allowed: boolean }> {
  const { count, windowSeconds } = services.config.endpointLimits[name];
  return services.store.hitRateLimit(
    endpointBucket(name, subject),
    count,
    windowSeconds * 1000,
    requestId,
  );
}

/**
 * The 429 of a spent endpoint limit: how many per which window, for whom, the setting that
 * changes it (outside production), and when to come back (`Retry-After`, from `resetMs`).
 */
export function endpointLimitRefusal(
  services: Pick<Services, "config">,
  name: EndpointLimitName,
  whose: "account" | "client address",
  resetMs: number,
  advice = "",
): ApiError {
  const { count, windowSeconds } = services.config.endpointLimits[name];
  const per =
    windowSeconds === 60 ? "minute" : windowSeconds === 3600 ? "hour" : `${windowSeconds} s`;
  const setting =
    services.config.env === "production"
      ? ""
      : ` (ENDPOINT_LIMITS ${name}=${count}/${windowSeconds})`;
  return new ApiError(
    "rate_limited",
    `At most ${count} ${ENDPOINT_LIMITS[name].what} per ${per} per ${whose}${setting}.${advice}`,
    {
      headers: {
        ...windowHeaders({ limit: count, remaining: 0, resetMs }, windowSeconds),
        "Retry-After": String(Math.max(1, Math.ceil(resetMs / 1000))),
      },
    },
  );
}

/**
 * The RateLimit-* headers of one limiter's window, as draft-ietf-httpapi-ratelimit-headers-06
 * writes them (`RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`, `RateLimit-Policy:
 * 30;w=60`; later drafts replace the first three with one `RateLimit` field): its limit and
 * window (`RateLimit-Policy`), what is left of it, and the seconds until a slot frees. Every
 * answer to a request a limiter counted carries them (D12); a 429 adds `Retry-After`.
 */
export function windowHeaders(rate: RateState, windowSeconds: number): Record<string, string> {
  return {
    "RateLimit-Policy": `${rate.limit};w=${windowSeconds}`,
    "RateLimit-Limit": String(rate.limit),
    "RateLimit-Remaining": String(Math.max(0, rate.remaining)),
    "RateLimit-Reset": String(Math.max(0, Math.ceil(rate.resetMs / 1000))),
  };
}

/** The headers of an endpoint limit's window as `countEndpointUse` left it. */
export const endpointWindowHeaders = (
  services: Pick<Services, "config">,
  name: EndpointLimitName,
  rate: RateState,
) => windowHeaders(rate, services.config.endpointLimits[name].windowSeconds);

/**
 * Puts a limiter's window on the answer, unless the answer already shows one with fewer requests
 * left: a request counted by two limiters (the anonymous one and sign-up's, say) shows the one
 * nearer to refusing it, as the draft asks.
 */
export function showWindow(res: HttpResponse, headers: Record<string, string>): void {
  const shown = res.getHeader("RateLimit-Remaining");
  if (shown !== undefined && Number(shown) <= Number(headers["RateLimit-Remaining"])) return;
  for (const name in headers) res.setHeader(name, headers[name]!);
}

/** Whether a limiter counted this request: its answer, or the error about to be answered, shows a window. */
export function countedByALimiter(res: HttpResponse, err?: unknown): boolean {
  return (
    res.hasHeader("RateLimit-Limit") ||
    (err instanceof ApiError && err.options.headers?.["RateLimit-Limit"] !== undefined)
  );
}

/** Counts one call against `name` for the client address and the account; throws 429 when either is spent. */
export async function enforceEndpointLimit(
  services: Services,
  req: Request,
  name: EndpointLimitName,
  accountId: string | null,
  requestId: string,
): Promise<void> {
  const { count, windowSeconds } = services.config.endpointLimits[name];
  const buckets = [
    ...(accountId ? [`endpoint:${name}:account:${accountId}`] : []),
    `endpoint:${name}:ip:${countedAddress(req.ip)}`,
  ];
  const counted: string[] = [];
  const shown: RateState[] = [];
  for (const bucket of buckets) {
    const hit = await services.store.hitRateLimit(bucket, count, windowSeconds * 1000, requestId);
    if (hit.allowed) {
      counted.push(bucket);
      shown.push(hit);
      continue;
    }
    // A refused call counts nowhere: give back what it took from the other bucket.
    await Promise.all(counted.map((b) => services.store.releaseRateLimit(b, requestId)));
    const whose = bucket.includes(":account:") ? "account" : "client address";
    throw endpointLimitRefusal(services, name, whose, hit.resetMs);
  }
  if (req.res)
    for (const hit of shown) showWindow(req.res as HttpResponse, windowHeaders(hit, windowSeconds));
}
