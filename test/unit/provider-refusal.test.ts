import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WorkerConfig } from "../../src/workers/config.js";
import { WorkerError } from "../../src/workers/errors.js";
import { search } from "../../src/workers/providers/search.js";
import { providerRefusal } from "../../src/workers/providers/provider-refusal.js";
import { failureOf } from "../../src/tools/invoke.js";
import { startFakeBrave } from "../helpers/fake-providers.js";

/** A provider's non-2xx answer: the caller is told its kind, the operator's log gets its body. */
const answer = (status: number, body: string, headers: Record<string, string> = {}) =>
  new Response(body, { status, headers });

describe("providerRefusal", () => {
  it("a rate limit is 503 provider_busy with the provider's Retry-After, bounded to 1-60 s (5 when it gives none or a date)", async () => {
    const cases: [Record<string, string>, number][] = [
      [{ "retry-after": "7" }, 7],
      [{ "retry-after": "0.2" }, 1],
      [{ "retry-after": "3600" }, 60],
      [{ "retry-after": "Wed, 21 Oct 2026 07:28:00 GMT" }, 5],
      [{}, 5],
    ];
    for (const [headers, seconds] of cases) {
      const err = await providerRefusal("The AI provider", answer(429, "org-Secret", headers));
      expect([err.status, err.code, err.more.retryAfter, err.message]).toEqual([
        503,
        "provider_busy",
        seconds,
        `The AI provider is rate limiting the gateway's requests (429); retry after ${seconds} s.`,
      ]);
    }
  });

  it("an exhausted quota, bad credentials, an invalid request and a failure are 502s naming the kind alone; the body goes to the log", async () => {
    const body =
      '{"error":{"message":"org-Secret: You exceeded your current quota","type":"insufficient_quota"}}';
    const quota = await providerRefusal("The AI provider", answer(429, body));
    expect([quota.status, quota.code, quota.message, quota.more]).toEqual([
      502,
      "provider_error",
      "The AI provider refused the request: its quota for this gateway is used up (429).",
      {
        logged: { provider: "The AI provider", provider_status: 429, provider_body: body },
        providerUnhealthy: true,
      },
    ]);
    const kinds: [number, string, string][] = [
      [
        401,
        "Incorrect API key provided: sk-****abcd",
        "it did not accept the gateway's credentials",
      ],
      [
        400,
        "This model's maximum context length is 8192 tokens",
        "the request is too large for it",
      ],
      [400, "Invalid schema for response_format", "it found the request invalid"],
      [500, "The server had an error", "it failed"],
    ];
    for (const [status, text, kind] of kinds) {
      const err = await providerRefusal("The AI provider", answer(status, text));
      expect(err.message).toBe(`The AI provider refused the request: ${kind} (${status}).`);
      expect(err.more.logged?.provider_body).toBe(text);
    }
  });

  it("says the provider is unhealthy for its own failures, timeouts and refusals of the gateway's credentials, not for a request it refuses as too large or invalid", async () => {
    const cases: [number, string, boolean][] = [
      [500, "The server had an error", true],
      [502, "bad gateway", true],
      [504, "timed out", true],
      [408, "request timeout", true],
      [401, "Incorrect API key provided", true],
      [403, "forbidden", true],
      [400, "This model's maximum context length is 8192 tokens", false],
      [413, "too large", false],
      [400, "Invalid schema for response_format", false],
      [422, "unprocessable", false],
    ];
    const unhealthy = await Promise.all(
      cases.map(
        async ([status, text]) =>
          (await providerRefusal("The AI provider", answer(status, text))).more.providerUnhealthy,
      ),
    );
    expect(unhealthy).toEqual(cases.map(([, , expected]) => expected));
  });

  it("the gateway answers a worker's provider_busy 503 worker_pool_busy with its Retry-After", () => {
    const err = failureOf({ name: "ai-generate" } as Parameters<typeof failureOf>[0], {
      kind: "response",
      status: 503,
      body: Buffer.from(
        JSON.stringify({
          error: {
            code: "provider_busy",
            message: "The AI provider is rate limiting.",
            retry_after: 9,
          },
        }),
      ),
    });
    expect([err.status, err.code, err.options.headers]).toEqual([
      503,
      "worker_pool_busy",
      { "Retry-After": "9" },
    ]);
  });
});

describe("the search provider", () => {
  let brave: Awaited<ReturnType<typeof startFakeBrave>>;
  beforeAll(async () => {
    brave = await startFakeBrave("right-token", []);
  });
  afterAll(() => brave.stop());

  it("refusing the gateway's key is told as such, without the provider's body", async () => {
    const config = {
      search: { provider: "brave", url: brave.url, apiKey: "wrong-token" },
    } as unknown as WorkerConfig;
    const err = await search(config, "x402", 3, 5000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkerError);
    expect((err as WorkerError).message).toBe(
      "The search provider (brave) refused the request: it did not accept the gateway's credentials (401).",
    );
    expect((err as WorkerError).more.logged?.provider_body).toContain("SUBSCRIPTION_TOKEN_INVALID");
  });
});
