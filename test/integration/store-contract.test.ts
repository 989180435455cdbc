import { Redis } from "ioredis";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { eventRecord } from "../../src/events/types.js";
import { newAccountId, newEventId, newRequestId } from "../../src/lib/ids.js";
import { tierLimits } from "../../src/store/index.js";
import { EMAIL_CLAIM_SETTLE_MS } from "../../src/store/accounts/index.js";
import { REVOKED_KEYS_KEPT } from "../../src/store/keys/revoked-kept.js";
import { createMemoryStore } from "../../src/store/memory.js";
import { createRedisStore } from "../../src/store/redis.js";
import {
  InvalidCursorError,
  isActiveKey,
  KEY_USE_RESOLUTION_MS,
  type ControlWindows,
  type KeyRecord,
  type PaymentRecord,
  type SessionRecord,
  type Store,
} from "../../src/store/types.js";
import { REDIS_URL, dropPrefix, uniquePrefix } from "../helpers/redis.js";
import { startRedisCluster } from "../helpers/redis-server.js";
import { newKeyRecord } from "../helpers/key-records.js";

/**
 * One behaviour suite, three stores. The Redis run is the one production relies on; the
 * Redis Cluster run (three real masters) proves every script and transaction stays in one
 * slot; the memory run keeps `npm start` with embedded defaults honest.
 */
const PERIOD_MS = 400; // a short "month", so the Free allowance can be observed in a test

/** A payment as a process claims it (settling, one credit, a fresh id), with `changes` over it. */
const settlingPayment = (changes: Partial<PaymentRecord> = {}): PaymentRecord => ({
  id: `84532:0xtoken:0xpayer:${newRequestId()}`,
  network: "base-sepolia",
  payer: "0xpayer",
  value: "2000",
  state: "settling",
  accountId: newAccountId(),
  txHash: null,
  createdAt: Date.now(),
  authorization: { nonce: "0x01" },
  signature: "0x",
  grant: { credits: 1, type: "one_time", plan: null, planChange: null, description: "one call" },
  ...changes,
});
const prefixes: string[] = [];
let cluster: Awaited<ReturnType<typeof startRedisCluster>> | undefined;
/** `windows`: the account controls' windows (default: a UTC day and the calendar month). */
const factories: Record<string, (windows?: ControlWindows) => Promise<Store>> = {
  memory: async (windows) =>
    createMemoryStore({ tiers: tierLimits(), periodMs: PERIOD_MS, windows }),
  redis: async (windows) => {
    const prefix = uniquePrefix("contract");
    prefixes.push(prefix);
    return createRedisStore({
      url: REDIS_URL,
      keyPrefix: prefix,
      tiers: tierLimits(),
      periodMs: PERIOD_MS,
      controlWindows: windows,
    });
  },
  "redis cluster": async (windows) => {
    cluster ??= await startRedisCluster();
    return createRedisStore({
      url: cluster.url,
      cluster: true,
      keyPrefix: uniquePrefix("contract"),
      tiers: tierLimits(),
      periodMs: PERIOD_MS,
      controlWindows: windows,
    });
  },
};
const open: Store[] = [];
afterAll(async () => {
  await Promise.all(open.map((s) => s.close()));
  await Promise.all(prefixes.map(dropPrefix));
  await cluster?.stop();
});

/** An answer kept for a minute, under a byte limit it never reaches. */
const KEEP_60S = { ttlSeconds: 60, accountLimitBytes: 1 << 20 };

