import { afterAll, beforeAll, expect, it } from "vitest";
import { balanceOf, fundedAccount, spawnGateway, type GatewayProcess } from "../helpers/gateway.js";

/**
 * A caller that hangs up before its answer: the call still runs and is charged (its answer kept
 * for a replay under its Idempotency-Key), so the operator must find it in the request log and
 * the request metrics, as 499, or the ledger holds a debit no log line explains.
 */
let gw: GatewayProcess;
let key: string;
beforeAll(async () => {
  gw = await spawnGateway("hung-up:", { DATABASE_URL: "none" });
  ({ key } = await fundedAccount(gw.url, 100, "pro"));
}, 90_000);
afterAll(async () => {
  await gw?.stop();
});

it("logs and counts a charged call whose caller hung up before the answer, as 499", async () => {
  const before = await balanceOf(gw.url, key);
  const hangUp = new AbortController();
  const call = fetch(`${gw.url}/v1/tools/js-sandbox`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key },
    // Busy for a second and a half: the caller is long gone when it ends.
    body: JSON.stringify({
      code: "const t = Date.now(); while (Date.now() - t < 1500) {} 1",
      time_limit_ms: 5000,
    }),
    signal: hangUp.signal,
  });
  setTimeout(() => hangUp.abort(), 300);
  await expect(call).rejects.toThrow();

  let spent = 0;
  for (let waited = 0; waited < 15_000 && spent === 0; waited += 100) {
    await new Promise((r) => setTimeout(r, 100));
    spent = before - (await balanceOf(gw.url, key));
  }
  expect(spent).toBeGreaterThan(0); // it ran and was charged

  const logged = async () => {
    for (let waited = 0; waited < 5_000; waited += 100) {
      const line = gw.output
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((l) => l.msg === "request" && l.path === "/v1/tools/js-sandbox");
      if (line) return line;
      await new Promise((r) => setTimeout(r, 100)); // log lines are written in batches
    }
    return undefined;
  };
  expect(await logged()).toMatchObject({
    method: "POST",
    status: 499,
    request_id: expect.stringMatching(/^req_/),
  });
  const metrics = await fetch(`${gw.url}/metrics`).then((r) => r.text());
  expect(metrics).toMatch(
    /toolgate_http_requests_total\{[^}]*route="\/v1\/tools\/:name"[^}]*method="POST"[^}]*status="499"[^}]*\} 1/,
  );
});
