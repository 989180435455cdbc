import { createHash } from "node:crypto";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  admin,
  balanceOf,
  call,
  callTool,
  eventsOf,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";
import { startFakeLlm } from "../helpers/fake-providers.js";
import { callFingerprint } from "../../src/tools/invoke.js";
import { callToolOverMcp } from "../helpers/mcp.js";
import { readServerTiming } from "../helpers/server-timing.js";

let llm: Awaited<ReturnType<typeof startFakeLlm>>;
let gw: TestGateway;
beforeAll(async () => {
  llm = await startFakeLlm();
  gw = await startGateway({
    workerEnv: { AI_BASE_URL: `${llm.url}/v1`, AI_MODEL: "test-model" },
    env: { TOOL_TIMEOUTS: "ai-summarize=400" },
  });
});
afterAll(async () => {
  await gw.stop();
  await llm.stop();
});

const usage = async (key: string) =>
  (await call(`${gw.url}/api/v1/usage?limit=100`, { key })).body.data as {
    kind: string;
    amount: number;
    tool: string | null;
  }[];
/** The account's events once sign-up's agent.registered and `more` others have been relayed. */
const events = (accountId: string, more: number) =>
  eventsOf(gw.services.store, accountId, 1 + more);

/**
 * POSTs with `Expect: 100-continue`, sending the body only once the gateway says "100 Continue"
 * (as curl does for large bodies, and some HTTP clients always); `continued`: whether it did.
 * A body declared by `headers` is never sent (status 0 when it was asked for).
 */
