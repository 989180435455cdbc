import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, call, startGateway, type TestGateway } from "../helpers/gateway.js";
import { startPrivateRedis } from "../helpers/redis-server.js";

/**
 * The operator's incidents while the status store's Redis is away (stopped, or frozen with
 * SIGSTOP): /status, /status.json and /status.rss still show the open ones, as last read, saying
 * since when (they showed none: the store's outage is when the notice matters); the admin routes answer 503 store_unavailable with Retry-After, as the store's other
 * routes do (they answered 500), and an opening retried under its Idempotency-Key after a 503
 * whose write landed later is the same incident, not a second one.
 */
describe("incident admin routes while Redis is away", () => {
  let redis: Awaited<ReturnType<typeof startPrivateRedis>>;
  let gw: TestGateway;
  beforeAll(async () => {
    redis = await startPrivateRedis();
    gw = await startGateway({
      env: { REDIS_URL: redis.url, STATUS_CHECK_INTERVAL_MS: "60000" },
    });
    // The first round of checks is recorded: none other comes during the tests (one a minute), so
    // the commands sent while Redis is frozen are the test's own.
    const started = Date.now();
    while (Date.now() - started < 15_000) {
      const report = (await call(`${gw.url}/status.json`)).body;
      if (report.components.every((c: { checked_at: string | null }) => c.checked_at)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  });
  afterAll(async () => {
    await gw?.stop();
    await redis?.stop();
  });

  /** Retries `send` until it is no longer 503 (Redis back, and answering again). */
  async function once503Ends(send: () => ReturnType<typeof call>) {
    const started = Date.now();
    for (;;) {
      const answer = await send();
      if (answer.status !== 503 || Date.now() - started > 15_000) return answer;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it("answer 503 store_unavailable with Retry-After while Redis is stopped", async () => {
    const opened = await admin(gw.url, "/incidents", { body: { title: "t", message: "m" } });
    expect(opened.status).toBe(201);
    await redis.kill();
    try {
      const answers = [
        await admin(gw.url, "/incidents", { body: { title: "t", message: "m" } }),
        await admin(gw.url, `/incidents/${opened.body.id}/updates`, {
          body: { status: "identified", message: "m" },
        }),
        await admin(gw.url, `/incidents/${opened.body.id}/resolve`, { body: {} }),
      ];
      for (const answer of answers) {
        expect(answer.status).toBe(503);
        expect(answer.body.error.code).toBe("store_unavailable");
        expect(answer.headers.get("retry-after")).toBe("1");
      }
      expect(answers[0]!.body.error.message).toMatch(/may still be opened/);
    } finally {
      await redis.restart();
    }
    const resolved = await once503Ends(() =>
      admin(gw.url, `/incidents/${opened.body.id}/resolve`, { body: {} }),
    );
    expect(resolved.status).toBe(200);
  });

  it("an opening answered 503 while Redis is frozen, whose write lands when it thaws, is the same incident when retried under its Idempotency-Key", async () => {
    const title = `Frozen store ${Date.now()}`;
    const body = { title, message: "Investigating." };
    const headers = { "idempotency-key": `frozen-${Date.now()}` };
    // Redis freezes just as the opening's write is sent: the write waits in Redis, unanswered.
    const store = gw.services.status.store;
    const save = store.saveIncident;
    store.saveIncident = (...args) => {
      redis.pause();
      return save(...args);
    };
    let first: Awaited<ReturnType<typeof call>>;
    try {
      first = await admin(gw.url, "/incidents", { body, headers });
    } finally {
      store.saveIncident = save;
      redis.resume();
    }
    expect(first.status).toBe(503);
    expect(first.body.error.code).toBe("store_unavailable");
    expect(first.body.error.message).toMatch(/may still be opened.*Idempotency-Key/);
    // The write Redis got before it froze runs now: the incident is opened after all.
    const started = Date.now();
    for (;;) {
      const report = (await call(`${gw.url}/status.json`)).body;
      const titles = report.incidents.active.map((i: { title: string }) => i.title);
      if (report.history_available && titles.includes(title)) break;
      if (Date.now() - started > 10_000) throw new Error(`not opened after all: ${titles}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const retry = await admin(gw.url, "/incidents", { body, headers });
    expect(retry.status).toBe(200);
    const active = (await call(`${gw.url}/status.json`)).body.incidents.active;
    expect(active.filter((i: { title: string }) => i.title === title)).toHaveLength(1);
    expect(active.find((i: { title: string }) => i.title === title).id).toBe(retry.body.id);
  });

  it("/status, /status.json and /status.rss keep showing the open incidents as last read while Redis is frozen, saying since when", async () => {
    const title = `Store trouble ${Date.now()}`;
    const opened = await admin(gw.url, "/incidents", {
      body: { title, message: "We are investigating.", impact: "major" },
    });
    expect(opened.status).toBe(201);
    const before = (await call(`${gw.url}/status.json`)).body;
    expect(before.history_available).toBe(true);
    const itemsBefore = (await (await fetch(`${gw.url}/status.rss`)).text()).split("<item>").length;
    redis.pause();
    try {
      let during = before;
      const started = Date.now();
      while (during.history_available) {
        if (Date.now() - started > 15_000) throw new Error("the store was still read");
        await new Promise((r) => setTimeout(r, 100));
        during = (await call(`${gw.url}/status.json`)).body;
      }
      expect(during.incidents.active.map((i: { id: string }) => i.id)).toContain(opened.body.id);
      expect(during.status).toBe("degraded");
      const page = await (await fetch(`${gw.url}/status`)).text();
      expect(page).toContain(title);
      const rss = await (await fetch(`${gw.url}/status.rss`)).text();
      expect(rss).toContain(title);
      expect(rss.split("<item>").length).toBe(itemsBefore);
      // Since when: the last read before Redis froze (the RSS view may have read after `before`).
      expect(before.incidents.as_of).toBe(before.updated_at);
      expect(during.incidents.as_of >= before.incidents.as_of).toBe(true);
      expect(during.incidents.as_of < during.updated_at).toBe(true);
      expect(page).toContain("may be out of date");
      expect(page).toContain(`datetime="${during.incidents.as_of}"`);
    } finally {
      redis.resume();
    }
  });
});
