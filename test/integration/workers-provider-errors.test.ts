import { afterAll, beforeAll, expect, it } from "vitest";
import { startFakeLlm } from "../helpers/fake-providers.js";
import { type GatewayProcess, spawnService } from "../helpers/gateway.js";

/**
 * A provider's error text is the operator's (OpenAI's names the organisation, its 401 the key):
 * a real workers process tells the caller the kind of refusal, and its own log the text, with
 * the provider's key cut out.
 */
const API_KEY = "sk-test-ProviderKey0123456789";
let workers: GatewayProcess;
let llm: Awaited<ReturnType<typeof startFakeLlm>>;

beforeAll(async () => {
  llm = await startFakeLlm();
  workers = await spawnService("src/workers/main.ts", "workers listening", {
    PORT: "0",
    LOG_LEVEL: "info",
    HEAVY_THREADS: "1",
    AI_BASE_URL: `${llm.url}/v1`,
    AI_MODEL: "m",
    AI_API_KEY: API_KEY,
  });
}, 60_000);
afterAll(async () => {
  await workers?.stop();
  await llm?.stop();
});

it("a provider's 401 reaches the caller as its kind alone, and the operator's log as its text without the key", async () => {
  llm.state.status = 401;
  llm.state.errorJson = {
    error: { message: `Incorrect API key provided: ${API_KEY} for organization org-Operator42` },
  };
  const res = await fetch(`${workers.url}/tools/ai-generate`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-request-id": "req_provider_401" },
    body: JSON.stringify({ prompt: "hi" }),
  });
  llm.state.status = 200;
  expect([res.status, await res.json()]).toEqual([
    502,
    {
      error: {
        code: "provider_error",
        message:
          "The AI provider refused the request: it did not accept the gateway's credentials (401).",
        // For the gateway's status page (the provider is failing whoever calls), not passed on.
        provider_unhealthy: true,
      },
    },
  ]);
  const deadline = Date.now() + 5000;
  let line: string | undefined;
  while (!line && Date.now() < deadline) {
    line = workers.output.find((l) => l.includes("req_provider_401"));
    if (!line) await new Promise((r) => setTimeout(r, 100));
  }
  const logged = JSON.parse(line!) as Record<string, unknown>;
  expect(logged).toMatchObject({
    msg: "provider refused the call",
    tool: "ai-generate",
    provider_status: 401,
  });
  expect(logged.provider_body).toContain("org-Operator42");
  expect(line).not.toContain(API_KEY);
}, 60_000);