const sendExpectingContinue = (path: string, headers: Record<string, string>) =>
  new Promise<{ status: number; body: string; continued: boolean }>((resolve, reject) => {
    let continued = false;
    const req = request(`${gw.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", expect: "100-continue", ...headers },
      timeout: 4_000,
    });
    req.on("continue", () => {
      continued = true;
      // A body declared larger than the one sent here is not sent: asking for it is the failure.
      if (headers["content-length"]) {
        resolve({ status: 0, body: "", continued });
        req.destroy();
      } else req.end(JSON.stringify({ text: "a" }));
    });
    req.on("timeout", () => req.destroy(new Error("no answer within 4 s")));
    req.on("error", reject);
    req.on("response", (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk) => (body += chunk));
      res.on("end", () => {
        resolve({ status: res.statusCode!, body, continued });
        req.destroy();
      });
    });
  });

describe("POST /v1/tools/{name}", () => {
  it("charges the tool's price on success, with the balance in the headers", async () => {
    const { key } = await fundedAccount(gw.url, 100);
    const res = await callTool(gw.url, key, "hash", { text: "a" });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-credits-charged")).toBe("1");
    expect(res.headers.get("x-credits-remaining")).toBe("99");
    expect(await balanceOf(gw.url, key)).toBe(99);
    expect((await usage(key))[0]).toMatchObject({
      kind: "debit",
      amount: -1,
      tool: "hash",
      reason: "tool call",
    });
  });

  it("serves a call sent with Expect: 100-continue, on the keyed lane and through express alike", async () => {
    const { key } = await fundedAccount(gw.url, 100);
    for (const path of ["/v1/tools/hash", "/v1/tools/hash?via=express"]) {
      const res = await sendExpectingContinue(path, { "x-api-key": key });
      expect(res.continued).toBe(true);
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body).digest).toBe(
        "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb",
      );
    }
    expect(await balanceOf(gw.url, key)).toBe(98);
  });

  it("refuses a body it would not read without asking for it: no 100 Continue before the refusal", async () => {
    const { key } = await fundedAccount(gw.url, 100);
    const cases = [
      // Declared over the body limit (1 MB here): 413, on the keyed lane and through express.
      ["/v1/tools/hash", { "x-api-key": key, "content-length": "5000000" }, 413, "body_too_large"],
      [
        "/v1/tools/hash?via=express",
        { "x-api-key": key, "content-length": "5000000" },
        413,
        "body_too_large",
      ],
      [
        "/v1/tools/hash",
        { "x-api-key": key, "content-type": "text/plain" },
        415,
        "unsupported_media_type",
      ],
      [
        "/dashboard/sign-in",
        { "content-type": "application/x-www-form-urlencoded", "content-length": "5000000" },
        413,
        null,
      ],
      ["/dashboard/sign-in", { "content-type": "application/json" }, 415, null],
    ] as const;
    for (const [path, headers, status, code] of cases) {
      const res = await sendExpectingContinue(path, headers);
      expect([path, res.continued, res.status]).toEqual([path, false, status]);
      if (code) expect(JSON.parse(res.body).error.code).toBe(code);
    }
    expect(await balanceOf(gw.url, key)).toBe(100);
  });

  it("says where a call's time went in Server-Timing: the tool's worker apart from the gateway, a replay the gateway alone", async () => {
    const { key } = await fundedAccount(gw.url, 100);
    llm.state.delayMs = 300;
    try {
      const headers = { "idempotency-key": `timed-${Date.now()}` };
      const sent = performance.now();
      const res = await callTool(gw.url, key, "ai-generate", { prompt: "timed" }, headers);
      const seen = performance.now() - sent;
      expect(res.status).toBe(200);
      const first = readServerTiming(res.headers.get("server-timing"));
      expect(Object.keys(first)).toEqual(["tool", "gateway"]);
      // The provider's 300 ms are the tool's; what the gateway took is the rest of what the client saw.
      expect(first.tool).toBeGreaterThanOrEqual(300);
      expect(first.gateway).toBeGreaterThan(0);
      expect(first.tool! + first.gateway!).toBeLessThanOrEqual(seen);
      expect(first.gateway).toBeLessThan(300);

      const replay = await callTool(gw.url, key, "ai-generate", { prompt: "timed" }, headers);
      expect(replay.headers.get("idempotent-replayed")).toBe("true");
      const again = readServerTiming(replay.headers.get("server-timing"));
      expect(Object.keys(again)).toEqual(["gateway"]);
      expect(again.gateway).toBeLessThan(300);
    } finally {
      llm.state.delayMs = 0;
    }
    // Browsers may read it cross-origin, as the other answer headers.
    const plain = await callTool(gw.url, key, "hash", { text: "a" });
    expect(plain.headers.get("access-control-expose-headers")).toContain("server-timing");
    expect(plain.headers.get("server-timing")).toMatch(
      /^tool;dur=\d+\.\d\d, gateway;dur=\d+\.\d\d$/,
    );
    // The same through express's route (a body with a charset does not take the keyed lane).
    const viaExpress = await fetch(`${gw.url}/v1/tools/hash`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json; charset=utf-8" },
      body: JSON.stringify({ text: "a" }),
    });
    expect(viaExpress.status).toBe(200);
    expect(viaExpress.headers.get("server-timing")).toMatch(
      /^tool;dur=[\d.]+, gateway;dur=[\d.]+$/,
    );
  });

  it("answers an unknown tool 404, and needs a key", async () => {
    const { key } = await fundedAccount(gw.url, 100);
    expect((await callTool(gw.url, key, "teleport", {})).body.error.code).toBe("tool_not_found");
    expect((await callTool(gw.url, undefined, "hash", { text: "a" })).body.error.code).toBe(
      "missing_api_key",
    );
    expect((await callTool(gw.url, "tg_live_bogus", "hash", { text: "a" })).body.error.code).toBe(
      "invalid_api_key",
    );
  });

  it.each([
    [{ text: 5 }, "text"],
    [{ text: "a", algorithm: "crc32" }, "algorithm"],
    [{ text: "a", colour: "blue" }, "colour"],
    [[], ""],
    [null, ""],
  ])("refuses the invalid body %j with 422 naming the field, uncharged", async (body, param) => {
    const { key } = await fundedAccount(gw.url, 100);
    const res = await callTool(gw.url, key, "hash", body);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe("validation_failed");
    if (param) expect(res.body.error.param).toBe(param);
    expect(await balanceOf(gw.url, key)).toBe(100);
    expect((await usage(key)).filter((e) => e.kind === "debit")).toEqual([]);
  });

  it("refuses a call short of credits with 402, charging nothing", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 25);
    await admin(gw.url, `/accounts/${accountId}/tier`, {
      method: "PUT",
      body: { tier: "business" },
    });
    for (let i = 0; i < 2; i++)
      expect((await callTool(gw.url, key, "ai-generate", { prompt: "hi" })).status).toBe(200);
    const res = await callTool(gw.url, key, "ai-generate", { prompt: "hi" });
    expect([res.status, res.body.error.code, res.body.error.credits_remaining]).toEqual([
      402,
      "insufficient_credits",
      5,
    ]);
    expect(await balanceOf(gw.url, key)).toBe(5);
  });

  it("refunds a provider failure once, with one tool.error", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 100);
    llm.state.status = 500;
    try {
      const res = await callTool(gw.url, key, "ai-generate", { prompt: "hi" });
      expect([res.status, res.body.error.code]).toEqual([502, "tool_failed"]);
    } finally {
      llm.state.status = 200;
    }
    expect(await balanceOf(gw.url, key)).toBe(100);
    // The refund row names the tool it refunds, as its debit does.
    expect((await usage(key)).slice(0, 2).map((e) => [e.kind, e.amount, e.tool])).toEqual([
      ["refund", 10, "ai-generate"],
      ["debit", -10, "ai-generate"],
    ]);
    const errors = (await events(accountId, 1)).filter((e) => e.event === "tool.error");
    expect(errors).toHaveLength(1);
    expect(errors[0]!.data).toMatchObject({
      tool_name: "ai-generate",
      credits_charged: 0,
      error_code: "tool_failed",
    });
  });

  it("tells the caller what kind of refusal the provider's error was, never its text (OpenAI's names the operator's organisation); a 429 is 503 worker_pool_busy with the provider's Retry-After, refunded", async () => {
    const { key } = await fundedAccount(gw.url, 100);
    const secretText = "Rate limit reached for gpt-4o in organization org-OperatorSecret123";
    llm.state.status = 429;
    llm.state.errorJson = {
      error: { message: secretText, type: "requests", code: "rate_limit_exceeded" },
    };
    llm.state.errorHeaders = { "retry-after": "7" };
    try {
      const throttled = await callTool(gw.url, key, "ai-generate", { prompt: "hi" });
      expect([
        throttled.status,
        throttled.body.error.code,
        throttled.headers.get("retry-after"),
      ]).toEqual([503, "worker_pool_busy", "7"]);
      expect(throttled.body.error.message).toBe(
        "The ai-generate tool is busy; the AI provider is rate limiting the gateway's requests (429); retry after 7 s. The call was not charged.",
      );

      llm.state.status = 401;
      llm.state.errorJson = {
        error: { message: "Incorrect API key provided: sk-proj-****abcd (org-OperatorSecret123)" },
      };
      const refused = await callTool(gw.url, key, "ai-generate", { prompt: "hi" });
      expect([refused.status, refused.body.error.code]).toEqual([502, "tool_failed"]);
      expect(refused.body.error.message).toBe(
        "The ai-generate tool failed; the AI provider refused the request: it did not accept the gateway's credentials (401). The call was not charged.",
      );

      llm.state.status = 429;
      llm.state.errorJson = {
        error: {
          message: "You exceeded your current quota (org-OperatorSecret123)",
          code: "insufficient_quota",
        },
      };
      const quota = await callTool(gw.url, key, "ai-generate", { prompt: "hi" });
      expect([quota.status, quota.body.error.code, quota.headers.get("retry-after")]).toEqual([
        502,
        "tool_failed",
        null,
      ]);
      expect(quota.body.error.message).toContain("its quota for this gateway is used up (429)");
      for (const answer of [throttled, refused, quota])
        expect(JSON.stringify(answer.body)).not.toContain("OperatorSecret");
    } finally {
      llm.state.status = 200;
      llm.state.errorHeaders = {};
    }
    expect(await balanceOf(gw.url, key)).toBe(100);
  });

  it("leaves a charged call without an Idempotency-Key refundable by a survivor however late it comes (a host down for minutes)", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 100);
    llm.state.delayMs = 2500;
    try {
      const before = llm.state.received;
      const inFlight = callTool(gw.url, key, "ai-generate", { prompt: "open" });
      await llm.reached(before + 1);
      // Open past a second (and the half-second sweep after it): written under this process, as a
      // process that then died would leave it.
      await new Promise((r) => setTimeout(r, 1700));
      const { store } = gw.services;
      const [process] = await store.silentProcesses(Date.now() + 1000);
      // A survivor that first looks ten minutes later still takes it (and refunds it).
      const taken = await store.takeOpen(process!, Date.now() + 10 * 60_000);
      expect(taken.map((c) => [c.accountId, c.tool])).toEqual([[accountId, "ai-generate"]]);
      await store.refund(accountId, { ...taken[0]!, reason: "gateway process died mid-call" });
      // The process was not dead after all: told its call was refunded, it does not answer it 200.
      expect((await inFlight).status).toBe(503);
      expect(await balanceOf(gw.url, key)).toBe(100);
    } finally {
      llm.state.delayMs = 0;
    }
  });

  it("answers 504 when the tool is too slow, refunded with tool.error", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 100);
    llm.state.delayMs = 1500;
    try {
      const started = Date.now();
      const res = await callTool(gw.url, key, "ai-summarize", { text: "long text" });
      expect([res.status, res.body.error.code]).toEqual([504, "tool_timeout"]);
      expect(Date.now() - started).toBeLessThan(1400);
    } finally {
      llm.state.delayMs = 0;
    }
    expect(await balanceOf(gw.url, key)).toBe(100);
    expect(
      (await events(accountId, 1))
        .filter((e) => e.event === "tool.error")
        .map((e) => e.data.error_code),
    ).toEqual(["tool_timeout"]);
  });
});

describe("when the tool cannot run", () => {
  it("lists an unconfigured provider tool as unavailable and answers 503 uncharged", async () => {
    const bare = await startGateway();
    try {
      const { key } = await fundedAccount(bare.url, 100);
      const listing = await call(`${bare.url}/v1/tools/ai-generate`);
      expect(listing.body).toMatchObject({
        available: false,
        unavailable_reason: "no AI provider configured",
      });
      const res = await callTool(bare.url, key, "ai-generate", { prompt: "hi" });
      expect([res.status, res.body.error.code]).toEqual([503, "tool_unavailable"]);
      expect(await balanceOf(bare.url, key)).toBe(100);
    } finally {
      await bare.stop();
    }
  });

  it("fails a call whose answer breaks off after its headers: 502 tool_failed, refunded with tool.error", async () => {
    const worker = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": "1000" });
      res.write('{"digest":"');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    await new Promise<void>((r) => worker.listen(0, "127.0.0.1", r));
    const breaking = await startGateway({
      env: { WORKERS_URL: `http://127.0.0.1:${(worker.address() as AddressInfo).port}` },
    });
    try {
      const { key, accountId } = await fundedAccount(breaking.url, 100);
      const res = await callTool(breaking.url, key, "hash", { text: "a" });
      expect([res.status, res.body.error.code]).toEqual([502, "tool_failed"]);
      expect(res.body.error.message).toMatch(/^The hash tool failed; its answer broke off/);
      expect(await balanceOf(breaking.url, key)).toBe(100);
      const errors = (await eventsOf(breaking.services.store, accountId, 2)).filter(
        (e) => e.event === "tool.error",
      );
      expect(errors.map((e) => e.data.error_code)).toEqual(["tool_failed"]);
    } finally {
      await breaking.stop();
      worker.close();
    }
  });

  it("answers MCP a tool error, refunded, when the answer cannot be written as its result (REST serves it)", async () => {
    // A valid JSON object 10,000 levels deep: MCP's SDK overflowed the stack writing it, and the
    // caller got an empty 200 with the charge kept.
    const deep = `{"digest":${"[".repeat(10_000)}${"]".repeat(10_000)}}`;
    const worker = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { "content-type": "application/json" });
      res.end(deep);
    });
    await new Promise<void>((r) => worker.listen(0, "127.0.0.1", r));
    const deepWorkers = await startGateway({
      env: { WORKERS_URL: `http://127.0.0.1:${(worker.address() as AddressInfo).port}` },
    });
    try {
      const { key, accountId } = await fundedAccount(deepWorkers.url, 100);
      const rest = await call(`${deepWorkers.url}/v1/tools/hash`, { key, body: { text: "a" } });
      expect(rest.status).toBe(200);
      expect(await balanceOf(deepWorkers.url, key)).toBe(99);
      const mcp = await callToolOverMcp(deepWorkers.url, key, "hash", { text: "a" });
      expect([mcp.isError, JSON.parse(mcp.content[0]!.text).error.code]).toEqual([
        true,
        "internal_error",
      ]);
      expect(await balanceOf(deepWorkers.url, key)).toBe(99);
      const errors = (await eventsOf(deepWorkers.services.store, accountId, 2)).filter(
        (e) => e.event === "tool.error",
      );
      expect(errors.map((e) => e.data.error_code)).toEqual(["internal_error"]);
    } finally {
      await deepWorkers.stop();
      worker.close();
    }
  });

  it("refunds with tool.error when the workers are down", async () => {
    const down = await startGateway({ env: { WORKERS_URL: "http://127.0.0.1:1" } });
    try {
      const { key, accountId } = await fundedAccount(down.url, 100);
      const res = await callTool(down.url, key, "hash", { text: "a" });
      expect([res.status, res.body.error.code]).toEqual([503, "worker_unavailable"]);
      expect(res.headers.get("retry-after")).toBe("2");
      expect(await balanceOf(down.url, key)).toBe(100);
      const errors = (await eventsOf(down.services.store, accountId, 2)).filter(
        (e) => e.event === "tool.error",
      );
      expect(errors.map((e) => e.data)).toMatchObject([
        { tool_name: "hash", credits_charged: 0, error_code: "worker_unavailable" },
      ]);
    } finally {
      await down.stop();
    }
  });
});

