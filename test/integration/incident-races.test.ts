import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, startGateway, type TestGateway } from "../helpers/gateway.js";

/**
 * Updates to one incident posted at the same moment, with its resolution among them, on a gateway
 * on Redis and on the embedded mode's memory store: every update answered 200 is kept, none after
 * the resolution is accepted, and a resolved incident stays resolved.
 */
describe.each(["redis", "memory"] as const)("racing incident updates (%s store)", (store) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ store });
  });
  afterAll(async () => {
    await gw.stop();
  });

  const RACERS = 8;
  const post = (id: string, i: number) =>
    admin(gw.url, `/incidents/${id}/updates`, {
      body: { status: "identified", message: `update ${i}` },
    });

  it("openings racing under one Idempotency-Key open one incident; the others answer it, replayed", async () => {
    const headers = { "idempotency-key": `race-${Date.now()}` };
    const body = { title: "Raced opening", message: "m" };
    const answers = await Promise.all(
      Array.from({ length: RACERS }, () => admin(gw.url, "/incidents", { body, headers })),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([...Array(RACERS - 1).fill(200), 201]);
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
    expect(answers.filter((a) => a.headers.get("idempotent-replayed") === "true")).toHaveLength(
      RACERS - 1,
    );
  });

  it("keeps every update answered 200", async () => {
    const opened = (await admin(gw.url, "/incidents", { body: { title: "t", message: "m" } })).body;
    const answers = await Promise.all(Array.from({ length: RACERS }, (_, i) => post(opened.id, i)));
    expect(answers.map((a) => a.status)).toEqual(Array(RACERS).fill(200));
    const last = await post(opened.id, RACERS);
    expect(last.body.updates.map((u: { message: string }) => u.message).sort()).toEqual(
      ["m", ...Array.from({ length: RACERS + 1 }, (_, i) => `update ${i}`)].sort(),
    );
  });

  it("a resolution racing updates: the incident ends resolved, holding the updates accepted before it and none after", async () => {
    for (let round = 0; round < 3; round++) {
      const opened = (await admin(gw.url, "/incidents", { body: { title: "t", message: "m" } }))
        .body;
      const answers = await Promise.all([
        ...Array.from({ length: RACERS / 2 }, (_, i) => post(opened.id, i)),
        admin(gw.url, `/incidents/${opened.id}/resolve`, { body: { message: "fixed" } }),
        ...Array.from({ length: RACERS / 2 }, (_, i) => post(opened.id, RACERS / 2 + i)),
      ]);
      const resolved = answers[RACERS / 2]!;
      expect(resolved.status).toBe(200);
      const updates = answers.filter((_answer, i) => i !== RACERS / 2);
      for (const a of updates) expect([200, 422]).toContain(a.status);
      const accepted = updates
        .filter((a) => a.status === 200)
        .map((a) => a.body.updates.at(-1).message);
      // Resolving again changes nothing and shows the incident as it is kept.
      const kept = (await admin(gw.url, `/incidents/${opened.id}/resolve`, { body: {} })).body;
      expect(kept.resolved_at).toBe(resolved.body.resolved_at);
      const messages = kept.updates.map((u: { message: string }) => u.message);
      expect(messages.at(-1)).toBe("fixed");
      expect(messages.slice(1, -1).sort()).toEqual(accepted.sort());
    }
  });
});
