import { WorkerError } from "../errors.js";

/** How much of a provider's error body the operator's log keeps. */
const LOGGED_BODY_CHARS = 500;
/** The wait a throttled call is told when the provider does not say (or says more than a minute). */
const DEFAULT_RETRY_AFTER_S = 5;
const MAX_RETRY_AFTER_S = 60;

/**
 * The error for a provider's non-2xx answer. Its body is the operator's business — OpenAI's 429
 * names the operator's organisation, its 401 a masked key — so the caller is told only what kind
 * of refusal it was, and the operator's log gets the body. A 429 is throttling, which a retry
 * mends: 503 `provider_busy` with the provider's Retry-After (the gateway answers it as
 * `worker_pool_busy`); a 429 that says the quota is used up is a failure like any other.
 */
export async function providerRefusal(provider: string, res: Response): Promise<WorkerError> {
  const body = (await res.text().catch(() => "")).slice(0, LOGGED_BODY_CHARS);
  const logged = { provider, provider_status: res.status, provider_body: body };
  if (res.status === 429 && !/insufficient_quota|exceeded your current quota/i.test(body)) {
    const retryAfter = retryAfterOf(res.headers.get("retry-after"));
    return new WorkerError(
      503,
      "provider_busy",
      `${provider} is rate limiting the gateway's requests (429); retry after ${retryAfter} s.`,
      undefined,
      { retryAfter, logged },
    );
  }
  return new WorkerError(
    502,
    "provider_error",
    `${provider} refused the request: ${kindOf(res.status, body)} (${res.status}).`,
    undefined,
    { logged, providerUnhealthy: isUnhealthy(res.status) },
  );
}

/**
 * The error for a provider that gave no answer at all (`err`, what fetch threw): it timed out or
 * could not be reached. Either says the provider is failing whoever calls (`providerUnhealthy`).
 */
export function providerUnreachable(provider: string, err: unknown): WorkerError {
  const more = { providerUnhealthy: true };
  if ((err as Error).name === "TimeoutError")
    return new WorkerError(
      504,
      "provider_timeout",
      `${provider} did not answer in time.`,
      undefined,
      more,
    );
  return new WorkerError(
    502,
    "provider_error",
    `${provider} could not be reached.`,
    undefined,
    more,
  );
}

/**
 * Whether a refusal says the provider is failing whoever calls (its own failure or timeout, the
 * gateway's credentials or quota refused), not that it refused this request (too large, invalid:
 * what the caller sent). A quota's 429 reaches here; a throttling 429 does not.
 */
const isUnhealthy = (status: number): boolean =>
  status >= 500 || status === 408 || status === 401 || status === 403 || status === 429;

function kindOf(status: number, body: string): string {
  if (status === 429) return "its quota for this gateway is used up";
  if (status === 401 || status === 403) return "it did not accept the gateway's credentials";
  if (status === 408 || status === 504) return "it timed out";
  if (status >= 500) return "it failed";
  if (status === 413 || /context.length|too (long|large)|maximum context/i.test(body))
    return "the request is too large for it";
  if (status >= 400) return "it found the request invalid";
  return "an unexpected answer";
}

/** Retry-After in whole seconds (a date, or nothing, gets the default), at most a minute. */
function retryAfterOf(header: string | null): number {
  const seconds = Number(header);
  if (header === null || !Number.isFinite(seconds) || seconds < 0) return DEFAULT_RETRY_AFTER_S;
  return Math.min(MAX_RETRY_AFTER_S, Math.max(1, Math.ceil(seconds)));
}