describe("a worker's answer larger than WORKER_MAX_RESPONSE_BYTES", () => {
  it("fails the call, refunded with tool.error, over REST and MCP alike", async () => {
    const capped = await startGateway({ env: { WORKER_MAX_RESPONSE_BYTES: "4096" } });
    try {
      const { key, accountId } = await fundedAccount(capped.url, 100);
      // 500 ULIDs are ~15 KB, past the 4 KB limit; a hash is well under it.
      const many = { kind: "ulid", count: 500 };
      expect((await callTool(capped.url, key, "hash", { text: "small" })).status).toBe(200);
      const rest = await callTool(capped.url, key, "id-generate", many);
      expect([rest.status, rest.body.error.code, rest.body.error.message]).toEqual([
        502,
        "tool_failed",
        "The id-generate tool failed; its answer is larger than 4096 bytes. The call was not charged.",
      ]);
      const result = await callToolOverMcp(capped.url, key, "id-generate", many);
      expect([result.isError, JSON.parse(result.content[0]!.text).error.code]).toEqual([
        true,
        "tool_failed",
      ]);
      expect(await balanceOf(capped.url, key)).toBe(99); // the hash alone
      const errors = (await eventsOf(capped.services.store, accountId, 3)).filter(
        (e) => e.event === "tool.error",
      );
      expect(errors.map((e) => [e.data.tool_name, e.data.error_code])).toEqual([
        ["id-generate", "tool_failed"],
        ["id-generate", "tool_failed"],
      ]);
    } finally {
      await capped.stop();
    }
  });
});

