import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  balanceOf,
  callTool,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";
import { startFakeLlm } from "../helpers/fake-providers.js";

/**
 * An Idempotency-Key promises at most one execution at a time: copies of a call sent together
 * wait for the first and get its answer — a failure too. The fake provider counts how often the
 * tool really ran.
 */
let llm: Awaited<ReturnType<typeof startFakeLlm>>;
let gw: TestGateway;
beforeAll(async () => {
  llm = await startFakeLlm();
  gw = await startGateway({
    workerEnv: { AI_BASE_URL: `${llm.url}/v1`, AI_MODEL: "test-model" },
  });
}, 60_000);
afterAll(async () => {
  await gw?.stop();
  await llm?.stop();
});

describe("copies of a failing call under one Idempotency-Key", () => {
  it("run it once, all get its failure, nothing is charged; a retry after the answer runs it again", async () => {
    const { key } = await fundedAccount(gw.url, 500, "pro");
    const before = await balanceOf(gw.url, key);
    llm.state.status = 503;
    llm.state.delayMs = 400; // the copies arrive while the first is running
    try {
      const idempotencyKey = randomUUID();
      const send = () =>
        callTool(
          gw.url,
          key,
          "ai-summarize",
          { text: "A long text to summarise." },
          { "idempotency-key": idempotencyKey },
        );
      const ran = llm.state.received;
      const answers = await Promise.all(Array.from({ length: 5 }, send));
      expect(llm.state.received - ran).toBe(1);
      const first = answers[0]!;
      expect(first.status).toBeGreaterThanOrEqual(500);
      for (const answer of answers)
        expect([answer.status, answer.body.error.code, answer.body.error.message]).toEqual([
          first.status,
          first.body.error.code,
          first.body.error.message,
        ]);
      expect(await balanceOf(gw.url, key)).toBe(before);

      // A retry once the answer is out is a new attempt: it runs (and fails) again, uncharged.
      const retry = await send();
      expect(retry.body.error.code).toBe(first.body.error.code);
      expect(llm.state.received - ran).toBe(2);
      expect(await balanceOf(gw.url, key)).toBe(before);
    } finally {
      llm.state.status = 200;
      llm.state.delayMs = 0;
    }
  });
});
