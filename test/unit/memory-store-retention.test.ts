import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { PERIOD_MS } from "../../src/accounts/tiers.js";
import { newAccountId, newRequestId } from "../../src/lib/ids.js";
import { tierLimits } from "../../src/store/index.js";
import { createMemoryStore } from "../../src/store/memory.js";
import type { PaymentRecord } from "../../src/store/types.js";
import { newKeyRecord } from "../helpers/key-records.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** The heap in use once garbage is collected. */
function heapUsed(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

const DAY = 24 * 3600 * 1000;
const CALLS = 20_000;

/**
 * The embedded store (`npm start`, no Redis) keeps a record per call: the debit a refund looks up,
 * the Idempotency-Key record, a paid call's payment, its service claim and its call index. Redis
 * expires each of these; the memory store kept them all for as long as the process ran, so memory
 * grew with every call. Now each lapses at its Redis lifetime and the store holds what is live.
 */
/** A memory store on a clock the test moves, with one account of `tier` holding `credits`. */
async function storeOnClock(tier: "free" | "business", credits: number) {
  const clock = { now: Date.UTC(2026, 10, 1) };
  const store = createMemoryStore({
    tiers: tierLimits(),
    periodMs: PERIOD_MS,
    now: () => clock.now,
  });
  const accountId = newAccountId();
  await store.createAccount(
    { id: accountId, email: `${accountId}@example.com`, tier },
    { amount: credits, requestId: newRequestId(clock.now), reason: "test" },
    [],
  );
  return { clock, store, accountId };
}

describe("the in-memory store", () => {
  it("holds only the records still live: an hour of calls two days after another takes no more memory than the first hour's", async () => {
    const { clock, store, accountId } = await storeOnClock("business", 10 * CALLS);
    const { key, record } = newKeyRecord(accountId, { createdAt: clock.now });
    await store.addKey(record);

    /** An hour of calls, each keyed, debited, answered, paid for with x402; the books take the ledger. */
    async function anHourOfCalls(): Promise<string[]> {
      const requestIds: string[] = [];
      for (let i = 0; i < CALLS; i++) {
        clock.now += 3600_000 / CALLS;
        const requestId = newRequestId(clock.now);
        const idempotencyKey = `call-${requestId}`;
        await store.beginIdempotent(accountId, idempotencyKey, {
          fingerprint: "hash:{}",
          requestId,
          leaseMs: 30_000,
          ttlSeconds: 24 * 3600,
        });
        const admitted = await store.admit({
          accountId,
          keyHash: key.hash,
          cost: 1,
          requestId,
          tool: "hash",
          reason: "tool call",
          countRequest: false,
        });
        expect(admitted.status).toBe("ok");
        await store.completeIdempotent(
          accountId,
          idempotencyKey,
          { status: 200, body: '{"digest":"…"}', headers: {} },
          { ttlSeconds: 24 * 3600, accountLimitBytes: 1 << 20 },
        );
        const payment: PaymentRecord = {
          id: `84532:0xtoken:0xpayer:${requestId}`,
          network: "base-sepolia",
          payer: "0xpayer",
          value: "2000",
          state: "settling",
          accountId,
          txHash: null,
          createdAt: clock.now,
          authorization: { nonce: requestId },
          signature: "0x",
          grant: { credits: 1, type: "one_time", plan: null, planChange: null, description: "" },
          call: { key: idempotencyKey, fingerprint: "hash:{}" },
        };
        expect(await store.claimPayment(payment, DAY)).toBeNull();
        await store.savePayment({ ...payment, state: "settled", expiresAt: clock.now + DAY });
        expect(await store.claimPaymentService(payment.id, clock.now + DAY)).toBe(true);
        requestIds.push(requestId);
      }
      const newest = (await store.ledger(accountId, { limit: 1 })).items[0];
      if (newest) await store.trimLedger(accountId, newest.id);
      return requestIds;
    }

    const before = heapUsed();
    const first = await anHourOfCalls();
    const firstHour = heapUsed() - before;
    clock.now += 2 * DAY;
    const second = await anHourOfCalls();
    const bothHours = heapUsed() - before;

    // What an hour of these calls holds (measured here: 35 MB, 1.7 KB a call), and what another
    // hour two days later adds on top (measured: 1 MB; 32 MB when nothing lapsed).
    expect(firstHour).toBeGreaterThan(2_000_000);
    expect(bothHours - firstHour).toBeLessThan(firstHour / 4);
    // As in Redis: the first hour's debits have lapsed, the second's are still there to refund.
    const refund = (requestId: string) =>
      store.refund(accountId, { requestId, reason: "test", keyHash: key.hash, tool: "hash" });
    expect((await refund(first[0]!)).status).toBe("not_charged");
    expect((await refund(second[0]!)).status).toBe("refunded");
    await store.close();
  }, 120_000);

  it("keeps a top-up's request id for good when told to (an operator's grant retried days later is applied once)", async () => {
    const { clock, store, accountId } = await storeOnClock("free", 25);
    const grant = {
      amount: 500,
      reason: "support",
      requestId: "admin-grant:g1",
      keptForGood: true,
    };
    expect((await store.topUp(accountId, "grant", grant))?.applied).toBe(true);
    clock.now += 7 * DAY;
    expect(await store.topUp(accountId, "grant", grant)).toMatchObject({
      applied: false,
      account: { balance: 525 },
    });
    await store.close();
  });

  it("never gives a ledger entry an id older than the one before: after the clock steps back, paging one entry at a time still lists every entry once, newest first", async () => {
    const { clock, store, accountId } = await storeOnClock("free", 0);
    const grant = (reason: string) =>
      store.topUp(accountId, "grant", { amount: 1, requestId: newRequestId(clock.now), reason });
    clock.now += 1000;
    await grant("before the step");
    clock.now -= 60_000; // the machine's clock is stepped back a minute (NTP)
    await grant("after the step");
    await grant("later still");

    const reasons: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await store.ledger(accountId, { cursor, limit: 1 });
      reasons.push(...page.items.map((e) => e.reason));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect(reasons).toEqual(["later still", "after the step", "before the step", "test"]);
  });
  it("forgets a rate-limit bucket once its window is over, as Redis expires it: a day of distinct client addresses holds nothing an hour later", async () => {
    const { clock, store } = await storeOnClock("free", 0);
    const MINUTE = 60_000;
    const bucket = (i: number) => `endpoint:anonymous:ip:203.0.${i >> 8}.${i & 255}`;
    await store.hitRateLimit("warm-up", 10, MINUTE, "m");
    const before = heapUsed();
    // Each address once (every other one's hit then given back, as a refused sign-up's is).
    for (let i = 0; i < 30_000; i++) {
      await store.hitRateLimit(bucket(i), 600, MINUTE, `m${i}`);
      if (i % 2) await store.releaseRateLimit(bucket(i), `m${i}`);
    }
    const held = heapUsed() - before;
    clock.now += 3600_000;
    await store.hitRateLimit("another address", 600, MINUTE, "x");
    const left = heapUsed() - before;
    // Measured here: 30,000 buckets held 7.6 MB, all of it still there an hour later; now 40 KB is.
    expect(held).toBeGreaterThan(2_000_000);
    expect(left).toBeLessThan(held / 10);

    // The limits themselves as before: full within the window, empty after it.
    for (let i = 0; i < 3; i++)
      expect((await store.hitRateLimit("one address", 3, MINUTE, `h${i}`)).allowed).toBe(true);
    expect(await store.hitRateLimit("one address", 3, MINUTE, "h3")).toMatchObject({
      allowed: false,
      remaining: 0,
    });
    clock.now += MINUTE - 1;
    expect((await store.hitRateLimit("one address", 3, MINUTE, "h4")).allowed).toBe(false);
    clock.now += 1;
    expect(await store.hitRateLimit("one address", 3, MINUTE, "h5")).toMatchObject({
      allowed: true,
      remaining: 2,
      resetMs: MINUTE,
    });
    await store.close();
  }, 60_000);
});