describe("Idempotency-Key", () => {
  it("runs concurrent duplicates once, charges once, and replays the answer", async () => {
    const { key } = await fundedAccount(gw.url, 100);
    llm.state.delayMs = 200;
    const before = llm.requests.length;
    try {
      const headers = { "idempotency-key": `order-${Date.now()}` };
      const results = await Promise.all(
        Array.from({ length: 6 }, () =>
          callTool(gw.url, key, "ai-generate", { prompt: "once" }, headers),
        ),
      );
      expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
      expect(new Set(results.map((r) => JSON.stringify(r.body))).size).toBe(1);
      expect(results.filter((r) => r.headers.get("idempotent-replayed") === "true")).toHaveLength(
        5,
      );
      // What each answer says it charged adds up to what was charged (10); each says the balance
      // as it stood when it answered, a replay included.
      const charged = (r: (typeof results)[number]) => [
        r.headers.get("idempotent-replayed"),
        r.headers.get("x-credits-charged"),
        r.headers.get("x-credits-remaining"),
      ];
      expect(results.map(charged).sort()).toEqual([
        [null, "10", "90"],
        ...Array(5).fill(["true", "0", "90"]),
      ]);
      await call(`${gw.url}/v1/tools/hash`, { key, body: { text: "spend one" } });
      const later = await callTool(gw.url, key, "ai-generate", { prompt: "once" }, headers);
      expect(charged(later)).toEqual(["true", "0", "89"]);
    } finally {
      llm.state.delayMs = 0;
    }
    expect(llm.requests.length - before).toBe(1);
    expect(await balanceOf(gw.url, key)).toBe(89);
  });

  it("counts each duplicate when it arrives: over the tier's limit, copies are refused at once, not once the call they wait for answers", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 100, "free");
    llm.state.delayMs = 1_500;
    try {
      const headers = { "idempotency-key": `counted-${Date.now()}` };
      const first = callTool(gw.url, key, "ai-generate", { prompt: "slow" }, headers).then(
        (res) => ({ res, at: Date.now() }),
      );
      await new Promise((r) => setTimeout(r, 200));
      const copies = await Promise.all(
        Array.from({ length: 70 }, () =>
          callTool(gw.url, key, "ai-generate", { prompt: "slow" }, headers).then((res) => ({
            res,
            at: Date.now(),
          })),
        ),
      );
      const answered = (await first).at;
      const refused = copies.filter(({ res }) => res.status === 429);
      // Free: 60 a minute, the first call one of them.
      expect(refused).toHaveLength(11);
      for (const { at } of refused) expect(at).toBeLessThan(answered);
      const replays = copies.filter(({ res }) => res.status === 200);
      expect(replays).toHaveLength(59);
      // Each states the window as it was counted on arrival: 59 different places in it.
      expect(new Set(replays.map(({ res }) => res.headers.get("ratelimit-remaining"))).size).toBe(
        59,
      );
    } finally {
      llm.state.delayMs = 0;
    }
    // Charged once (its window is spent: read from the store).
    expect((await gw.services.store.getAccount(accountId))!.balance).toBe(90);
  });

  it("refuses the same key with another body (409), and keys are per account", async () => {
    const { key } = await fundedAccount(gw.url, 100);
    const other = await fundedAccount(gw.url, 100);
    const headers = { "idempotency-key": "shared-key" };
    const first = await callTool(gw.url, key, "hash", { text: "a", algorithm: "md5" }, headers);
    expect(first.status).toBe(200);
    // The same body serialised again with its keys in another order is the same request.
    const reordered = await callTool(gw.url, key, "hash", { algorithm: "md5", text: "a" }, headers);
    expect([reordered.status, reordered.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
    // The replay was counted: its rate limit is the window's now, not the stored answer's.
    const remaining = (res: typeof first) => Number(res.headers.get("ratelimit-remaining"));
    expect(remaining(reordered)).toBe(remaining(first) - 1);
    const conflict = await callTool(gw.url, key, "hash", { text: "b", algorithm: "md5" }, headers);
    expect([conflict.status, conflict.body.error.code]).toEqual([409, "idempotency_conflict"]);
    const theirs = await callTool(gw.url, other.key, "hash", { text: "b" }, headers);
    expect([theirs.status, theirs.headers.get("idempotent-replayed")]).toEqual([200, null]);
    expect(await balanceOf(gw.url, key)).toBe(99);
  });

  it("answers without waiting for its stored copy, and a replay right after is answered from that copy", async () => {
    const { key } = await fundedAccount(gw.url, 100);
    const headers = { "idempotency-key": `unwaited-${Date.now()}` };
    const { store } = gw.services;
    const complete = store.completeIdempotent;
    let stored = false;
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    // The answer's copy is held back until the answer has come (or 5 s have passed, the old way).
    store.completeIdempotent = async (...args) => {
      await held;
      stored = true;
      return complete.apply(store, args);
    };
    const letGo = setTimeout(release, 5_000);
    try {
      const first = await callTool(gw.url, key, "hash", { text: "once" }, headers);
      expect([first.status, stored]).toEqual([200, false]);
      release();
      const replay = await callTool(gw.url, key, "hash", { text: "once" }, headers);
      expect([replay.status, replay.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
      expect(replay.body).toEqual(first.body);
    } finally {
      clearTimeout(letGo);
      store.completeIdempotent = complete;
    }
    expect(await balanceOf(gw.url, key)).toBe(99);
  });

  it("leaves a dead process's claim to the next retry when a takeover is refused: the retry that runs is not charged again", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 100);
    const other = (await call(`${gw.url}/api/v1/keys`, { method: "POST", key, body: {} })).body;
    const { store } = gw.services;
    const idempotencyKey = `takeover-${Date.now()}`;
    const input = { text: "taken over" };
    const keyHash = createHash("sha256").update(other.key).digest("hex");
    // A process claimed the key and was charged, then died: its lease (100 ms) runs out.
    const died = await store.admitIdempotent(
      {
        accountId,
        keyHash,
        cost: 1,
        requestId: "req_died_mid_call",
        tool: "hash",
        reason: "tool call",
      },
      idempotencyKey,
      {
        fingerprint: callFingerprint("hash", input),
        requestId: "req_died_mid_call",
        leaseMs: 100,
        ttlSeconds: 60,
      },
    );
    expect(died.admitted).toMatchObject({ status: "ok", charged: true });
    await new Promise((r) => setTimeout(r, 150));
    const limit = (tools: string[] | null) =>
      call(`${gw.url}/api/v1/keys/${other.id}`, {
        method: "PATCH",
        key,
        body: { allowed_tools: tools },
      });
    const headers = { "idempotency-key": idempotencyKey };
    // The retry that takes the claim over is refused (here: its key may no longer call the tool)…
    expect((await limit(["id-generate"])).status).toBe(200);
    const refused = await callTool(gw.url, other.key, "hash", input, headers);
    expect([refused.status, refused.body.error?.code]).toEqual([403, "tool_not_allowed"]);
    // …and the next one runs the call on the first attempt's debit.
    expect((await limit(null)).status).toBe(200);
    const retry = await callTool(gw.url, other.key, "hash", input, headers);
    expect([retry.status, retry.body.algorithm]).toEqual([200, "sha256"]);
    expect(await balanceOf(gw.url, key)).toBe(99);
  });

  it("lets a failed call be retried with the same key", async () => {
    const { key } = await fundedAccount(gw.url, 100);
    const headers = { "idempotency-key": `retry-${Date.now()}` };
    llm.state.status = 503;
    expect((await callTool(gw.url, key, "ai-generate", { prompt: "x" }, headers)).status).toBe(502);
    llm.state.status = 200;
    const retry = await callTool(gw.url, key, "ai-generate", { prompt: "x" }, headers);
    expect([retry.status, retry.headers.get("idempotent-replayed")]).toEqual([200, null]);
    expect(await balanceOf(gw.url, key)).toBe(90);
  });
});

