import { afterAll, beforeAll, expect, it } from "vitest";
import { startFakeLlm } from "../helpers/fake-providers.js";
import {
  call,
  callTool,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";

/**
 * "Provider of …" on the status page reads degraded when the provider fails (a real HTTP server
 * speaking the OpenAI API answering 5xx), and not when calls fail for what their callers asked:
 * such calls are refunded, so anyone could otherwise degrade the page, and its uptime, for free.
 */
const INTERVAL_MS = 300;
let llm: Awaited<ReturnType<typeof startFakeLlm>>;
let gw: TestGateway;
let key: string;
beforeAll(async () => {
  llm = await startFakeLlm();
  gw = await startGateway({
    // ai-extract's deadline short, for the provider that hangs.
    env: { STATUS_CHECK_INTERVAL_MS: String(INTERVAL_MS), TOOL_TIMEOUTS: "ai-extract=1500" },
    workerEnv: { AI_BASE_URL: `${llm.url}/v1`, AI_MODEL: "m", AI_API_KEY: "sk-test" },
  });
  ({ key } = await fundedAccount(gw.url, 1000));
});
afterAll(async () => {
  await gw?.stop();
  await llm?.stop();
});

const providerComponent = async () =>
  (await call(`${gw.url}/status.json`)).body.components.find(
    (c: { id: string }) => c.id === "provider-ai-extract",
  ) as { state: string; detail: string | null };

/** Every state the component shows over `ms` (the page is read more often than it is checked). */
async function statesOver(ms: number): Promise<Set<string>> {
  const states = new Set<string>();
  const until = Date.now() + ms;
  while (Date.now() < until) {
    states.add((await providerComponent()).state);
    await new Promise((r) => setTimeout(r, 40));
  }
  return states;
}

/**
 * The component as soon as it reads degraded, watched from the call on (a round with no failure
 * in it reads operational again), or as it reads after 15 s: a round lasts as long as its slowest
 * check, which on a loaded machine is much longer than the interval.
 */
async function firstDegraded(): Promise<{ state: string; detail: string | null }> {
  const until = Date.now() + 15_000;
  let component = await providerComponent();
  while (component.state !== "degraded" && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 40));
    component = await providerComponent();
  }
  return component;
}

const extract = (schema: unknown) => callTool(gw.url, key, "ai-extract", { text: "hello", schema });

it("stays operational when calls fail for what the caller asked: an answer its schema refuses, an input the provider finds invalid or too large", async () => {
  // Once a round has run (the first can take longer than the interval on a loaded machine), the
  // component is checked and operational.
  for (const until = Date.now() + 15_000; Date.now() < until; ) {
    if ((await providerComponent()).state !== "unknown") break;
    await new Promise((r) => setTimeout(r, 40));
  }
  expect(await statesOver(INTERVAL_MS * 2)).toEqual(new Set(["operational"]));
  llm.state.reply = () => '{"a": "x"}';
  const never = {
    type: "object",
    properties: { a: { type: "string", pattern: "^never$" } },
    required: ["a"],
  };
  for (let i = 0; i < 3; i++) {
    const res = await extract(never);
    expect([res.status, res.body.error.code]).toEqual([502, "tool_failed"]);
    expect(res.body.error.message).toContain("did not match the schema");
  }
  try {
    for (const [status, message] of [
      [400, "Invalid schema for response_format"],
      [400, "This model's maximum context length is 8192 tokens"],
    ] as const) {
      llm.state.status = status;
      llm.state.errorJson = { error: { message } };
      const res = await extract({ type: "object" });
      expect([res.status, res.body.error.code]).toEqual([502, "tool_failed"]);
    }
  } finally {
    llm.state.status = 200;
  }
  expect(await statesOver(INTERVAL_MS * 4)).toEqual(new Set(["operational"]));
});

it("reads degraded when the provider itself fails (its 5xx), and recovers", async () => {
  llm.state.status = 500;
  llm.state.errorJson = { error: { message: "upstream overloaded", type: "server_error" } };
  try {
    const watched = firstDegraded();
    for (let i = 0; i < 3; i++) {
      const res = await extract({ type: "object" });
      expect([res.status, res.body.error.code]).toEqual([502, "tool_failed"]);
    }
    const seen = await watched;
    expect(seen.state).toBe("degraded");
    expect(seen.detail).toMatch(/provider failed calls of 1 account/);
  } finally {
    llm.state.status = 200;
  }
  llm.state.reply = () => '{"a": "x"}';
  expect((await extract({ type: "object" })).status).toBe(200);
  const until = Date.now() + 15_000;
  while ((await providerComponent()).state !== "operational" && Date.now() < until)
    await new Promise((r) => setTimeout(r, 40));
  expect((await providerComponent()).state).toBe("operational");
});

it("reads degraded when the provider hangs: its calls end at the tool's deadline", async () => {
  llm.state.delayMs = 5_000;
  try {
    const seen = firstDegraded();
    for (let i = 0; i < 2; i++) {
      const res = await extract({ type: "object" });
      expect([res.status, res.body.error.code]).toEqual([504, "tool_timeout"]);
    }
    expect((await seen).state).toBe("degraded");
  } finally {
    llm.state.delayMs = 0;
  }
}, 30_000);
