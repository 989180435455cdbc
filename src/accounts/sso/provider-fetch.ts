import { lazyRequire } from "../../lib/lazy-require.js";
import { hostReasonWithoutDns } from "../../tools/custom/target.js";
import { guardedLookup } from "../../webhooks/ssrf.js";

/**
 * The only way Toolgate talks to a customer's identity provider: openid-client's `customFetch`,
 * through the webhooks' SSRF guard. Every request (discovery, JWKS, token) must be HTTPS, every
 * address its host resolves to must be public (checked at connect time, so a host that
 * re-resolves to a private address is refused too; an IP-literal host is checked here, as no DNS
 * lookup sees it), redirects are never followed (openid-client asks for `redirect: "manual"`),
 * and an answer larger than `MAX_PROVIDER_RESPONSE_BYTES` is cut off. SSO_ALLOW_PRIVATE_TARGETS
 * (development and tests) opens loopback and private networks, never plain HTTP.
 *
 * A provider fetch owns a connection pool: `close()` it when the sign-in step is over.
 */
export const MAX_PROVIDER_RESPONSE_BYTES = 1024 * 1024;

/** The provider could not be reached (refused address, DNS, connection, TLS, oversize answer). */
export class ProviderUnreachableError extends Error {}

export interface ProviderFetch {
  fetch: (url: string, options: RequestInit) => Promise<Response>;
  close(): Promise<void>;
}

/** undici, loaded by the first sign-on step (see provider.ts). */
const undici = lazyRequire<typeof import("undici")>("undici");

export function providerFetch(allowPrivate: boolean): ProviderFetch {
  const { Agent, fetch: undiciFetch } = undici();
  const dispatcher = new Agent({
    connect: { lookup: guardedLookup(allowPrivate) as never, timeout: 10_000 },
  });
  return {
    async fetch(url, options) {
      const target = new URL(url);
      if (target.protocol !== "https:")
        throw new ProviderUnreachableError(`${target.origin} is not HTTPS`);
      const refused = hostReasonWithoutDns(target, allowPrivate);
      if (refused) throw new ProviderUnreachableError(`${target.host} is not allowed: ${refused}`);
      let response: Awaited<ReturnType<typeof undiciFetch>>;
      try {
        response = await undiciFetch(url, {
          ...(options as Parameters<typeof undiciFetch>[1]),
          dispatcher,
          redirect: "manual",
        });
      } catch (err) {
        // undici reports "fetch failed" and keeps the reason (the guard's refusal among them) as the cause.
        if ((err as Error).name === "TimeoutError" || (err as Error).name === "AbortError")
          throw err;
        const cause = (err as Error).cause as Error | undefined;
        throw new ProviderUnreachableError(
          `${target.host} could not be reached: ${cause?.message ?? (err as Error).message}`,
        );
      }
      return limitedResponse(response as unknown as Response, target.host);
    },
    close: () => dispatcher.close(),
  };
}

/** The same answer, failing once its body passes the size limit. */
function limitedResponse(response: Response, host: string): Response {
  if (!response.body) return response;
  let seen = 0;
  const limited = response.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength;
        if (seen > MAX_PROVIDER_RESPONSE_BYTES)
          controller.error(
            new ProviderUnreachableError(
              `${host} answered with more than ${MAX_PROVIDER_RESPONSE_BYTES} bytes`,
            ),
          );
        else controller.enqueue(chunk);
      },
    }),
  );
  return new Response(limited, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}