describe("answers kept for Idempotency-Key replays (IDEMPOTENCY_KEPT_BYTES)", () => {
  it("keeps an account's answers up to its limit; past it, the call is served and charged once, and its retry is told the answer was not kept", async () => {
    const kept = await startGateway({ env: { IDEMPOTENCY_KEPT_BYTES: "20000" } });
    try {
      const { key } = await fundedAccount(kept.url, 100);
      const render = (n: number, id: string) =>
        callTool(
          kept.url,
          key,
          "markdown-to-html",
          { markdown: "a".repeat(n) },
          {
            "idempotency-key": id,
          },
        );
      const small = await render(5_000, "small");
      const large = await render(16_000, "large");
      expect([small.status, large.status]).toEqual([200, 200]);
      expect((large.body as { html: string }).html).toContain("a".repeat(16_000));
      const smallAgain = await render(5_000, "small");
      expect([smallAgain.status, smallAgain.headers.get("idempotent-replayed")]).toEqual([
        200,
        "true",
      ]);
      expect(smallAgain.body).toEqual(small.body);
      // The answer past the limit was served, not kept: its retry is refused, not run and charged again.
      await expect
        .poll(async () => {
          const retry = await render(16_000, "large");
          return [retry.status, retry.body.error?.code, retry.body.error?.param];
        })
        .toEqual([409, "idempotency_answer_not_kept", "Idempotency-Key"]);
      // A new key runs it again.
      const anew = await render(16_000, "large-again");
      expect([anew.status, anew.headers.get("idempotent-replayed")]).toEqual([200, null]);
      expect(await balanceOf(kept.url, key)).toBe(97);
    } finally {
      await kept.stop();
    }
  }, 30_000);
});

