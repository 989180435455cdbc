import { describe, expect, it } from "vitest";
import { PERIOD_MS } from "../../src/accounts/tiers.js";
import { newAccountId, newRequestId } from "../../src/lib/ids.js";
import { tierLimits } from "../../src/store/index.js";
import { createMemoryStore } from "../../src/store/memory.js";

/**
 * The embedded store (`npm start`, no Redis) names ledger entries `<ms>-<sequence>`, as a Redis
 * stream does, and pages through them by that id. Its clock is the machine's, which NTP can step
 * back.
 */
describe("the in-memory store's ledger ids", () => {
  it("never go back in time: after the clock steps back, paging one entry at a time still lists every entry once, newest first", async () => {
    const clock = { now: Date.UTC(2026, 10, 1) };
    const store = createMemoryStore({
      tiers: tierLimits(),
      periodMs: PERIOD_MS,
      now: () => clock.now,
    });
    const accountId = newAccountId();
    await store.createAccount(
      { id: accountId, email: `${accountId}@example.com`, tier: "free" },
      { amount: 0, requestId: newRequestId(clock.now), reason: "opened" },
      [],
    );
    const grant = (reason: string) =>
      store.topUp(accountId, "grant", { amount: 1, requestId: newRequestId(clock.now), reason });
    clock.now += 1000;
    await grant("before the step");
    clock.now -= 60_000; // the clock is stepped back a minute
    await grant("after the step");
    await grant("later still");

    const reasons: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await store.ledger(accountId, { cursor, limit: 1 });
      reasons.push(...page.items.map((e) => e.reason));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect(reasons).toEqual(["later still", "after the step", "before the step", "opened"]);
  });
});