describe.each(Object.keys(factories))("%s store", (kind) => {
  let store: Store;
  beforeEach(async () => {
    store = await factories[kind]!();
    open.push(store);
  }, 20_000);

  async function account(credits = 100, tier: "free" | "business" = "business", on: Store = store) {
    const id = newAccountId();
    await on.createAccount(
      { id, email: `${id}@example.com`, tier },
      { amount: credits, requestId: newRequestId(), reason: "test" },
      [],
    );
    const { key, record } = newKeyRecord(id);
    await on.addKey(record);
    return { id, key, keyId: record.id };
  }
  const debit = (accountId: string, keyHash: string | null, cost = 1, requestId = newRequestId()) =>
    store.admit({ accountId, keyHash, cost, requestId, tool: "hash", reason: "tool call" });
  /** A plan bought: `tier` for `periodMs`, with its 100 credits, under `requestId`. */
  const buyPlan = (
    accountId: string,
    tier: string,
    periodMs: number,
    requestId: string,
    reason = "plan",
  ) =>
    store.topUp(accountId, "purchase", { amount: 100, requestId, reason }, [], { tier, periodMs });

  /** Another key of the account, with account controls. */
  async function controlledKey(
    accountId: string,
    controls: Pick<KeyRecord, "expiresAt" | "allowedTools" | "budget">,
    on: Store = store,
  ) {
    const { record } = newKeyRecord(accountId, controls);
    await on.addKey(record);
    return { id: record.id, hash: record.hash };
  }
  const call = (
    accountId: string,
    keyHash: string,
    tool: string | null,
    cost = 1,
    on: Store = store,
  ) => on.admit({ accountId, keyHash, cost, requestId: newRequestId(), tool, reason: "tool call" });
  /** Another store of the same kind, whose account-control windows are `windows`. */
  const storeWith = async (windows: ControlWindows) => {
    const s = await factories[kind]!(windows);
    open.push(s);
    return s;
  };
  /** Waits until `ms` into a window of `length` (so a test's steps all fall in one window). */
  const alignTo = async (length: number, ms = 20) => {
    const into = Date.now() % length;
    await new Promise((r) => setTimeout(r, (length - into + ms) % length));
  };

  describe("account controls", () => {
    it("refuses a key once its expiry time has passed, naming the time; a key with controls is limited", async () => {
      const a = await account();
      const expiresAt = Date.now() + 300;
      const key = await controlledKey(a.id, { expiresAt });
      expect(await call(a.id, key.hash, "hash")).toMatchObject({ status: "ok", keyLimited: true });
      expect(await debit(a.id, a.key.hash)).toMatchObject({ status: "ok", keyLimited: false });
      await new Promise((r) => setTimeout(r, 350));
      expect(await call(a.id, key.hash, "hash")).toEqual({ status: "expired", expiresAt });
      expect((await store.getAccount(a.id))!.balance).toBe(98);
      // An expired key is no active key: the account's other key is its last active one.
      expect((await store.revokeKey(a.id, a.keyId, 0, { keepOneActive: true })).status).toBe(
        "last_active_key",
      );
    });

    it("lets a key call only its allowed tools, refusing others even when nothing is charged", async () => {
      const a = await account();
      const key = await controlledKey(a.id, { allowedTools: ["hash", "qr-code"] });
      expect(await call(a.id, key.hash, "qr-code", 2)).toMatchObject({
        status: "ok",
        charged: true,
      });
      expect(await call(a.id, key.hash, "uuid", 1)).toEqual({
        status: "tool_not_allowed",
        allowedTools: ["hash", "qr-code"],
      });
      expect((await call(a.id, key.hash, "uuid", 0)).status).toBe("tool_not_allowed");
      // Not a tool call (the account API): the key authenticates.
      expect((await call(a.id, key.hash, null, 0)).status).toBe("ok");
      // A tool whose name contains an allowed one is still another tool.
      expect((await call(a.id, key.hash, "has", 1)).status).toBe("tool_not_allowed");
      expect((await store.getAccount(a.id))!.balance).toBe(98);
    });

    it("holds a key to its budget exactly under concurrency, charging nothing it refuses; a refund gives the budget back", async () => {
      const a = await account(100);
      const key = await controlledKey(a.id, { budget: { credits: 10, period: "month" } });
      const results = await Promise.all(
        Array.from({ length: 20 }, () => call(a.id, key.hash, "hash", 2)),
      );
      expect(results.filter((r) => r.status === "ok")).toHaveLength(5);
      const refused = results.filter((r) => r.status === "key_budget_exceeded");
      expect(refused).toHaveLength(15);
      expect(refused[0]).toMatchObject({
        budget: { credits: 10, period: "month", spent: 10 },
      });
      // The calendar month (UTC), as the script computes it.
      const now = new Date();
      expect(refused[0]).toMatchObject({
        budget: {
          windowStart: Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1),
          resetsAt: Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1),
        },
      });
      expect((await store.getAccount(a.id))!.balance).toBe(90);
      const debits = (await store.ledger(a.id, { limit: 50 })).items.filter(
        (e) => e.kind === "debit",
      );
      expect(debits).toHaveLength(5);
      expect((await store.listKeys(a.id)).find((k) => k.id === key.id)).toMatchObject({
        budget: { credits: 10, period: "month" },
        budgetSpent: 10,
      });
      // The other key of the account has no budget: it is not held to this one.
      expect((await debit(a.id, a.key.hash, 2)).status).toBe("ok");
      // A refunded call gives its credits back to the key's budget (the caller names the call's
      // key and tool, as tool calls do: the debit record keeps only the cost).
      expect(
        (
          await store.refund(a.id, {
            requestId: debits[0]!.requestId,
            reason: "failed",
            keyHash: key.hash,
            tool: "hash",
          })
        ).status,
      ).toBe("refunded");
      expect((await store.listKeys(a.id)).find((k) => k.id === key.id)!.budgetSpent).toBe(8);
      expect((await call(a.id, key.hash, "hash", 2)).status).toBe("ok");
      expect((await call(a.id, key.hash, "hash", 1)).status).toBe("key_budget_exceeded");
    });

    it("refunds a call taken over under its Idempotency-Key by another key to the key that was charged", async () => {
      const a = await account(100);
      const first = await controlledKey(a.id, { budget: { credits: 10, period: "month" } });
      const taker = await controlledKey(a.id, { budget: { credits: 10, period: "month" } });
      expect((await call(a.id, taker.hash, "hash", 3)).status).toBe("ok");
      const claim = (requestId: string) => ({
        fingerprint: "fp",
        requestId,
        leaseMs: 50,
        ttlSeconds: 60,
      });
      const admitUnder = (keyHash: string, requestId: string) => ({
        accountId: a.id,
        keyHash,
        cost: 2,
        requestId,
        tool: "hash",
        reason: "tool call",
      });
      // The first key's call is charged under its claim, and its process dies.
      const charged = newRequestId();
      const firstCall = await store.admitIdempotent(
        admitUnder(first.hash, charged),
        "shared",
        claim(charged),
      );
      expect(firstCall.admitted).toMatchObject({ status: "ok", charged: true });
      await new Promise((r) => setTimeout(r, 100));
      // The account's other key retries with the same Idempotency-Key: it takes the claim over and
      // runs on the same debit (not charged again), then the tool fails and the call is refunded.
      const retry = newRequestId();
      const takeover = await store.admitIdempotent(
        admitUnder(taker.hash, retry),
        "shared",
        claim(retry),
      );
      expect(takeover).toEqual({ claim: { state: "started", requestId: charged }, admitted: null });
      expect(await store.admit(admitUnder(taker.hash, charged))).toMatchObject({
        status: "ok",
        charged: false,
      });
      const refund = await store.refund(a.id, {
        requestId: charged,
        reason: "tool failed",
        idempotencyKey: "shared",
        keyHash: taker.hash,
        tool: "hash",
      });
      expect(refund).toMatchObject({ status: "refunded", amount: 2 });
      // The budget that was spent is the one given back, and the refund names that key.
      const spent = Object.fromEntries(
        (await store.listKeys(a.id)).map((k) => [k.id, k.budgetSpent]),
      );
      expect(spent[first.id]).toBe(0);
      expect(spent[taker.id]).toBe(3);
      const rows = (await store.ledger(a.id, { limit: 10 })).items.filter(
        (e) => e.requestId === charged,
      );
      expect(rows.map((e) => [e.kind, e.keyId])).toEqual(
        expect.arrayContaining([
          ["debit", first.id],
          ["refund", first.id],
        ]),
      );
      expect((await store.getAccount(a.id))!.balance).toBe(97);
    });

    it("checks a key's controls for a cost without debiting (a call about to be paid with x402): the budget holds, the balance does not matter", async () => {
      const a = await account(0);
      const key = await controlledKey(a.id, { budget: { credits: 2, period: "month" } });
      const check = (cost: number) =>
        store.admit({
          accountId: a.id,
          keyHash: key.hash,
          cost,
          requestId: newRequestId(),
          tool: "hash",
          reason: "",
          checkOnly: true,
        });
      expect((await call(a.id, key.hash, "hash", 2)).status).toBe("insufficient_credits");
      expect(await check(2)).toMatchObject({ status: "ok", charged: false, keyLimited: true });
      expect(await check(3)).toMatchObject({
        status: "key_budget_exceeded",
        budget: { credits: 2, spent: 0 },
      });
      expect((await store.getAccount(a.id))!.balance).toBe(0);
      expect((await store.ledger(a.id, { limit: 10 })).items.map((e) => e.kind)).toEqual(["grant"]);
    });

    it("holds a checked call's cost in its key's budget until that call's debit takes it over, or the hold is given back", async () => {
      const a = await account(10);
      const key = await controlledKey(a.id, { budget: { credits: 2, period: "month" } });
      const admit = (requestId: string, checkOnly: boolean) =>
        store.admit({
          accountId: a.id,
          keyHash: key.hash,
          cost: 1,
          requestId,
          tool: "hash",
          reason: checkOnly ? "" : "tool call",
          countRequest: false,
          ...(checkOnly ? { checkOnly } : {}),
          budgetHold: requestId,
        });
      const [first, second, third] = [newRequestId(), newRequestId(), newRequestId()];
      expect(await admit(first, true)).toMatchObject({ status: "ok", budgetHeld: true });
      expect(await admit(second, true)).toMatchObject({ status: "ok", budgetHeld: true });
      // Two held: a third check finds the budget taken, what is held counted as spent.
      expect(await admit(third, true)).toMatchObject({
        status: "key_budget_exceeded",
        budget: { credits: 2, spent: 2 },
      });
      // The first call's debit takes its own hold's place (it is not refused by it).
      expect(await admit(first, false)).toMatchObject({ status: "ok", charged: true });
      // The second call is not debited (its payment failed): its hold given back frees the budget.
      await store.releaseBudgetHold(a.id, second);
      expect(await admit(third, true)).toMatchObject({ status: "ok", budgetHeld: true });
      expect(await admit(third, false)).toMatchObject({ status: "ok", charged: true });
      expect((await store.listKeys(a.id)).find((k) => k.id === key.id)!.budgetSpent).toBe(2);
      expect((await store.getAccount(a.id))!.balance).toBe(8);
      // A key without a budget holds nothing.
      expect(
        await store.admit({
          accountId: a.id,
          keyHash: a.key.hash,
          cost: 1,
          requestId: newRequestId(),
          tool: "hash",
          reason: "",
          checkOnly: true,
          budgetHold: "unbudgeted",
        }),
      ).not.toHaveProperty("budgetHeld");
    });

    it("starts a key's budget afresh in its next window", async () => {
      // Long enough that the four calls after alignTo land in one window on a loaded machine too.
      const windows = { dayMs: 2000, monthMs: 0 };
      const s = await storeWith(windows);
      const { id } = await account(100, "business", s);
      const key = await controlledKey(id, { budget: { credits: 3, period: "day" } }, s);
      await alignTo(windows.dayMs);
      for (let i = 0; i < 3; i++)
        expect((await call(id, key.hash, "hash", 1, s)).status).toBe("ok");
      const refused = await call(id, key.hash, "hash", 1, s);
      if (refused.status !== "key_budget_exceeded") throw new Error(refused.status);
      expect(refused.budget.resetsAt - refused.budget.windowStart).toBe(windows.dayMs);
      await new Promise((r) => setTimeout(r, refused.budget.resetsAt - Date.now() + 20));
      expect((await s.listKeys(id)).find((k) => k.id === key.id)!.budgetSpent).toBe(0);
      expect((await call(id, key.hash, "hash", 1, s)).status).toBe("ok");
      expect((await s.getAccount(id))!.balance).toBe(96);
    });

    it("keeps what a key spent when its budget's period changes: a month budget counts the month's spend, a day budget the day's, on any date", async () => {
      // Epoch-aligned windows: a "day" of 2 s in a "month" of 2 minutes, so the test never depends
      // on today's date (a day and a calendar month start together on the 1st).
      const windows = { dayMs: 2000, monthMs: 120_000 };
      const s = await storeWith(windows);
      const { id } = await account(100, "business", s);
      const key = await controlledKey(id, { budget: { credits: 3, period: "day" } }, s);
      const spent = async () => (await s.listKeys(id)).find((k) => k.id === key.id)!.budgetSpent;
      const budget = (credits: number, period: "day" | "month") =>
        s.updateKey(id, key.id, { budget: { credits, period } }).then((outcome) => {
          if (outcome.status !== "updated") throw new Error(outcome.status);
          return outcome.key;
        });
      const status = async () => (await call(id, key.hash, "hash", 1, s)).status;
      // Into a day that is not its month's first, with two more days left in the month.
      for (;;) {
        await alignTo(windows.dayMs);
        const intoMonth = Date.now() % windows.monthMs;
        if (intoMonth >= windows.dayMs && intoMonth < windows.monthMs - 3 * windows.dayMs) break;
      }
      for (let i = 0; i < 3; i++) expect(await status()).toBe("ok");
      expect(await status()).toBe("key_budget_exceeded");
      // 3 a day becomes 3 a month: the 3 spent today were spent this month.
      expect(await budget(3, "month")).toMatchObject({ budgetSpent: 3 });
      const refused = await call(id, key.hash, "hash", 1, s);
      if (refused.status !== "key_budget_exceeded") throw new Error(refused.status);
      const monthStart = Math.floor(Date.now() / windows.monthMs) * windows.monthMs;
      expect(refused.budget).toMatchObject({ period: "month", spent: 3, windowStart: monthStart });
      // And back: still 3 today.
      expect(await budget(3, "day")).toMatchObject({ budgetSpent: 3 });
      expect(await status()).toBe("key_budget_exceeded");
      // The next day the day budget starts afresh, the month's keeps counting.
      await alignTo(windows.dayMs);
      expect(await spent()).toBe(0);
      expect(await budget(5, "month")).toMatchObject({ budgetSpent: 3 });
      expect([await status(), await status(), await status()]).toEqual([
        "ok",
        "ok",
        "key_budget_exceeded",
      ]);
      expect(await budget(3, "day")).toMatchObject({ budgetSpent: 2 });
      expect([await status(), await status()]).toEqual(["ok", "key_budget_exceeded"]);
      expect(await budget(6, "month")).toMatchObject({ budgetSpent: 6 });
      expect((await s.getAccount(id))!.balance).toBe(94);
    });

    it.runIf(kind === "redis")(
      "reads a key's spend stored in the older one-window form in each current window it began in",
      async () => {
        const { id } = await account();
        const key = await controlledKey(id, { budget: { credits: 3, period: "month" } });
        const now = Date.now();
        const today = now - (now % 86_400_000);
        const lastMonth = Date.UTC(
          new Date(now).getUTCFullYear(),
          new Date(now).getUTCMonth() - 1,
          1,
        );
        const raw = new Redis(REDIS_URL, { keyPrefix: prefixes.at(-1)! });
        const spend = `{${id}}:key-spend`;
        try {
          // Spent under a day budget today: spent this month too.
          await raw.hset(spend, key.id, `${today}:2`);
          expect((await store.listKeys(id)).find((k) => k.id === key.id)!.budgetSpent).toBe(2);
          expect((await call(id, key.hash, "hash")).status).toBe("ok");
          expect((await call(id, key.hash, "hash")).status).toBe("key_budget_exceeded");
          // Spent in a month gone by: nothing this month, nor today. (As an older release left the
          // hash: without the day's and month's field the calls above added.)
          await raw.hdel(spend, `${key.id}:periods`);
          await raw.hset(spend, key.id, `${lastMonth}:3`);
          expect((await store.listKeys(id)).find((k) => k.id === key.id)!.budgetSpent).toBe(0);
          await store.updateKey(id, key.id, { budget: { credits: 3, period: "day" } });
          expect((await store.listKeys(id)).find((k) => k.id === key.id)!.budgetSpent).toBe(0);
          expect((await call(id, key.hash, "hash")).status).toBe("ok");
        } finally {
          raw.disconnect();
        }
      },
    );

    it("fires spend.threshold_reached once when concurrent calls take the month's spend to the alert, and again after re-arming or in the next month", async () => {
      // A "month" long enough that the steps from alignTo to the re-armed alert (some thirty
      // store round trips) land in one on a loaded machine too.
      const windows = { dayMs: 86_400_000, monthMs: 3000 };
      const s = await storeWith(windows);
      const { id } = await account(1000, "business", s);
      expect(await s.setSpendAlert(id, { credits: 10 })).toMatchObject({
        spendAlert: { credits: 10 },
      });
      expect(await s.setSpendAlert(newAccountId(), { credits: 10 })).toBeNull();
      await alignTo(windows.monthMs);
      const spendOnce = (cost: number) =>
        s.admit({
          accountId: id,
          keyHash: null,
          cost,
          requestId: newRequestId(),
          tool: "hash",
          reason: "tool call",
        });
      const results = await Promise.all(Array.from({ length: 20 }, () => spendOnce(1)));
      const fired = results.flatMap((r) => (r.status === "ok" ? r.events : []));
      expect(fired.map((e) => e.event)).toEqual(["spend.threshold_reached"]);
      expect(fired[0]!.data).toMatchObject({
        threshold: 10,
        spent: 10,
        period: "month",
        tool_name: "hash",
      });
      const start = Math.floor(Date.now() / windows.monthMs) * windows.monthMs;
      expect(fired[0]!.data.period_start).toBe(new Date(start).toISOString());
      expect(
        (await s.readOutbox(id, 50)).filter((e) => e.event === "spend.threshold_reached"),
      ).toHaveLength(1);
      expect((await s.getAccount(id))!.spend).toEqual({ windowStart: start, credits: 20 });
      // Setting the alert again re-arms it: the next call, already past it, fires it.
      await s.setSpendAlert(id, { credits: 15 });
      const again = await spendOnce(1);
      expect(again.status === "ok" && again.events.map((e) => e.event)).toEqual([
        "spend.threshold_reached",
      ]);
      expect(await spendOnce(1)).toMatchObject({ status: "ok", events: [] });
      // The next month starts from nothing.
      await new Promise((r) => setTimeout(r, start + windows.monthMs - Date.now() + 20));
      expect(await spendOnce(14)).toMatchObject({ status: "ok", events: [] });
      const next = await spendOnce(1);
      expect(next.status === "ok" && next.events.map((e) => e.event)).toEqual([
        "spend.threshold_reached",
      ]);
      // Removed, it fires no more.
      expect(await s.removeSpendAlert(id)).toMatchObject({
        status: "removed",
        account: { spendAlert: null },
      });
      expect(await s.removeSpendAlert(id)).toEqual({ status: "not_set" });
      expect(await s.removeSpendAlert(newAccountId())).toEqual({ status: "not_found" });
    });

    it("re-arms the spend alert when a refund takes the month's spend back under it, so the next real crossing fires", async () => {
      const { id } = await account(100);
      await store.setSpendAlert(id, { credits: 3 });
      const spent = async (requestId = newRequestId()) => {
        const admitted = await debit(id, null, 1, requestId);
        if (admitted.status !== "ok") throw new Error(admitted.status);
        return admitted.events.map((e) => e.event);
      };
      expect([await spent(), await spent()]).toEqual([[], []]);
      // The third credit reaches the alert, but its call fails: the month's spend is 2 again.
      const failed = newRequestId();
      expect(await spent(failed)).toEqual(["spend.threshold_reached"]);
      await store.refund(id, { requestId: failed, reason: "tool failed" });
      expect((await store.getAccount(id))!.spend.credits).toBe(2);
      // The call that really takes the spend to 3 says so; the one after it does not.
      expect(await spent()).toEqual(["spend.threshold_reached"]);
      expect(await spent()).toEqual([]);
      // A refund that leaves the spend at the alert or over it re-arms nothing.
      const over = newRequestId();
      expect(await spent(over)).toEqual([]);
      await store.refund(id, { requestId: over, reason: "tool failed" });
      expect(await spent()).toEqual([]);
    });

    it("changes a key's controls for its very next admission, and clears them with null", async () => {
      const a = await account();
      const other = await account();
      expect(await store.updateKey(a.id, "key_missing", { budget: null })).toEqual({
        status: "not_found",
      });
      expect(await store.updateKey(other.id, a.keyId, { budget: null })).toEqual({
        status: "not_found",
      });
      const updated = await store.updateKey(a.id, a.keyId, {
        name: "limited",
        allowedTools: ["uuid"],
        budget: { credits: 1, period: "day" },
      });
      expect(updated).toMatchObject({ status: "updated" });
      expect(updated.status === "updated" && updated.key).toMatchObject({
        id: a.keyId,
        name: "limited",
        allowedTools: ["uuid"],
        budget: { credits: 1, period: "day" },
        budgetSpent: 0,
      });
      expect((await debit(a.id, a.key.hash)).status).toBe("tool_not_allowed");
      expect(await call(a.id, a.key.hash, "uuid")).toMatchObject({
        status: "ok",
        keyLimited: true,
      });
      expect((await call(a.id, a.key.hash, "uuid")).status).toBe("key_budget_exceeded");
      await store.updateKey(a.id, a.keyId, { allowedTools: null, budget: null });
      expect(await debit(a.id, a.key.hash)).toMatchObject({ status: "ok", keyLimited: false });
      expect((await store.listKeys(a.id))[0]).toMatchObject({
        name: "limited",
        allowedTools: null,
        budget: null,
        expiresAt: null,
      });
    });
  });

  it("creates an account with its grant in the ledger and its events in the outbox", async () => {
    const id = newAccountId();
    const event = eventRecord(newEventId(), "agent.registered", id, {
      agent_id: id,
      email: "a@example.com",
      tier: "free",
    });
    const created = await store.createAccount(
      { id, email: "a@example.com", tier: "free" },
      { amount: 25, requestId: "req_signup", reason: "sign-up" },
      [event],
    );
    expect(created).toMatchObject({
      id,
      email: "a@example.com",
      tier: "free",
      balance: 25,
      reference: 25,
      emailVerified: false,
    });
    expect(await store.getAccount(id)).toEqual(created);
    const { items } = await store.ledger(id, { limit: 10 });
    expect(items).toMatchObject([
      { kind: "grant", amount: 25, balance: 25, reason: "sign-up", requestId: "req_signup" },
    ]);
    expect(await store.readOutbox(id, 10)).toEqual([event]);
    expect(await store.outboxAccounts()).toContain(id);
    await store.ackOutbox(id, [event.id]);
    expect(await store.readOutbox(id, 10)).toEqual([]);
    expect(await store.outboxAccounts()).not.toContain(id);
  });

  /** A wallet account made with its opening event (`agent.registered`), which waits in its outbox. */
  const walletAccountWithOpening = async () => {
    const a = { id: newAccountId() };
    const opening = eventRecord(newEventId(), "agent.registered", a.id, {
      agent_id: a.id,
      email: null,
      tier: "free",
    });
    await store.createAccount(
      { id: a.id, email: null, tier: "free" },
      { amount: 0, requestId: newRequestId(), reason: "wallet" },
      [opening],
    );
    return { a, opening };
  };
  const paymentEvent = (accountId: string, at?: Date) =>
    eventRecord(
      newEventId(),
      "payment.received",
      accountId,
      {
        type: "one_time",
        credits_added: 1,
        amount_usd: "0.00",
        plan: null,
        agent_id: accountId,
        payment_session_id: "84532:test",
      },
      at,
    );

  it("writes a new account, a credit and a relay's acknowledgement each with their global indexes, in one request to one Redis node; an account made again keeps its place", async () => {
    const sent = store.requestsSent();
    const { a } = await walletAccountWithOpening();
    const created = store.requestsSent();
    await store.topUp(a.id, "purchase", { amount: 1, requestId: newRequestId(), reason: "x402" }, [
      paymentEvent(a.id),
    ]);
    // One round trip each on one node; a Cluster, whose indexes lie in other slots, writes them after.
    if (kind === "redis") expect([created - sent, store.requestsSent() - created]).toEqual([1, 1]);
    expect(await store.outboxAccounts()).toContain(a.id);
    const waiting = await store.readOutbox(a.id, 10);
    expect(waiting.map((e) => e.event)).toEqual(["agent.registered", "payment.received"]);
    // The relay hands them on: unindexed and acknowledged, also one round trip on one node.
    const handing = store.requestsSent();
    await store.handOn([{ accountId: a.id, events: waiting }], 10);
    if (kind === "redis") expect(store.requestsSent() - handing).toBe(1);
    expect(await store.outboxAccounts()).not.toContain(a.id);
    expect(await store.readOutbox(a.id, 10)).toEqual([]);
    await new Promise((r) => setTimeout(r, 5)); // listed by creation time: a later millisecond
    const { a: later } = await walletAccountWithOpening();
    const listed = async () => (await store.listAccounts({ limit: 10 })).items.map((x) => x.id);
    expect(await listed()).toEqual([a.id, later.id]);
    await expect(
      store.createAccount(
        { id: a.id, email: null, tier: "free" },
        { amount: 0, requestId: newRequestId(), reason: "again" },
        [],
      ),
    ).rejects.toThrow();
    expect(await listed()).toEqual([a.id, later.id]);
    expect((await store.getAccount(a.id))?.balance).toBe(1);
  });

  it("a top-up's event stays indexed for the relay whether or not events were already waiting, and through a relay acknowledging the earlier ones meanwhile", async () => {
    // Its opening event waits in the outbox, indexed.
    const { a, opening } = await walletAccountWithOpening();
    const payment = () => [paymentEvent(a.id)];
    const paid = (events: ReturnType<typeof payment>) =>
      store.topUp(
        a.id,
        "purchase",
        { amount: 1, requestId: newRequestId(), reason: "x402" },
        events,
      );
    const first = payment();
    await paid(first);
    // A relay that read only the opening event acknowledges it: the payment's event keeps the index.
    await store.ackOutbox(a.id, [opening.id]);
    expect(await store.outboxAccounts()).toContain(a.id);
    expect((await store.readOutbox(a.id, 10)).map((e) => e.id)).toEqual([first[0]!.id]);
    await store.ackOutbox(a.id, [first[0]!.id]);
    expect(await store.outboxAccounts()).not.toContain(a.id);
    // Nothing waiting: the next top-up indexes the outbox itself.
    const second = payment();
    await paid(second);
    expect(await store.outboxAccounts()).toContain(a.id);
    expect((await store.readOutbox(a.id, 10)).map((e) => e.id)).toEqual([second[0]!.id]);
  });

  it("hands on a relay's events: logged and acknowledged in one step, keeping the account indexed for an event appended meanwhile", async () => {
    const { a, opening } = await walletAccountWithOpening();
    const read = await store.readOutbox(a.id, 10);
    // Appended after the relay read the outbox, before it hands on what it read (a second later:
    // the event log is ordered by event time, and two events of one millisecond tie).
    const later = paymentEvent(a.id, new Date(Date.now() + 1000));
    await store.topUp(a.id, "purchase", { amount: 1, requestId: newRequestId(), reason: "x402" }, [
      later,
    ]);
    await store.handOn([{ accountId: a.id, events: read }], 10);
    expect((await store.listEvents(a.id, 10)).map((e) => e.id)).toEqual([opening.id]);
    const rest = await store.readOutbox(a.id, 10);
    expect(rest.map((e) => e.id)).toEqual([later.id]);
    expect(await store.outboxAccounts()).toContain(a.id);
    // Handed on again (a second relay that read the same events): logged once, and nothing waits.
    await store.handOn([{ accountId: a.id, events: [...read, ...rest] }], 10);
    await store.handOn([{ accountId: a.id, events: rest }], 10);
    expect((await store.listEvents(a.id, 10)).map((e) => e.id)).toEqual([later.id, opening.id]);
    expect(await store.readOutbox(a.id, 10)).toEqual([]);
    expect(await store.outboxAccounts()).not.toContain(a.id);
    // Only the last `keep` entries of the log stay.
    const more = [1, 2, 3].map((s) =>
      eventRecord(
        newEventId(),
        "tool.error",
        a.id,
        { tool_name: "hash", credits_charged: 0 },
        new Date(Date.now() + s * 1000),
      ),
    );
    await store.handOn([{ accountId: a.id, events: more }], 2);
    expect((await store.listEvents(a.id, 10)).map((e) => e.id)).toEqual([more[2]!.id, more[1]!.id]);
  });

  it("reads, looks up and hands on many accounts' outboxes in one request each to one Redis node, each account's events its own", async () => {
    const made = [await walletAccountWithOpening(), await walletAccountWithOpening()];
    const [a, b] = [made[0]!.a, made[1]!.a];
    // A second later than the account's opening: the event log is ordered by event time.
    const paid = paymentEvent(b.id, new Date(Date.now() + 1000));
    await store.topUp(b.id, "purchase", { amount: 1, requestId: newRequestId(), reason: "x402" }, [
      paid,
    ]);
    const ids = [a.id, "acct_nobodyhere", b.id];
    const before = store.requestsSent();
    const outboxes = await store.readOutboxes(ids, 10);
    const accounts = await store.getAccounts(ids);
    // One round trip each on one node; a Cluster, whose accounts lie in other slots, reads each
    // account's on its own, side by side, as one request.
    if (kind === "redis") expect(store.requestsSent() - before).toBe(2);
    expect(outboxes.map((events) => events.map((e) => e.id))).toEqual([
      [made[0]!.opening.id],
      [],
      [made[1]!.opening.id, paid.id],
    ]);
    expect(accounts.map((x) => x?.id ?? null)).toEqual([a.id, null, b.id]);
    const handing = store.requestsSent();
    await store.handOn(
      ids.map((accountId, i) => ({ accountId, events: outboxes[i]! })),
      10,
    );
    if (kind === "redis") expect(store.requestsSent() - handing).toBe(1);
    for (const x of [a, b]) {
      expect(await store.readOutbox(x.id, 10)).toEqual([]);
      expect(await store.outboxAccounts()).not.toContain(x.id);
    }
    expect((await store.listEvents(b.id, 10)).map((e) => e.id)).toEqual([
      paid.id,
      made[1]!.opening.id,
    ]);
    expect((await store.listEvents(a.id, 10)).map((e) => e.id)).toEqual([made[0]!.opening.id]);
  });

  it("admits a valid key and names it; refuses an unknown key and another account's key", async () => {
    const a = await account();
    const b = await account();
    expect(await debit(a.id, a.key.hash, 0)).toMatchObject({
      status: "ok",
      keyId: a.keyId,
      charged: false,
    });
    expect(await debit(a.id, "0".repeat(64), 0)).toEqual({ status: "invalid_key" });
    expect(await debit(a.id, b.key.hash, 0)).toEqual({ status: "invalid_key" });
    expect(await debit(newAccountId(), a.key.hash, 0)).toEqual({ status: "invalid_key" });
  });

  it("checks a key without counting a request when asked", async () => {
    const a = await account(10, "free");
    for (let i = 0; i < 70; i++) {
      expect(
        await store.admit({
          accountId: a.id,
          keyHash: a.key.hash,
          cost: 0,
          requestId: newRequestId(),
          tool: null,
          reason: "",
          countRequest: false,
        }),
      ).toMatchObject({ status: "ok" });
    }
    expect(await debit(a.id, a.key.hash, 0)).toMatchObject({
      status: "ok",
      rate: { remaining: 59 },
    });
    expect(
      await store.admit({
        accountId: a.id,
        keyHash: "f".repeat(64),
        cost: 0,
        requestId: newRequestId(),
        tool: null,
        reason: "",
        countRequest: false,
      }),
    ).toEqual({ status: "invalid_key" });
  });

  it("refuses a revoked key at once and a rotated-out key after its grace period", async () => {
    const a = await account();
    const { record: graceKey } = newKeyRecord(a.id, { id: "key_grace" });
    await store.addKey(graceKey);
    expect(await store.revokeKey(a.id, a.keyId, 0)).toMatchObject({
      status: "revoked",
      key: { id: a.keyId },
    });
    expect(await debit(a.id, a.key.hash, 0)).toEqual({ status: "revoked" });
    const revoked = await store.revokeKey(a.id, "key_grace", 300);
    if (revoked.status !== "revoked") throw new Error(revoked.status);
    expect(revoked.key.revokedAt).toBeGreaterThan(Date.now());
    expect((await debit(a.id, graceKey.hash, 0)).status).toBe("ok");
    // A later revocation never postpones an earlier one.
    expect(await store.revokeKey(a.id, "key_grace", 60_000)).toMatchObject({
      status: "revoked",
      key: { revokedAt: revoked.key.revokedAt },
    });
    await new Promise((r) => setTimeout(r, 350));
    expect(await debit(a.id, graceKey.hash, 0)).toEqual({ status: "revoked" });
    // Once revoked, a key stays as it is.
    expect(await store.revokeKey(a.id, "key_grace", 0)).toMatchObject({
      status: "already_revoked",
      key: { revokedAt: revoked.key.revokedAt },
    });
    expect(await store.revokeKey(a.id, "key_missing", 0)).toEqual({ status: "not_found" });
  });

  it("rotates a key once: a rotation of a key already rotating is refused, even when two race, naming the replacement", async () => {
    const a = await account();
    const outcomes = await Promise.all(
      ["key_new_1", "key_new_2"].map((replacedBy) =>
        store.revokeKey(a.id, a.keyId, 60_000, { replacedBy }),
      ),
    );
    expect(outcomes.map((o) => o.status).sort()).toEqual(["already_rotated", "revoked"]);
    const winner = outcomes.find((o) => o.status === "revoked")!;
    const loser = outcomes.find((o) => o.status === "already_rotated")!;
    if (winner.status !== "revoked" || loser.status !== "already_rotated") throw new Error();
    expect(loser.key).toMatchObject({
      replacedBy: winner.key.replacedBy,
      revokedAt: winner.key.revokedAt,
    });
    // Revoking it for good is still allowed.
    expect((await store.revokeKey(a.id, a.keyId, 0)).status).toBe("revoked");
  });

  it("keeps the last active key when asked, even when two revocations race", async () => {
    const a = await account();
    await store.addKey(newKeyRecord(a.id, { id: "key_other" }).record);
    const outcomes = await Promise.all(
      [a.keyId, "key_other"].map((id) => store.revokeKey(a.id, id, 0, { keepOneActive: true })),
    );
    expect(outcomes.map((o) => o.status).sort()).toEqual(["last_active_key", "revoked"]);
    const kept = outcomes.find((o) => o.status === "last_active_key")!;
    expect(
      (await store.listKeys(a.id)).filter((k) => k.revokedAt === null).map((k) => k.id),
    ).toEqual([kept.key.id]);
    // A key whose revocation is already scheduled does not count as active.
    await store.addKey(newKeyRecord(a.id, { id: "key_third" }).record);
    expect((await store.revokeKey(a.id, "key_third", 60_000)).status).toBe("revoked");
    expect((await store.revokeKey(a.id, kept.key.id, 0, { keepOneActive: true })).status).toBe(
      "last_active_key",
    );
    expect((await store.revokeKey(a.id, kept.key.id, 0)).status).toBe("revoked");
  });

  it("counts as active only a key that can manage keys: not one with an expiry (however far off), allowed tools or a budget", async () => {
    const a = await account();
    const limited = [
      await controlledKey(a.id, { expiresAt: Date.now() + 365 * 86_400_000 }),
      await controlledKey(a.id, { allowedTools: ["hash"] }),
      await controlledKey(a.id, { budget: { credits: 5, period: "month" } }),
    ];
    expect((await store.revokeKey(a.id, a.keyId, 0, { keepOneActive: true })).status).toBe(
      "last_active_key",
    );
    // A limited key goes freely: the account keeps its active key.
    expect((await store.revokeKey(a.id, limited[0]!.id, 0, { keepOneActive: true })).status).toBe(
      "revoked",
    );
    // With another key without controls, either may go.
    await store.addKey(newKeyRecord(a.id, { id: "key_spare" }).record);
    expect((await store.revokeKey(a.id, a.keyId, 0, { keepOneActive: true })).status).toBe(
      "revoked",
    );
    expect((await store.revokeKey(a.id, "key_spare", 0, { keepOneActive: true })).status).toBe(
      "last_active_key",
    );
  });

  it("refuses, when asked, a control on the last active key, even when changes and revocations race", async () => {
    const a = await account();
    const unchanged = { expiresAt: null, allowedTools: null, budget: null };
    for (const controls of [
      { expiresAt: Date.now() + 60_000 },
      { allowedTools: ["hash"] },
      { budget: { credits: 5, period: "day" as const } },
    ]) {
      expect(await store.updateKey(a.id, a.keyId, controls, { keepOneActive: true })).toMatchObject(
        { status: "last_active_key", key: { id: a.keyId, ...unchanged } },
      );
    }
    expect(await store.getKey(a.id, a.keyId)).toMatchObject(unchanged);
    expect((await debit(a.id, a.key.hash)).status).toBe("ok");
    // Its name may change, and a change that leaves it without controls.
    expect(
      (
        await store.updateKey(
          a.id,
          a.keyId,
          { name: "main", budget: null },
          { keepOneActive: true },
        )
      ).status,
    ).toBe("updated");
    const activeKeys = async () =>
      (await store.listKeys(a.id)).filter((k) => isActiveKey(k)).map((k) => k.id);
    // Two active keys limited at the same moment: one change is refused.
    await store.addKey(newKeyRecord(a.id, { id: "key_other" }).record);
    const limiting = await Promise.all(
      [a.keyId, "key_other"].map((id) =>
        store.updateKey(a.id, id, { allowedTools: ["hash"] }, { keepOneActive: true }),
      ),
    );
    expect(limiting.map((o) => o.status).sort()).toEqual(["last_active_key", "updated"]);
    expect(await activeKeys()).toHaveLength(1);
    // One limited while the other is revoked: one of the two is refused.
    const [kept] = await activeKeys();
    await store.addKey(newKeyRecord(a.id, { id: "key_third" }).record);
    const racing = await Promise.all([
      store.revokeKey(a.id, kept!, 0, { keepOneActive: true }),
      store.updateKey(
        a.id,
        "key_third",
        { expiresAt: Date.now() + 60_000 },
        { keepOneActive: true },
      ),
    ]);
    expect(racing.map((o) => o.status).sort()).toEqual(["last_active_key", expect.any(String)]);
    expect(await activeKeys()).toHaveLength(1);
  });

  it("adds a key within the account's cap in one step, even when many race; a revoked key does not count, one in its grace or expired does", async () => {
    const a = await account();
    const record = (changes: Partial<KeyRecord> = {}) => newKeyRecord(a.id, changes).record;
    // Live: the account's first key, one expired (never revoked), one rotating out (grace ahead).
    expect(await store.addKey(record({ expiresAt: Date.now() - 1000 }), 5)).toBe(true);
    const rotating = record();
    expect(await store.addKey(rotating, 5)).toBe(true);
    expect((await store.revokeKey(a.id, rotating.id, 60_000)).status).toBe("revoked");
    // Not live: one revoked.
    const revoked = record();
    expect(await store.addKey(revoked, 5)).toBe(true);
    expect((await store.revokeKey(a.id, revoked.id, 0)).status).toBe("revoked");
    // 3 of 5 live: of 20 racing additions, exactly 2 are made.
    const added = await Promise.all(Array.from({ length: 20 }, () => store.addKey(record(), 5)));
    expect(added.filter(Boolean)).toHaveLength(2);
    const keys = await store.listKeys(a.id);
    expect(keys).toHaveLength(6);
    expect(keys.filter((k) => k.revokedAt === null || k.revokedAt > Date.now())).toHaveLength(5);
    // A key refused is not stored at all: the admission does not know it.
    const refused = record();
    expect(await store.addKey(refused, 5)).toBe(false);
    expect(await debit(a.id, refused.hash, 0)).toEqual({ status: "invalid_key" });
    // Without a cap (sign-up, rotation, the operator's recovery key), a key is always added.
    expect(await store.addKey(record())).toBe(true);
  });

  it("keeps an account's most recently revoked keys only: older ones are forgotten (unknown to the admission), active and rotating keys stay", async () => {
    const a = await account();
    const base = Date.now() - 60_000;
    // Made and revoked in order, so a tie in revocation time still keeps the later key.
    const revokedInOrder: { id: string; hash: string }[] = [];
    for (let i = 0; i < REVOKED_KEYS_KEPT + 5; i++) {
      const { record } = newKeyRecord(a.id, { createdAt: base + i });
      await store.addKey(record);
      expect((await store.revokeKey(a.id, record.id, 0)).status).toBe("revoked");
      revokedInOrder.push({ id: record.id, hash: record.hash });
    }
    const rotating = newKeyRecord(a.id, { createdAt: base - 1 }).record;
    await store.addKey(rotating);
    expect((await store.revokeKey(a.id, rotating.id, 60_000)).status).toBe("revoked");
    // One more revocation through a rotation: it forgets too.
    const replaced = newKeyRecord(a.id, { createdAt: base + 1000 }).record;
    await store.addKey(replaced);
    const replacement = newKeyRecord(a.id).record;
    await store.addKey(replacement);
    expect(
      (await store.revokeKey(a.id, replaced.id, 0, { replacedBy: replacement.id })).status,
    ).toBe("revoked");
    revokedInOrder.push({ id: replaced.id, hash: replaced.hash });

    const listed = await store.listKeys(a.id);
    const kept = revokedInOrder.slice(-REVOKED_KEYS_KEPT);
    const forgotten = revokedInOrder.slice(0, -REVOKED_KEYS_KEPT);
    expect(forgotten).toHaveLength(6);
    expect(listed.filter((k) => k.revokedAt !== null && k.revokedAt <= Date.now())).toHaveLength(
      REVOKED_KEYS_KEPT,
    );
    expect(new Set(listed.map((k) => k.id))).toEqual(
      new Set([a.keyId, rotating.id, replacement.id, ...kept.map((k) => k.id)]),
    );
    // A forgotten key is unknown; a kept one still answers revoked; live keys work.
    expect(await debit(a.id, forgotten[0]!.hash, 0)).toEqual({ status: "invalid_key" });
    expect(await store.getKey(a.id, forgotten[0]!.id)).toBeNull();
    expect(await store.revokeKey(a.id, forgotten[0]!.id, 0)).toEqual({ status: "not_found" });
    expect(await debit(a.id, kept[0]!.hash, 0)).toEqual({ status: "revoked" });
    for (const live of [a.key.hash, rotating.hash, replacement.hash])
      expect((await debit(a.id, live, 0)).status).toBe("ok");
  });

  it("holds the bound on revoked keys when rotations race", async () => {
    const a = await account();
    for (let i = 0; i < REVOKED_KEYS_KEPT; i++) {
      const { record } = newKeyRecord(a.id);
      await store.addKey(record);
      await store.revokeKey(a.id, record.id, 0);
    }
    // 20 keys, each rotated without grace at the same moment (the new key added, the old revoked).
    const live = Array.from({ length: 20 }, () => newKeyRecord(a.id).record);
    for (const record of live) await store.addKey(record);
    const replacements = await Promise.all(
      live.map(async (old) => {
        const { record } = newKeyRecord(a.id);
        await store.addKey(record);
        expect((await store.revokeKey(a.id, old.id, 0, { replacedBy: record.id })).status).toBe(
          "revoked",
        );
        return record;
      }),
    );
    const listed = await store.listKeys(a.id);
    expect(listed.filter((k) => k.revokedAt !== null)).toHaveLength(REVOKED_KEYS_KEPT);
    expect(
      listed
        .filter((k) => k.revokedAt === null)
        .map((k) => k.id)
        .sort(),
    ).toEqual([a.keyId, ...replacements.map((k) => k.id)].sort());
    // The rotated-out keys are the most recent revocations: all kept.
    for (const old of live) expect(await debit(a.id, old.hash, 0)).toEqual({ status: "revoked" });
  });

  it("records when a key was last used, inside the admission, at most once per resolution window", async () => {
    const a = await account();
    expect((await store.listKeys(a.id))[0]!.lastUsedAt).toBeNull();
    const before = Date.now();
    await debit(a.id, a.key.hash, 0);
    const first = (await store.listKeys(a.id))[0]!.lastUsedAt!;
    expect(first).toBeGreaterThanOrEqual(before - 1000);
    expect(first).toBeLessThanOrEqual(Date.now() + 1000);
    await new Promise((r) => setTimeout(r, 20));
    await debit(a.id, a.key.hash, 1);
    expect((await store.listKeys(a.id))[0]!.lastUsedAt).toBe(first);
    expect(KEY_USE_RESOLUTION_MS).toBe(60_000);
    // A refused (revoked) key is not "used".
    const revoked = await store.revokeKey(a.id, a.keyId, 0);
    expect(revoked).toMatchObject({ status: "revoked", key: { lastUsedAt: first } });
  });

  it("counts a batch of requests all or none, and debits without counting when the door counted already", async () => {
    const a = await account(100, "business");
    const batchOf = (who: typeof a) => (requests: number) =>
      store.admit({
        accountId: who.id,
        keyHash: who.key.hash,
        cost: 0,
        requestId: newRequestId(),
        tool: null,
        reason: "",
        requests,
      });
    const batch = batchOf(a);
    expect(await batch(950)).toMatchObject({ status: "ok", rate: { limit: 1000, remaining: 50 } });
    expect(await batch(51)).toMatchObject({ status: "rate_limited", rate: { remaining: 50 } });
    expect(await batch(50)).toMatchObject({ status: "ok", rate: { remaining: 0 } });
    // A tier that may not send batches (no MCP) has one counted as one request: it is refused.
    const free = await account(100, "free");
    expect(await batchOf(free)(59)).toMatchObject({
      status: "ok",
      rate: { limit: 60, remaining: 59 },
    });
    const uncounted = await store.admit({
      accountId: a.id,
      keyHash: a.key.hash,
      cost: 2,
      requestId: newRequestId(),
      tool: "hash",
      reason: "tool call",
      countRequest: false,
    });
    expect(uncounted).toMatchObject({ status: "ok", charged: true, account: { balance: 98 } });
    expect(await debit(a.id, a.key.hash, 1)).toMatchObject({ status: "rate_limited" });
  });

  // A minted request id files its debit record in its slot's hash; any other (a payment's fee) in a key of its own.
  it.each([
    ["a request id minted for a call", () => newRequestId()],
    ["any other request id", () => `fee_${newRequestId()}`],
  ])("debits once per request id and refunds once per debit: %s", async (_, requestId) => {
    const a = await account(10);
    const id = requestId();
    const first = await debit(a.id, a.key.hash, 3, id);
    const second = await debit(a.id, a.key.hash, 3, id);
    expect(first).toMatchObject({ status: "ok", charged: true, account: { balance: 7 } });
    expect(second).toMatchObject({ status: "ok", charged: false, account: { balance: 7 } });
    expect(second).not.toHaveProperty("refunded");
    const refund = { requestId: id, reason: "tool failed", tool: "hash", keyHash: a.key.hash };
    expect(await store.refund(a.id, refund)).toEqual({
      status: "refunded",
      amount: 3,
      balance: 10,
    });
    expect(await store.refund(a.id, refund)).toEqual({ status: "already_refunded" });
    // Refunded, the request id is not debited again, and the admission says it was given back.
    expect(await debit(a.id, a.key.hash, 3, id)).toMatchObject({
      status: "ok",
      charged: false,
      refunded: true,
      account: { balance: 10 },
    });
    expect(await store.refund(a.id, { requestId: newRequestId(), reason: "x" })).toEqual({
      status: "not_charged",
    });
    expect(await store.refund(a.id, { requestId: "req_never", reason: "x" })).toEqual({
      status: "not_charged",
    });
    expect((await store.getAccount(a.id))?.balance).toBe(10);
    const rows = (await store.ledger(a.id, { limit: 10 })).items.map((e) => [
      e.kind,
      e.amount,
      e.balance,
      e.tool,
      e.keyId,
    ]);
    // The refund names the tool and key whose debit it returns.
    expect(rows).toEqual([
      ["refund", 3, 10, "hash", a.keyId],
      ["debit", -3, 7, "hash", a.keyId],
      ["grant", 10, 10, null, null],
    ]);
  });

  it("never takes the balance below zero", async () => {
    const a = await account(2);
    expect((await debit(a.id, a.key.hash, 3)).status).toBe("insufficient_credits");
    expect((await store.getAccount(a.id))?.balance).toBe(2);
    expect((await store.ledger(a.id, { limit: 10 })).items).toHaveLength(1);
  });

  it("fires credits.low and credits.depleted exactly once each under concurrent debits", async () => {
    const a = await account(100);
    const results = await Promise.all(Array.from({ length: 150 }, () => debit(a.id, null, 1)));
    expect(results.filter((r) => r.status === "ok" && r.charged)).toHaveLength(100);
    expect(results.filter((r) => r.status === "insufficient_credits")).toHaveLength(50);
    expect((await store.getAccount(a.id))?.balance).toBe(0);
    const events = await store.readOutbox(a.id, 100);
    expect(events.map((e) => e.event)).toEqual(["credits.low", "credits.depleted"]);
    expect(events[0]!.data).toEqual({ credits_remaining: 19, tool_name: "hash", threshold: 20 });
    expect(events[1]!.data).toMatchObject({ credits_remaining: 0, tool_name: "hash" });
  });

  it("re-arms the alerts on the next top-up, and a top-up is applied once per request id", async () => {
    const a = await account(10);
    await debit(a.id, null, 10);
    expect(
      await store.topUp(a.id, "purchase", { amount: 50, requestId: "pay_1", reason: "pack" }),
    ).toMatchObject({ applied: true, account: { balance: 50, reference: 50 } });
    expect(
      await store.topUp(a.id, "purchase", { amount: 50, requestId: "pay_1", reason: "pack" }),
    ).toMatchObject({ applied: false, account: { balance: 50 } });
    await debit(a.id, null, 41);
    const events = (await store.readOutbox(a.id, 10)).map((e) => [
      e.event,
      e.data.credits_remaining,
    ]);
    expect(events).toEqual([
      ["credits.low", 0],
      ["credits.depleted", 0],
      ["credits.low", 9],
    ]);
    expect(
      await store.topUp(newAccountId(), "grant", { amount: 1, requestId: "x", reason: "x" }),
    ).toBeNull();
  });

  it("re-arms an alert when a refund lifts the balance back over its line: a refunded call's alert does not stand in for the next real one", async () => {
    const a = await account(100); // credits.low below 20
    const refund = (requestId: string) => store.refund(a.id, { requestId, reason: "tool failed" });
    const r1 = newRequestId();
    await debit(a.id, null, 81, r1); // 19: low
    await refund(r1); // 100: over the line again
    await debit(a.id, null, 81); // 19: low again, a real one
    const r3 = newRequestId();
    await debit(a.id, null, 19, r3); // 0: depleted
    await refund(r3); // 19: still under the low line, over zero
    await debit(a.id, null, 19); // 0: depleted again; no second low
    const events = (await store.readOutbox(a.id, 10)).map((e) => [
      e.event,
      e.data.credits_remaining,
    ]);
    expect(events).toEqual([
      ["credits.low", 19],
      ["credits.low", 19],
      ["credits.depleted", 0],
      ["credits.depleted", 0],
    ]);

    // An account no top-up armed (a wallet paying per call) has no alerts, refunds or not.
    const wallet = await account(0);
    await store.topUp(wallet.id, "purchase", {
      amount: 5,
      requestId: newRequestId(),
      reason: "one call",
      rearm: false,
    });
    const paid = newRequestId();
    await debit(wallet.id, null, 5, paid);
    await store.refund(wallet.id, { requestId: paid, reason: "tool failed" });
    await debit(wallet.id, null, 5);
    expect(await store.readOutbox(wallet.id, 10)).toEqual([]);
  });

  it("rate-limits exactly at the tier's limit, with the rejected call uncharged", async () => {
    const a = await account(1000, "free");
    const results = [];
    for (let i = 0; i < 62; i++) results.push(await debit(a.id, a.key.hash, 1));
    expect(results.filter((r) => r.status === "ok")).toHaveLength(60);
    const limited = results.at(-1)!;
    expect(limited).toMatchObject({ status: "rate_limited", rate: { limit: 60, remaining: 0 } });
    if (limited.status === "rate_limited") expect(limited.rate.resetMs).toBeGreaterThan(50_000);
    expect((results[0] as { rate: { remaining: number } }).rate.remaining).toBe(59);
    expect((await store.getAccount(a.id))?.balance).toBe(940);
  });

  it("verifies an e-mail once and tops a verified Free account up to 500 each period", async () => {
    const a = await account(25, "free");
    expect(
      await store.verifyEmail(a.id, { amount: 75, requestId: "verify", reason: "e-mail verified" }),
    ).toBe("verified");
    expect(
      await store.verifyEmail(a.id, {
        amount: 75,
        requestId: "verify2",
        reason: "e-mail verified",
      }),
    ).toBe("already_verified");
    expect(
      await store.verifyEmail(newAccountId(), { amount: 75, requestId: "v", reason: "x" }),
    ).toBe("not_found");
    expect(await store.getAccount(a.id)).toMatchObject({ balance: 100, emailVerified: true });
    await new Promise((r) => setTimeout(r, PERIOD_MS + 50));
    expect(await debit(a.id, a.key.hash, 1)).toMatchObject({
      status: "ok",
      account: { balance: 499 },
    });
    expect(await debit(a.id, a.key.hash, 1)).toMatchObject({
      status: "ok",
      account: { balance: 498 },
    });
    const kinds = (await store.ledger(a.id, { limit: 3 })).items.map((e) => [e.kind, e.amount]);
    expect(kinds).toEqual([
      ["debit", -1],
      ["debit", -1],
      ["allowance", 400],
    ]);
  });

  it("claims an e-mail for one account only", async () => {
    const a = await account();
    const email = `${newAccountId()}@example.com`;
    const now = Date.now();
    expect(await store.claimEmail(email, a.id, now)).toBe(true);
    expect(await store.claimEmail(email, newAccountId(), now + EMAIL_CLAIM_SETTLE_MS)).toBe(false);
    expect(await store.accountIdByEmail(email)).toBe(a.id);
    // A claim whose account is not made yet belongs to its sign-up, which may still be making it.
    const young = `${newAccountId()}@example.com`;
    expect(await store.claimEmail(young, newAccountId(), now)).toBe(true);
    expect(await store.claimEmail(young, a.id, now + EMAIL_CLAIM_SETTLE_MS - 1)).toBe(false);
    // Once older, it was left by a sign-up that died: it is taken over, by one of those racing for it.
    const orphan = `${newAccountId()}@example.com`;
    expect(await store.claimEmail(orphan, newAccountId(), now - EMAIL_CLAIM_SETTLE_MS)).toBe(true);
    const racers = Array.from({ length: 5 }, () => newAccountId());
    const won = await Promise.all(racers.map((id) => store.claimEmail(orphan, id, now)));
    expect(won.filter(Boolean)).toHaveLength(1);
    expect(await store.accountIdByEmail(orphan)).toBe(racers[won.indexOf(true)]);
  });

  it("pages through accounts and ledger entries without repeats", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await account(1)).id);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await store.listAccounts({ cursor, limit: 2 });
      seen.push(...page.items.map((a) => a.id));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.filter((id) => ids.includes(id)).sort()).toEqual([...ids].sort());

    const a = await account(10);
    for (let i = 0; i < 4; i++) await debit(a.id, null, 1);
    const first = await store.ledger(a.id, { limit: 3 });
    const second = await store.ledger(a.id, { cursor: first.nextCursor!, limit: 3 });
    expect(first.items.map((e) => e.balance)).toEqual([6, 7, 8]);
    expect(second.items.map((e) => e.balance)).toEqual([9, 10]);
    expect(second.nextCursor).toBeNull();
    // Any entry id is a cursor, the page starting strictly before it.
    const [ms, seq] = first.items[1]!.id.split("-").map(Number) as [number, number];
    expect(
      (await store.ledger(a.id, { cursor: `${ms}-${seq + 1}`, limit: 1 })).items.map(
        (e) => e.balance,
      ),
    ).toEqual([7]);
  });

  it("refuses a cursor it never handed out rather than starting again from the top", async () => {
    const a = await account(10);
    for (const cursor of [
      "garbage",
      "",
      "1-2-3",
      "-1-0",
      "18446744073709551616-0",
      "99999999999999999999999-0",
      "0-0",
    ]) {
      await expect(store.ledger(a.id, { cursor, limit: 3 }), cursor).rejects.toBeInstanceOf(
        InvalidCursorError,
      );
    }
    // An empty cursor too: the HTTP query `cursor=` reaches the store as "", not as no cursor.
    for (const cursor of [newAccountId(), ""])
      await expect(store.listAccounts({ cursor, limit: 3 }), cursor).rejects.toBeInstanceOf(
        InvalidCursorError,
      );
  });

  it("writes a refund's events only when the refund applies", async () => {
    const a = await account(10);
    await debit(a.id, null, 2, "req_fail");
    const toolError = () => [
      eventRecord(newEventId(), "tool.error", a.id, { tool_name: "hash", credits_charged: 0 }),
    ];
    expect(
      (await store.refund(a.id, { requestId: "req_fail", reason: "tool failed" }, toolError()))
        .status,
    ).toBe("refunded");
    expect(
      (await store.refund(a.id, { requestId: "req_fail", reason: "tool failed" }, toolError()))
        .status,
    ).toBe("already_refunded");
    expect((await store.readOutbox(a.id, 10)).map((e) => e.event)).toEqual(["tool.error"]);
    expect(await store.outboxAccounts()).toContain(a.id);
  });

  it("admits a call under its idempotency key in one step: charged once, replayed, refused calls free the key, a takeover is left to the caller", async () => {
    const a = await account(2);
    const call = (requestId: string, cost = 1) => ({
      accountId: a.id,
      keyHash: a.key.hash,
      cost,
      requestId,
      tool: "hash",
      reason: "tool call",
    });
    const claim = (requestId: string, fingerprint = "fp", leaseMs = 5000) => ({
      fingerprint,
      requestId,
      leaseMs,
      ttlSeconds: 60,
    });
    // Ten requests at once with one key: one claims it and is charged, the others see it in progress.
    const ids = Array.from({ length: 10 }, () => newRequestId());
    const all = await Promise.all(
      ids.map((id) => store.admitIdempotent(call(id), "k1", claim(id))),
    );
    const started = all.filter((r) => r.claim.state === "started");
    expect(started).toHaveLength(1);
    expect(started[0]!.admitted).toMatchObject({ status: "ok", charged: true });
    expect((await store.getAccount(a.id))!.balance).toBe(1);
    expect(all.filter((r) => r.claim.state === "in_progress" && r.admitted === null)).toHaveLength(
      9,
    );
    // Completed: replayed, and nothing admitted or charged.
    const response = { status: 200, body: '{"ok":true}', headers: {} };
    await store.completeIdempotent(a.id, "k1", response, KEEP_60S);
    const again = newRequestId();
    expect(await store.admitIdempotent(call(again), "k1", claim(again))).toEqual({
      claim: { state: "completed", response },
      admitted: null,
    });
    const other = newRequestId();
    expect(await store.admitIdempotent(call(other), "k1", claim(other, "fp-other"))).toEqual({
      claim: { state: "conflict" },
      admitted: null,
    });
    expect((await store.getAccount(a.id))!.balance).toBe(1);
    // Refused (too few credits): the key is free again, for a retry that can pay.
    const poor = newRequestId();
    const refused = await store.admitIdempotent(call(poor, 5), "k2", claim(poor));
    expect(refused.claim).toEqual({ state: "started", requestId: poor });
    expect(refused.admitted).toMatchObject({ status: "insufficient_credits" });
    const retry = newRequestId();
    expect((await store.admitIdempotent(call(retry), "k2", claim(retry))).admitted).toMatchObject({
      status: "ok",
      charged: true,
    });
    expect((await store.getAccount(a.id))!.balance).toBe(0);
    // A claim whose holder died is handed over under the request id it was charged under, not
    // admitted here: the caller admits it under that id (its debit already made, so not charged twice).
    const died = newRequestId();
    await store.beginIdempotent(a.id, "k3", claim(died, "fp", 50));
    await new Promise((r) => setTimeout(r, 100));
    const taker = newRequestId();
    expect(await store.admitIdempotent(call(taker), "k3", claim(taker, "fp", 50))).toEqual({
      claim: { state: "started", requestId: died },
      admitted: null,
    });
  });

  it("keeps a claim for its whole lease, even past the record's lifetime (a long call, a short IDEMPOTENCY_TTL_SECONDS)", async () => {
    const a = await account();
    // The record would live 0.2 s, the call holding it 1.5 s: a retry meanwhile must wait, not run
    // (and be charged) a second time.
    const claim = (requestId: string) => ({
      fingerprint: "fp",
      requestId,
      leaseMs: 1500,
      ttlSeconds: 0.2,
    });
    expect(await store.beginIdempotent(a.id, "long", claim("req_long"))).toEqual({
      state: "started",
      requestId: "req_long",
    });
    await new Promise((r) => setTimeout(r, 400));
    expect(await store.beginIdempotent(a.id, "long", claim("req_retry"))).toEqual({
      state: "in_progress",
      requestId: "req_long",
    });
    const admitted = await store.admitIdempotent(
      {
        accountId: a.id,
        keyHash: null,
        cost: 1,
        requestId: "req_admit",
        tool: "hash",
        reason: "tool call",
      },
      "long",
      claim("req_admit"),
    );
    expect(admitted).toEqual({
      claim: { state: "in_progress", requestId: "req_long" },
      admitted: null,
    });
  });

  it("tells a failed call's answer to the requests that waited on it, and frees the key for any other", async () => {
    const a = await account();
    const claim = (requestId: string, awaiting?: string) => ({
      fingerprint: "fp",
      requestId,
      leaseMs: 5000,
      ttlSeconds: 60,
      ...(awaiting ? { awaiting } : {}),
    });
    expect(await debit(a.id, null, 2, "req_fails")).toMatchObject({ status: "ok" });
    await store.beginIdempotent(a.id, "fails", claim("req_fails"));
    expect(await store.beginIdempotent(a.id, "fails", claim("req_waiter"))).toEqual({
      state: "in_progress",
      requestId: "req_fails",
    });
    const failure = { code: "validation_failed", message: "bad x", param: "x" };
    const refunded = await store.refund(a.id, {
      requestId: "req_fails",
      reason: "tool failed",
      idempotencyKey: "fails",
      failure,
    });
    expect(refunded.status).toBe("refunded");
    // The waiter is told, as often as it asks; it never runs the call.
    for (let i = 0; i < 2; i++)
      expect(await store.beginIdempotent(a.id, "fails", claim("req_waiter", "req_fails"))).toEqual({
        state: "failed",
        failure,
      });
    // A request that waited on nothing (a retry after the answer) runs the call again.
    expect(await store.beginIdempotent(a.id, "fails", claim("req_retry"))).toEqual({
      state: "started",
      requestId: "req_retry",
    });
    // And one that waited on that retry waits again.
    expect(await store.beginIdempotent(a.id, "fails", claim("req_late", "req_fails"))).toEqual({
      state: "in_progress",
      requestId: "req_retry",
    });
  });

  it("stores no answer for a key whose claim is gone (a later request with the key runs, not 409)", async () => {
    const a = await account();
    const claim = (requestId: string) => ({
      fingerprint: "fp",
      requestId,
      leaseMs: 5000,
      ttlSeconds: 60,
    });
    await store.beginIdempotent(a.id, "gone", claim("req_first"));
    // Its claim forgotten (refunded by a survivor, abandoned) while the call was still answering.
    await store.abandonIdempotent(a.id, "gone");
    await store.completeIdempotent(
      a.id,
      "gone",
      { status: 200, body: "{}", headers: {} },
      KEEP_60S,
    );
    expect(await store.beginIdempotent(a.id, "gone", claim("req_retry"))).toEqual({
      state: "started",
      requestId: "req_retry",
    });
  });

  it("keeps an account's answers up to its byte limit; past it, a retry of a served call is told its answer was not kept", async () => {
    const a = await account();
    const b = await account();
    const claim = (requestId: string, fingerprint = "fp") => ({
      fingerprint,
      requestId,
      leaseMs: 5000,
      ttlSeconds: 60,
    });
    const answer = (n: number) => ({ status: 200, body: "x".repeat(n), headers: {} });
    const size = (n: number) => Buffer.byteLength(JSON.stringify(answer(n)));
    const keep = { ttlSeconds: 60, accountLimitBytes: size(400) + size(500) };
    await store.beginIdempotent(a.id, "first", claim("req_1"));
    expect(await store.completeIdempotent(a.id, "first", answer(400), keep)).toBe(true);
    await store.beginIdempotent(a.id, "second", claim("req_2"));
    expect(await store.completeIdempotent(a.id, "second", answer(501), keep)).toBe(false);
    // The one that fits what is left is kept; the kept and the refused are told apart on a retry.
    await store.beginIdempotent(a.id, "third", claim("req_3"));
    expect(await store.completeIdempotent(a.id, "third", answer(500), keep)).toBe(true);
    expect(await store.beginIdempotent(a.id, "first", claim("req_4"))).toEqual({
      state: "completed",
      response: answer(400),
    });
    expect(await store.beginIdempotent(a.id, "second", claim("req_5"))).toEqual({
      state: "not_kept",
    });
    const admission = {
      accountId: a.id,
      keyHash: a.key.hash,
      cost: 1,
      requestId: "req_6",
      tool: "hash",
      reason: "tool call",
    };
    expect(await store.admitIdempotent(admission, "second", claim("req_6"))).toEqual({
      claim: { state: "not_kept" },
      admitted: null,
    });
    // Another body under the key is still a conflict, not an answer about the first.
    expect(await store.beginIdempotent(a.id, "second", claim("req_7", "fp-other"))).toEqual({
      state: "conflict",
    });
    // Each account has its own limit.
    await store.beginIdempotent(b.id, "first", claim("req_8"));
    expect(await store.completeIdempotent(b.id, "first", answer(501), keep)).toBe(true);
  });

  it("releases a claim's lease for the next retry, keeping its request id; never a completed or gone record", async () => {
    const a = await account();
    const claim = (requestId: string) => ({
      fingerprint: "fp",
      requestId,
      leaseMs: 60_000,
      ttlSeconds: 60,
    });
    await store.beginIdempotent(a.id, "held", claim("req_first"));
    expect(await store.beginIdempotent(a.id, "held", claim("req_waiting"))).toEqual({
      state: "in_progress",
      requestId: "req_first",
    });
    await store.releaseIdempotent(a.id, "held");
    expect(await store.beginIdempotent(a.id, "held", claim("req_retry"))).toEqual({
      state: "started",
      requestId: "req_first",
    });
    const response = { status: 200, body: "{}", headers: {} };
    await store.completeIdempotent(a.id, "held", response, KEEP_60S);
    await store.releaseIdempotent(a.id, "held");
    expect(await store.beginIdempotent(a.id, "held", claim("req_late"))).toEqual({
      state: "completed",
      response,
    });
    await store.releaseIdempotent(a.id, "never-claimed");
    expect(await store.beginIdempotent(a.id, "never-claimed", claim("req_new"))).toEqual({
      state: "started",
      requestId: "req_new",
    });
  });

  it("claims an idempotency key once, replays its response, and refuses another fingerprint", async () => {
    const a = await account();
    const claim = (fingerprint: string, requestId = newRequestId(), leaseMs = 5000) => ({
      fingerprint,
      requestId,
      leaseMs,
      ttlSeconds: 60,
    });
    const states = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        store.beginIdempotent(a.id, "idem-1", claim("fp-a", `req_${i}`)),
      ),
    );
    expect(states.filter((s) => s.state === "started")).toHaveLength(1);
    expect(states.filter((s) => s.state === "in_progress")).toHaveLength(9);
    expect(await store.beginIdempotent(a.id, "idem-1", claim("fp-b"))).toEqual({
      state: "conflict",
    });
    const response = { status: 200, body: '{"ok":true}', headers: { "x-credits-charged": "1" } };
    await store.completeIdempotent(a.id, "idem-1", response, KEEP_60S);
    expect(await store.beginIdempotent(a.id, "idem-1", claim("fp-a"))).toEqual({
      state: "completed",
      response,
    });
    // Keys are per account, and an abandoned claim can be made again.
    const b = await account();
    expect(await store.beginIdempotent(b.id, "idem-1", claim("fp-a", "req_first"))).toEqual({
      state: "started",
      requestId: "req_first",
    });
    await store.abandonIdempotent(b.id, "idem-1");
    expect(await store.beginIdempotent(b.id, "idem-1", claim("fp-z", "req_again"))).toEqual({
      state: "started",
      requestId: "req_again",
    });
    // A claim whose holder died is handed over when its lease ends, with the request id it was charged under.
    expect(await store.beginIdempotent(b.id, "idem-2", claim("fp", "req_died", 100))).toEqual({
      state: "started",
      requestId: "req_died",
    });
    expect(await store.beginIdempotent(b.id, "idem-2", claim("fp", "req_retry", 100))).toEqual({
      state: "in_progress",
      requestId: "req_died",
    });
    await new Promise((r) => setTimeout(r, 150));
    expect(await store.beginIdempotent(b.id, "idem-2", claim("fp", "req_retry", 100))).toEqual({
      state: "started",
      requestId: "req_died",
    });
    expect(await store.beginIdempotent(b.id, "idem-2", claim("fp", "req_other", 100))).toEqual({
      state: "in_progress",
      requestId: "req_died",
    });
    // The request holding a claim may begin again (a paid call claims before settling, then runs): it continues, others still wait.
    expect(await store.beginIdempotent(b.id, "idem-4", claim("fp", "req_holder"))).toEqual({
      state: "started",
      requestId: "req_holder",
    });
    expect(await store.beginIdempotent(b.id, "idem-4", claim("fp", "req_holder"))).toEqual({
      state: "started",
      requestId: "req_holder",
    });
    expect(await store.beginIdempotent(b.id, "idem-4", claim("fp", "req_waiter"))).toEqual({
      state: "in_progress",
      requestId: "req_holder",
    });
    expect(await store.beginIdempotent(b.id, "idem-4", claim("fp-other", "req_holder"))).toEqual({
      state: "conflict",
    });
    // A refund forgets the call's key in the same step: the retry is a new call, charged anew.
    expect(await debit(b.id, null, 3, "req_taken")).toMatchObject({ status: "ok", charged: true });
    expect(await store.beginIdempotent(b.id, "idem-3", claim("fp", "req_taken"))).toMatchObject({
      state: "started",
    });
    expect(
      (
        await store.refund(b.id, {
          requestId: "req_taken",
          reason: "tool failed",
          idempotencyKey: "idem-3",
        })
      ).status,
    ).toBe("refunded");
    expect(await store.beginIdempotent(b.id, "idem-3", claim("fp", "req_new"))).toEqual({
      state: "started",
      requestId: "req_new",
    });
    // Only the claim the refunding request holds: a refund under another request id (one that
    // lost the store mid-admission, not knowing whether it held the key) leaves req_new's claim.
    expect(
      (
        await store.refund(b.id, {
          requestId: "req_lost",
          reason: "store unavailable during admission",
          idempotencyKey: "idem-3",
        })
      ).status,
    ).toBe("not_charged");
    expect(await store.beginIdempotent(b.id, "idem-3", claim("fp", "req_after"))).toEqual({
      state: "in_progress",
      requestId: "req_new",
    });
  });

  it("logs each event once, however often it is logged, newest first", async () => {
    const a = await account();
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
    const first = eventRecord(
      newEventId(),
      "tool.error",
      a.id,
      { tool_name: "hash", credits_charged: 0 },
      at(1),
    );
    const second = eventRecord(
      newEventId(),
      "credits.low",
      a.id,
      { credits_remaining: 1, tool_name: "hash", threshold: 2 },
      at(2),
    );
    await Promise.all([
      store.logEvents(a.id, [first, second], 10),
      store.logEvents(a.id, [first, second], 10),
      store.logEvents(a.id, [first], 10),
    ]);
    expect((await store.listEvents(a.id, 10)).map((e) => e.id)).toEqual([second.id, first.id]);
  });

  it("keeps every logged event for the books exporter, oldest first, until it forgets the ones it exported", async () => {
    const a = await account();
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
    const events = [1, 2, 2, 3].map((s) =>
      eventRecord(
        newEventId(),
        "tool.error",
        a.id,
        { tool_name: `t${s}`, credits_charged: 0 },
        at(s),
      ),
    );
    await store.logEvents(a.id, events.slice(0, 3), null);
    await store.logEvents(a.id, events.slice(3), null);
    const oldest = await store.oldestLoggedEvents(a.id, 2);
    expect(oldest.map((e) => e.data.tool_name)).toEqual(["t1", "t2"]);
    // The backlog names the account, from its oldest logged event.
    const backlog = async () => {
      for (let cursor: string | undefined; ; ) {
        const page = await store.ledgerBacklog({ cursor, limit: 100 });
        const mine = page.items.find((b) => b.accountId === a.id);
        if (mine || !page.nextCursor) return mine;
        cursor = page.nextCursor;
      }
    };
    expect((await backlog())?.oldestAt).toBeLessThanOrEqual(at(1).getTime());
    // Forgetting the exported ones leaves the rest (the other event of the same second too).
    await store.forgetLoggedEvents(a.id, oldest);
    const rest = await store.oldestLoggedEvents(a.id, 10);
    expect(rest.map((e) => e.id).sort()).toEqual(
      events
        .map((e) => e.id)
        .filter((id) => !oldest.some((o) => o.id === id))
        .sort(),
    );
    await store.forgetLoggedEvents(a.id, rest);
    expect(await store.listEvents(a.id, 10)).toEqual([]);
  });

  it("applies a plan for a period, extends it on renewal, and falls back to Free when it ends unpaid", async () => {
    const a = await account(0, "free");
    const first = await buyPlan(a.id, "starter", 400, "plan-1");
    expect(first).toMatchObject({
      planType: "subscription",
      account: { tier: "starter", balance: 100 },
    });
    const firstEnd = first!.account.planExpiresAt;
    const renewed = await buyPlan(a.id, "starter", 400, "plan-2", "renewal");
    expect(renewed!.account.planExpiresAt).toBe(firstEnd + 400);
    expect(renewed!.planType).toBe("renewal");
    expect((await buyPlan(a.id, "starter", 400, "plan-2", "renewal"))!.account.planExpiresAt).toBe(
      firstEnd + 400,
    );
    expect(await debit(a.id, a.key.hash, 0)).toMatchObject({
      status: "ok",
      account: { tier: "starter" },
      rate: { limit: 300 },
    });
    await new Promise((r) => setTimeout(r, renewed!.account.planExpiresAt - Date.now() + 50));
    // Read before any request admits the account again (a dashboard session, the webhook relay):
    // the plan that ended is not in force there either.
    expect(await store.getAccount(a.id)).toMatchObject({ tier: "free", planExpiresAt: 0 });
    expect((await store.getAccounts([a.id]))[0]).toMatchObject({ tier: "free" });
    expect(await debit(a.id, a.key.hash, 0)).toMatchObject({
      status: "ok",
      account: { tier: "free", planExpiresAt: 0, balance: 200 },
      rate: { limit: 60 },
    });
  });

  it("carries a lower plan's unused time into an upgrade, as time at the two plans' prices", async () => {
    const a = await account(0, "free");
    const starterEnd = (await buyPlan(a.id, "starter", 4_900_000, "carry-1"))!.account
      .planExpiresAt;
    const before = Date.now();
    const pro = await buyPlan(a.id, "pro", 1_000_000, "carry-2");
    const after = Date.now();
    expect(pro).toMatchObject({ planType: "subscription", account: { tier: "pro" } });
    // Pro's period from the purchase, plus Starter's time left then at $19 as time at $49.
    const endIfBoughtAt = (now: number) => now + 1_000_000 + ((starterEnd - now) * 19) / 49;
    expect(pro!.account.planExpiresAt).toBeGreaterThanOrEqual(
      Math.floor(endIfBoughtAt(before)) - 1,
    );
    expect(pro!.account.planExpiresAt).toBeLessThanOrEqual(Math.ceil(endIfBoughtAt(after)) + 1);
    // A plan bought after the held one lapsed carries nothing.
    const b = await account(0, "free");
    const shortStarter = await buyPlan(b.id, "starter", 50, "carry-3");
    await new Promise((r) => setTimeout(r, shortStarter!.account.planExpiresAt - Date.now() + 20));
    const start = Date.now();
    const late = await buyPlan(b.id, "pro", 1_000_000, "carry-4");
    expect(late!.account.planExpiresAt - start).toBeLessThanOrEqual(
      1_000_000 + (Date.now() - start),
    );
    expect(late!.account.planExpiresAt - start).toBeGreaterThanOrEqual(1_000_000 - 5);
  });

  it("never lowers the tier nor ends one held without an end date: the plan's credits are added, the tier kept, and its payment.received says one_time", async () => {
    const a = await account(0, "business");
    const buy = (tier: string, requestId: string) => {
      const event = eventRecord(newEventId(), "payment.received", a.id, {
        type: "subscription",
        credits_added: 100,
        amount_usd: "19.00",
        plan: tier,
        agent_id: a.id,
        payment_session_id: requestId,
      });
      return store.topUp(a.id, "purchase", { amount: 100, requestId, reason: "plan" }, [event], {
        tier,
        periodMs: 60_000,
      });
    };
    expect(await buy("starter", "lower-1")).toMatchObject({
      applied: true,
      planType: "one_time",
      account: { tier: "business", planExpiresAt: 0, balance: 100 },
    });
    await store.setTier(a.id, "pro");
    expect(await buy("pro", "same-1")).toMatchObject({
      planType: "one_time",
      account: { tier: "pro", planExpiresAt: 0, balance: 200 },
    });
    expect(
      (await store.readOutbox(a.id, 10))
        .filter((e) => e.event === "payment.received")
        .map((e) => (e.data as { type: string }).type),
    ).toEqual(["one_time", "one_time"]);
  });

  it("changes the tier and counts a generic bucket", async () => {
    const a = await account();
    expect(await store.setTier(a.id, "pro")).toMatchObject({ tier: "pro" });
    expect(await store.setTier(newAccountId(), "pro")).toBeNull();
    const bucket = `signup:${newAccountId()}`;
    const hits = [];
    for (let i = 0; i < 4; i++)
      hits.push(await store.hitRateLimit(bucket, 3, 60_000, newRequestId()));
    expect(hits.map((h) => h.allowed)).toEqual([true, true, true, false]);
    expect(hits.map((h) => h.remaining)).toEqual([2, 1, 0, 0]);
  });

  it("changes nothing when set to the tier the account has: a paid plan's period still ends; another tier has no end", async () => {
    const a = await account(0, "free");
    const end = (await buyPlan(a.id, "starter", 60_000, "same-tier-1"))!.account.planExpiresAt;
    expect(end).toBeGreaterThan(Date.now());
    expect(await store.setTier(a.id, "starter")).toMatchObject({
      tier: "starter",
      planExpiresAt: end,
    });
    expect(await store.getAccount(a.id)).toMatchObject({ tier: "starter", planExpiresAt: end });
    // Another tier is an operator's: open-ended, and so is setting it again.
    expect(await store.setTier(a.id, "pro")).toMatchObject({ tier: "pro", planExpiresAt: 0 });
    expect(await store.setTier(a.id, "pro")).toMatchObject({ tier: "pro", planExpiresAt: 0 });
    // A plan whose period is over is Free already: its tier set again is the operator's, open-ended.
    const b = await account(0, "free");
    const short = await buyPlan(b.id, "starter", 200, "same-tier-2");
    await new Promise((r) => setTimeout(r, short!.account.planExpiresAt - Date.now() + 50));
    expect(await store.setTier(b.id, "starter")).toMatchObject({
      tier: "starter",
      planExpiresAt: 0,
    });
    expect(await store.getAccount(b.id)).toMatchObject({ tier: "starter", planExpiresAt: 0 });
  });

  it("binds an account to its dedicated workers, and the admission brings the binding back with the account", async () => {
    const a = await account();
    expect((await store.getAccount(a.id))!.dedicatedWorkersUrl).toBeNull();
    expect(await store.setDedicatedWorkers(a.id, "https://workers.acme.example")).toMatchObject({
      id: a.id,
      dedicatedWorkersUrl: "https://workers.acme.example",
    });
    // The hot path learns where to send the call from the admission itself: no extra read.
    expect(await debit(a.id, a.key.hash)).toMatchObject({
      status: "ok",
      account: { dedicatedWorkersUrl: "https://workers.acme.example", balance: 99 },
    });
    expect(await store.setTier(a.id, "pro")).toMatchObject({
      tier: "pro",
      dedicatedWorkersUrl: "https://workers.acme.example",
    });
    expect(await store.unbindDedicatedWorkers(a.id)).toMatchObject({
      status: "unbound",
      account: { dedicatedWorkersUrl: null },
    });
    expect(await debit(a.id, a.key.hash)).toMatchObject({
      status: "ok",
      account: { dedicatedWorkersUrl: null },
    });
    expect(
      await store.setDedicatedWorkers(newAccountId(), "https://workers.acme.example"),
    ).toBeNull();
    expect(await store.unbindDedicatedWorkers(newAccountId())).toEqual({ status: "not_found" });
  });

  // A DELETE decided in the store's one step: of several at once, one removes and the others find nothing.
  it.each([
    {
      thing: "dedicated workers' binding",
      add: (id: string) => store.setDedicatedWorkers(id, "https://workers.acme.example"),
      remove: (id: string) => store.unbindDedicatedWorkers(id),
      removed: "unbound",
      none: "not_bound",
      left: async (id: string) => (await store.getAccount(id))!.dedicatedWorkersUrl,
    },
    {
      thing: "spend alert",
      add: (id: string) => store.setSpendAlert(id, { credits: 10 }),
      remove: (id: string) => store.removeSpendAlert(id),
      removed: "removed",
      none: "not_set",
      left: async (id: string) => (await store.getAccount(id))!.spendAlert,
    },
  ])(
    "removes the $thing once: of several removals at once, one removes it and the others find none",
    async ({ add, remove, removed, none, left }) => {
      const a = await account();
      for (let round = 0; round < 3; round++) {
        await add(a.id);
        const outcomes = await Promise.all(Array.from({ length: 5 }, () => remove(a.id)));
        expect(outcomes.map((o) => o.status).sort()).toEqual([none, none, none, none, removed]);
        expect(await left(a.id)).toBeNull();
      }
      expect(await remove(a.id)).toEqual({ status: none });
    },
  );

  it("counts several hits in a generic bucket all or none: a refused batch counts nothing", async () => {
    const bucket = `mcp:${newAccountId()}`;
    expect(await store.hitRateLimit(bucket, 10, 60_000, newRequestId(), 7)).toMatchObject({
      allowed: true,
      remaining: 3,
    });
    expect(await store.hitRateLimit(bucket, 10, 60_000, newRequestId(), 4)).toMatchObject({
      allowed: false,
      remaining: 3,
    });
    expect(await store.hitRateLimit(bucket, 10, 60_000, newRequestId(), 3)).toMatchObject({
      allowed: true,
      remaining: 0,
    });
    expect((await store.hitRateLimit(bucket, 10, 60_000, newRequestId())).allowed).toBe(false);
  });

  it("gives back a hit that did not count, so the bucket admits another", async () => {
    const bucket = `signup:${newAccountId()}`;
    const ids = [newRequestId(), newRequestId()];
    for (const id of ids)
      expect((await store.hitRateLimit(bucket, 2, 60_000, id)).allowed).toBe(true);
    expect((await store.hitRateLimit(bucket, 2, 60_000, newRequestId())).allowed).toBe(false);
    await store.releaseRateLimit(bucket, ids[0]!);
    expect((await store.hitRateLimit(bucket, 2, 60_000, newRequestId())).allowed).toBe(true);
  });

  it("keeps the first value offered for a setting, whoever offers later", async () => {
    const name = `setting-${newAccountId()}`;
    const offers = await Promise.all(["a", "b", "c"].map((v) => store.keepFirst(name, v)));
    expect(new Set(offers).size).toBe(1);
    expect(await store.keepFirst(name, "d")).toBe(offers[0]);
  });

  it("claims a payment once, keeps it open until settled, and serves its call once", async () => {
    const record = settlingPayment();
    const { id } = record;
    const openIds = async () =>
      (await store.openPayments()).map((p) => p.id).filter((p) => p === id);
    expect(await store.claimPayment(record)).toBeNull();
    expect(await store.claimPayment({ ...record, accountId: "someone else" })).toEqual(record);
    expect(await openIds()).toEqual([id]); // a process dying now leaves it for a reconciler
    await store.savePayment({ ...record, state: "pending", txHash: "0xabc" });
    expect(await store.getPayment(id)).toMatchObject({ state: "pending", txHash: "0xabc" });
    expect(await openIds()).toEqual([id]);
    await store.savePayment({ ...record, state: "settled", txHash: "0xabc" });
    expect(await openIds()).toEqual([]);
    expect([
      await store.claimPaymentService(id, Date.now() + 60_000),
      await store.claimPaymentService(id, Date.now() + 60_000),
    ]).toEqual([true, false]);

    const failed = { ...record, id: `${id}:failed` };
    expect(await store.claimPayment(failed)).toBeNull();
    await store.releasePayment(failed.id);
    expect(await store.getPayment(failed.id)).toBeNull();
    expect(await store.claimPayment(failed)).toBeNull(); // released: it may be tried again
  });

  it("gives a call the client keyed one payment: another authorization's claim for it gets the first's record, until that one is released", async () => {
    const accountId = newAccountId();
    const claim = (nonce: string, key: string) =>
      settlingPayment({
        id: `84532:0xtoken:0xpayer:${nonce}:${newRequestId()}`,
        accountId,
        authorization: { nonce },
        call: { key, fingerprint: "f" },
      });
    const first = claim("0x01", "pid:k1");
    expect(await store.claimPayment(first, 60_000)).toBeNull();
    // Another authorization for the same call: answered with the call's payment.
    expect(await store.claimPayment(claim("0x02", "pid:k1"), 60_000)).toEqual(first);
    // Another call of the same account, and the same key in another account: their own.
    expect(await store.claimPayment(claim("0x03", "pid:k2"), 60_000)).toBeNull();
    expect(
      await store.claimPayment({ ...claim("0x04", "pid:k1"), accountId: newAccountId() }, 60_000),
    ).toBeNull();
    // Not indexed (no callKeptMs): a claim of its own.
    expect(await store.claimPayment(claim("0x05", "pid:k1"))).toBeNull();
    // Released (nothing moved): the call's next payment is the one claimed next.
    await store.releasePayment(first.id);
    const next = claim("0x06", "pid:k1");
    expect(await store.claimPayment(next, 60_000)).toBeNull();
    expect(await store.claimPayment(claim("0x07", "pid:k1"), 60_000)).toEqual(next);
  });

  it("lets one of the processes taking over an abandoned payment have it, as read from the open payments", async () => {
    const abandoned = settlingPayment({
      createdAt: Date.now() - 60_000,
      authorization: { nonce: "0x02", validBefore: "99999999999" },
      signature: "0xabcd",
    });
    const { id } = abandoned;
    await store.claimPayment(abandoned);
    const read = (await store.openPayments()).find((p) => p.id === id)!;
    const takeovers = await Promise.all(
      [1, 2, 3].map((n) => store.takeOverPayment(read, { ...read, createdAt: Date.now() + n })),
    );
    expect(takeovers.filter(Boolean)).toHaveLength(1);
    const won = (await store.getPayment(id))!;
    expect(won.createdAt).toBeGreaterThan(read.createdAt);
    // A read made before the takeover is stale now.
    expect(await store.takeOverPayment(read, { ...read, createdAt: Date.now() })).toBe(false);
    expect(await store.takeOverPayment(won, { ...won, state: "pending" })).toBe(true);
  });
  it("keeps each account's custom tools apart: one per name, at most the cap, atomically", async () => {
    const owner = await account();
    const other = await account();
    const tool = (name: string, accountId = owner.id, createdAt = Date.now()) => ({
      accountId,
      name,
      title: name,
      description: "A test tool.",
      url: "https://example.com/tool",
      inputSchema: { type: "object", properties: { text: { type: "string" } } },
      outputSchema: { type: "object" },
      priceCredits: 3,
      timeoutMs: 1000,
      createdAt,
    });
    expect(await store.addCustomTool(tool("alpha", owner.id, 1), 2)).toBe("added");
    expect(await store.addCustomTool({ ...tool("alpha"), priceCredits: 9 }, 2)).toBe("exists");
    expect(await store.getCustomTool(owner.id, "alpha")).toEqual(tool("alpha", owner.id, 1)); // the first stands
    // Concurrent registrations cannot pass the cap together.
    const raced = await Promise.all(
      ["beta", "gamma", "delta"].map((name) => store.addCustomTool(tool(name), 2)),
    );
    expect(raced.filter((r) => r === "added")).toHaveLength(1);
    expect(raced.filter((r) => r === "cap")).toHaveLength(2);
    expect((await store.listCustomTools(owner.id)).map((t) => t.name)[0]).toBe("alpha"); // oldest first
    expect(await store.listCustomTools(owner.id)).toHaveLength(2);
    // Another account sees none of them, and may use the same name.
    expect(await store.getCustomTool(other.id, "alpha")).toBeNull();
    expect(await store.listCustomTools(other.id)).toEqual([]);
    expect(await store.deleteCustomTool(other.id, "alpha")).toBe(false);
    expect(await store.addCustomTool(tool("alpha", other.id), 2)).toBe("added");
    expect(await store.deleteCustomTool(owner.id, "alpha")).toBe(true);
    expect(await store.deleteCustomTool(owner.id, "alpha")).toBe(false);
    expect(await store.getCustomTool(owner.id, "alpha")).toBeNull();
    expect(await store.getCustomTool(other.id, "alpha")).toMatchObject({ accountId: other.id });
  });

  it("rotates a webhook's secret in one step: racing rotations are decided one after the other, and a deleted webhook stays deleted", async () => {
    const owner = await account();
    const createdAt = Date.now();
    const hook = {
      id: `wh_${newRequestId()}`,
      ownerId: owner.id,
      url: "https://example.com/hook?a=b&c=d/e",
      events: ["tool.error", "credits.low"],
      createdAt,
      sealedSecret: "sealed-original",
      previousSealedSecret: null,
      previousSecretExpiresAt: null,
    };
    expect(await store.addWebhook(hook, 10)).toBe(true);
    const now = Date.now();
    const rotate = (sealedSecret: string, overlapMs: number, at = now) =>
      store.rotateWebhookSecret(owner.id, hook.id, { sealedSecret, overlapMs, now: at });

    // With an overlap: one of the racers wins, the others find the original still signing.
    const raced = await Promise.all(["a", "b", "c", "d"].map((s) => rotate(`sealed-${s}`, 60_000)));
    const won = raced.filter((r) => r.status === "rotated");
    expect(won).toHaveLength(1);
    expect(raced.filter((r) => r.status === "in_progress")).toHaveLength(3);
    const winner = {
      ...hook,
      sealedSecret: won[0]!.status === "rotated" ? won[0]!.webhook.sealedSecret : "",
    };
    const rotated = {
      ...winner,
      previousSealedSecret: "sealed-original",
      previousSecretExpiresAt: now + 60_000,
    };
    expect(won[0]).toEqual({ status: "rotated", webhook: rotated });
    for (const r of raced.filter((r) => r.status === "in_progress"))
      expect(r).toEqual({ status: "in_progress", webhook: rotated });
    expect(await store.getWebhook(owner.id, hook.id)).toEqual(rotated);

    // Once the overlap is over, a rotation with an overlap is allowed again and keeps the winner's.
    expect(await rotate("sealed-later", 1000, now + 60_001)).toEqual({
      status: "rotated",
      webhook: {
        ...hook,
        sealedSecret: "sealed-later",
        previousSealedSecret: winner.sealedSecret,
        previousSecretExpiresAt: now + 61_001,
      },
    });
    // With no overlap: every racer succeeds, one after the other; the last one's secret stands alone.
    const cuts = await Promise.all(["e", "f", "g"].map((s) => rotate(`sealed-${s}`, 0)));
    expect(cuts.map((r) => r.status)).toEqual(["rotated", "rotated", "rotated"]);
    const stored = await store.getWebhook(owner.id, hook.id);
    expect(stored).toMatchObject({ previousSealedSecret: null, previousSecretExpiresAt: null });
    expect(["sealed-e", "sealed-f", "sealed-g"]).toContain(stored!.sealedSecret);

    expect(
      await store.rotateWebhookSecret(owner.id, "wh_missing", {
        sealedSecret: "x",
        overlapMs: 0,
        now,
      }),
    ).toEqual({ status: "not_found" });
    const attempt = {
      eventId: "evt_1",
      event: "tool.error",
      attempt: 1,
      at: now,
      status: 500,
      durationMs: 12,
      outcome: "retrying" as const,
      error: null,
      nextAttemptAt: now + 1000,
      body: "{}",
    };
    await store.recordDelivery(owner.id, hook.id, attempt, 50);
    expect(await store.listDeliveries(owner.id, hook.id, 10)).toEqual([attempt]);
    expect(await store.deleteWebhook(owner.id, hook.id)).toBe(true);
    expect(await rotate("sealed-h", 0)).toEqual({ status: "not_found" });
    expect(await store.listWebhooks(owner.id)).toEqual([]);
    // An attempt that ends after the webhook was deleted logs nothing: the log is not recreated.
    await store.recordDelivery(owner.id, hook.id, { ...attempt, attempt: 2 }, 50);
    expect(await store.listDeliveries(owner.id, hook.id, 10)).toEqual([]);
  });

  const session = (accountId: string, overrides: Partial<SessionRecord> = {}): SessionRecord => ({
    id: newRequestId(),
    accountId,
    csrfToken: "csrf-token",
    createdAt: Date.now(),
    expiresAt: Date.now() + 60_000,
    via: "api_key",
    ...overrides,
  });

  it("keeps a session while it is used, and ends it when idle, past its absolute expiry, or signed out", async () => {
    // Generous margins: the store's clock and this process's timers run on a loaded machine.
    const { id } = await account();
    const live = session(id);
    await store.createSession(live, 1500);
    expect(await store.touchSession(id, live.id, 1500)).toMatchObject({
      accountId: id,
      csrfToken: "csrf-token",
      via: "api_key",
    });
    await new Promise((r) => setTimeout(r, 800));
    expect(await store.touchSession(id, live.id, 1500)).not.toBeNull(); // used within the idle time: kept, and pushed back
    await new Promise((r) => setTimeout(r, 800));
    expect(await store.touchSession(id, live.id, 1500)).not.toBeNull(); // 1.6 s after creation: alive only because it was pushed back
    await new Promise((r) => setTimeout(r, 2000));
    expect(await store.touchSession(id, live.id, 1500)).toBeNull(); // idle too long

    const short = session(id, { expiresAt: Date.now() + 800 });
    await store.createSession(short, 60_000);
    expect(await store.touchSession(id, short.id, 60_000)).not.toBeNull();
    await new Promise((r) => setTimeout(r, 1000));
    expect(await store.touchSession(id, short.id, 60_000)).toBeNull(); // absolute expiry, whatever the activity

    const ended = session(id);
    await store.createSession(ended, 10_000);
    await store.endSession(id, ended.id);
    expect(await store.touchSession(id, ended.id, 10_000)).toBeNull();
    expect(await store.touchSession(newAccountId(), live.id, 10_000)).toBeNull(); // another account's id names nothing
  });

  it("reads a session without pushing its idle expiry back when asked to, and keeps the key it was opened with", async () => {
    const { id, keyId } = await account();
    const opened = session(id, { keyId });
    await store.createSession(opened, 2500);
    expect(await store.touchSession(id, opened.id, null)).toMatchObject({ keyId, via: "api_key" });
    await new Promise((r) => setTimeout(r, 1000));
    expect(await store.touchSession(id, opened.id, null)).not.toBeNull();
    await new Promise((r) => setTimeout(r, 2000));
    // Read (not used) 1 s after creation: the idle time still ran from its creation.
    expect(await store.touchSession(id, opened.id, null)).toBeNull();
    const noKey = session(id, { via: "email_link" });
    await store.createSession(noKey, 10_000);
    expect(await store.touchSession(id, noKey.id, 10_000)).not.toHaveProperty("keyId");
  });

  it("hands out one key by id, as revoked or changed, and none of another account's", async () => {
    const [a, other] = [await account(), await account()];
    expect(await store.getKey(a.id, a.keyId)).toMatchObject({
      id: a.keyId,
      revokedAt: null,
      expiresAt: null,
      allowedTools: null,
      budget: null,
    });
    await store.updateKey(a.id, a.keyId, { allowedTools: ["hash"] });
    expect((await store.getKey(a.id, a.keyId))!.allowedTools).toEqual(["hash"]);
    await store.revokeKey(a.id, a.keyId, 0);
    expect((await store.getKey(a.id, a.keyId))!.revokedAt).toBeLessThanOrEqual(Date.now());
    expect(await store.getKey(other.id, a.keyId)).toBeNull();
  });

  it("signs out everywhere: every session of the account ends, other accounts' and later ones live", async () => {
    const [a, b] = [await account(), await account()];
    const [a1, a2, b1] = [session(a.id), session(a.id), session(b.id)];
    for (const s of [a1, a2, b1]) await store.createSession(s, 10_000);
    await store.endAccountSessions(a.id);
    expect(await store.touchSession(a.id, a1.id, 10_000)).toBeNull();
    expect(await store.touchSession(a.id, a2.id, 10_000)).toBeNull();
    expect(await store.touchSession(b.id, b1.id, 10_000)).not.toBeNull();
    const later = session(a.id);
    await store.createSession(later, 10_000);
    expect(await store.touchSession(a.id, later.id, 10_000)).not.toBeNull();
  });

  it("hands a single-use value out once, even to readers racing for it, and never after its lifetime", async () => {
    const name = `attempt-${newRequestId()}`;
    await store.saveOnce(name, "secrets", 10_000);
    const readers = await Promise.all(Array.from({ length: 5 }, () => store.takeOnce(name)));
    expect(readers.filter((v) => v === "secrets")).toHaveLength(1);
    expect(readers.filter((v) => v === null)).toHaveLength(4);
    await store.saveOnce(`${name}-short`, "secrets", 300);
    await new Promise((r) => setTimeout(r, 600));
    expect(await store.takeOnce(`${name}-short`)).toBeNull();
  });

  it("keeps an SSO connection's domains for its account alone, and releases the ones it drops", async () => {
    const [a, b] = [await account(), await account()];
    const domain = (name: string) => `${name}-${a.id.slice(5)}.example`;
    const connection = (accountId: string, emailDomains: string[]) => ({
      accountId,
      issuer: "https://idp.example",
      clientId: "toolgate",
      sealedClientSecret: "v1.sealed",
      emailDomains,
      createdAt: 1,
      updatedAt: 2,
    });
    expect(await store.putSsoConnection(connection(a.id, [domain("one"), domain("two")]))).toEqual({
      status: "saved",
      connection: connection(a.id, [domain("one"), domain("two")]),
    });
    expect(await store.getSsoConnection(a.id)).toEqual(
      connection(a.id, [domain("one"), domain("two")]),
    );
    expect(await store.accountIdBySsoDomain(domain("two"))).toBe(a.id);
    // Another account cannot take a held domain, and its refused save claims nothing.
    expect(
      await store.putSsoConnection(connection(b.id, [domain("three"), domain("one")])),
    ).toEqual({ status: "domain_taken", domain: domain("one") });
    expect(await store.accountIdBySsoDomain(domain("three"))).toBeNull();
    expect(await store.getSsoConnection(b.id)).toBeNull();
    // Saving again without a domain releases it for others.
    expect(await store.putSsoConnection(connection(a.id, [domain("one")]))).toMatchObject({
      status: "saved",
    });
    expect(await store.accountIdBySsoDomain(domain("two"))).toBeNull();
    expect(await store.putSsoConnection(connection(b.id, [domain("two")]))).toMatchObject({
      status: "saved",
    });
    expect(await store.accountIdBySsoDomain(domain("two"))).toBe(b.id);
    // Deleting releases every domain; a second delete finds nothing.
    expect(await store.deleteSsoConnection(a.id)).toBe(true);
    expect(await store.deleteSsoConnection(a.id)).toBe(false);
    expect(await store.getSsoConnection(a.id)).toBeNull();
    expect(await store.accountIdBySsoDomain(domain("one"))).toBeNull();
    expect(await store.accountIdBySsoDomain(domain("two"))).toBe(b.id);

    // A save that keeps the stored secret (null) keeps it and the first save's createdAt; with
    // nothing stored it saves nothing.
    const keeping = {
      ...connection(b.id, [domain("two")]),
      sealedClientSecret: null,
      createdAt: 5,
    };
    expect(await store.putSsoConnection(keeping)).toEqual({
      status: "saved",
      connection: connection(b.id, [domain("two")]),
    });
    expect(await store.putSsoConnection({ ...keeping, accountId: a.id })).toEqual({
      status: "not_set_up",
    });
    expect(await store.getSsoConnection(a.id)).toBeNull();

    // Saves and a delete racing: the domains held are exactly those of the connection kept.
    const racing = ["p", "q", "r", "s"].map((n) => domain(n));
    await Promise.all([
      ...racing.map((d) => store.putSsoConnection(connection(a.id, [d]))),
      store.deleteSsoConnection(a.id),
    ]);
    const kept = (await store.getSsoConnection(a.id))?.emailDomains ?? [];
    for (const d of racing)
      expect(await store.accountIdBySsoDomain(d)).toBe(kept.includes(d) ? a.id : null);
  });

  it("finds the account holding an e-mail address", async () => {
    const { id } = await account();
    expect(await store.claimEmail(`owner-${id}@example.com`, id, Date.now())).toBe(true);
    expect(await store.accountIdByEmail(`owner-${id}@example.com`)).toBe(id);
    expect(await store.accountIdByEmail(`nobody-${id}@example.com`)).toBeNull();
  });

  it("follows an account's ledger: a follower waiting for entries gets each new one, and only its account's", async () => {
    const [a, b] = [await account(50), await account(50)];
    const newest = (await store.ledger(a.id, { limit: 1 })).items[0]!.id;
    const follower = store.followLedger(a.id);
    try {
      expect(await follower.next(newest, 100)).toEqual([]); // nothing new: waits, then nothing
      const waiting = follower.next(newest, 5000);
      await new Promise((r) => setTimeout(r, 100));
      await debit(b.id, b.key.hash, 2);
      await debit(a.id, a.key.hash, 3);
      const entries = await waiting;
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({ kind: "debit", amount: -3, balance: 47, tool: "hash" });
      expect(await follower.next(entries[0]!.id, 100)).toEqual([]);
    } finally {
      await follower.close();
    }
  });

  it("hands a silent process's open calls to one survivor, each once; the process then learns which were taken", async () => {
    const proc = `proc_${newRequestId()}`;
    const charge = (requestId: string, refundUntil: number) => ({
      accountId: "acct_x",
      requestId,
      idempotencyKey: null,
      tool: "hash",
      keyHash: null,
      refundUntil,
    });
    const now = Date.now();
    await store.heartbeat(proc, now - 60_000);
    await store.markOpen(proc, [
      charge("req_a", now + 60_000),
      charge("req_b", now + 60_000),
      charge("req_late", now - 1), // past its refund deadline: forgotten, not taken
    ]);
    expect(await store.closeOpen(proc, "req_b")).toBe("closed");
    expect(await store.silentProcesses(now - 10_000)).toContain(proc);
    const [first, second] = await Promise.all([
      store.takeOpen(proc, now),
      store.takeOpen(proc, now),
    ]);
    expect([...first, ...second].map((c) => c.requestId)).toEqual(["req_a"]);
    expect(await store.silentProcesses(now - 10_000)).not.toContain(proc);
    expect(await store.closeOpen(proc, "req_a")).toBe("taken");
    expect(await store.closeOpen(proc, "req_late")).toBe("closed");
    await store.leave(proc);
  });
});