describe("priority queue", () => {
  it("serves a queued Pro call before an earlier Free call when the pool is saturated", async () => {
    const busy = await startGateway({
      workerEnv: { AI_BASE_URL: `${llm.url}/v1`, AI_MODEL: "test-model" },
      env: { POOL_CONCURRENCY: "1" },
    });
    try {
      const blocker = await fundedAccount(busy.url, 100, "business");
      const free = await fundedAccount(busy.url, 100, "free");
      const pro = await fundedAccount(busy.url, 100, "pro");
      llm.state.delayMs = 500;
      const first = llm.requests.length;
      const gate = busy.services.pools.gate("provider");
      const until = async (ready: () => boolean) => {
        for (let i = 0; i < 500 && !ready(); i++) await new Promise((r) => setTimeout(r, 5));
      };
      // Each step waits for the one before it: the blocker holds the slot, then Free queues, then Pro.
      const running = callTool(busy.url, blocker.key, "ai-generate", { prompt: "blocker" });
      await until(() => gate.inFlight === 1);
      const freeCall = callTool(busy.url, free.key, "ai-generate", { prompt: "free" });
      await until(() => gate.queued === 1);
      const proCall = callTool(busy.url, pro.key, "ai-generate", { prompt: "pro" });
      await until(() => gate.queued === 2);
      expect(llm.requests.length - first).toBe(1); // both were queued while the blocker ran
      const results = await Promise.all([running, freeCall, proCall]);
      expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
      expect(llm.requests.slice(first).map((r) => r.body.messages[0].content)).toEqual([
        "blocker",
        "pro",
        "free",
      ]);
    } finally {
      llm.state.delayMs = 0;
      await busy.stop();
    }
  });
});
