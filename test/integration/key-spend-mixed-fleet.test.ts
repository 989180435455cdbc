import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { newAccountId, newKeyId, newRequestId } from "../../src/lib/ids.js";
import { tierLimits } from "../../src/store/index.js";
import { REVOKED_KEYS_KEPT } from "../../src/store/keys/revoked-kept.js";
import { createRedisStore } from "../../src/store/redis.js";
import {
  CALENDAR_WINDOWS,
  type ControlPeriod,
  controlWindow,
  type KeyBudget,
} from "../../src/store/types.js";
import { newKeyRecord } from "../helpers/key-records.js";
import { REDIS_URL, dropPrefix, uniquePrefix } from "../helpers/redis.js";

/**
 * A budgeted key's spend while replicas of several releases share Redis (a rolling upgrade):
 * releases before 3381aea read and write the key id's field of `{acct}:key-spend` only as
 * "<window start>:<credits>" (the budget's period's window), e6aa43f wrote
 * "<day start>:<credits>:<month start>:<credits>" there. Each replica's budget must be exact.
 */
const prefix = uniquePrefix("key-spend-fleet");
// periodMs: the Free allowance's month, which these business-tier accounts never reach.
const store = createRedisStore({
  url: REDIS_URL,
  keyPrefix: prefix,
  tiers: tierLimits(),
  periodMs: 30 * 86_400_000,
});
const raw = new Redis(REDIS_URL, { keyPrefix: prefix });
afterAll(async () => {
  await store.close();
  raw.disconnect();
  await dropPrefix(prefix);
});

const windowStart = (period: ControlPeriod) =>
  controlWindow(Date.now(), period, CALENDAR_WINDOWS).start;

async function budgetedKey(budget: KeyBudget) {
  const id = newAccountId();
  await store.createAccount(
    { id, email: `${id}@example.com`, tier: "business" },
    { amount: 1000, requestId: newRequestId(), reason: "test" },
    [],
  );
  const { record } = newKeyRecord(id, { budget });
  await store.addKey(record);
  const spendKey = `{${id}}:key-spend`;
  const call = async (requestId = newRequestId()) =>
    (
      await store.admit({
        accountId: id,
        keyHash: record.hash,
        cost: 1,
        requestId,
        tool: "hash",
        reason: "tool call",
      })
    ).status;
  const spent = async () => (await store.listKeys(id)).find((k) => k.id === record.id)!.budgetSpent;
  const setBudget = (next: KeyBudget) => store.updateKey(id, record.id, { budget: next });
  /**
   * A call through a release before 3381aea (180812d, prelude.lua key_spend and its write): the
   * key id's field read as "^(%d+):(%d+)$" in the budget's current window (anything else: 0),
   * refused past the budget, else written back as "<window start>:<spent + 1>".
   */
  const oldReplicaCall = async (current: KeyBudget = budget) => {
    const start = windowStart(current.period);
    const match = /^(\d+):(\d+)$/.exec((await raw.hget(spendKey, record.id)) ?? "");
    const spentNow = match && Number(match[1]) === start ? Number(match[2]) : 0;
    if (spentNow + 1 > current.credits) return "key_budget_exceeded";
    await raw.hset(spendKey, record.id, `${start}:${spentNow + 1}`);
    return "ok";
  };
  /**
   * A call through e6aa43f (prelude.lua key_spend and save_key_spend there): the key id's field
   * read as "<day start>:<credits>:<month start>:<credits>", or "<start>:<credits>" as both,
   * each counted in its current window; refused past the budget, else both written back + 1.
   */
  const e6aa43fReplicaCall = async (current: KeyBudget = budget) => {
    const stored = ((await raw.hget(spendKey, record.id)) ?? "").split(":").map(Number);
    const [dayStart, day, monthStart = dayStart, month = day] = stored;
    const spend = { day: 0, month: 0 };
    if (stored.length === 2 || stored.length === 4) {
      if (dayStart! >= windowStart("day")) spend.day = day!;
      if (monthStart! >= windowStart("month")) spend.month = month!;
    }
    if (spend[current.period] + 1 > current.credits) return "key_budget_exceeded";
    await raw.hset(
      spendKey,
      record.id,
      `${windowStart("day")}:${spend.day + 1}:${windowStart("month")}:${spend.month + 1}`,
    );
    return "ok";
  };
  return {
    e6aa43fReplicaCall,
    id,
    keyId: record.id,
    keyHash: record.hash,
    spendKey,
    call,
    spent,
    setBudget,
    oldReplicaCall,
  };
}

describe("a key budget across releases sharing Redis", () => {
  it("keeps the key id's field in the form older releases read: the budget's window start and the credits", async () => {
    for (const period of ["day", "month"] as const) {
      const key = await budgetedKey({ credits: 5, period });
      const debited = newRequestId();
      expect(await key.call(debited)).toBe("ok");
      expect(await key.call()).toBe("ok");
      expect(await raw.hget(key.spendKey, key.keyId)).toBe(`${windowStart(period)}:2`);
      // A refund gives back in the same form.
      await store.refund(key.id, {
        requestId: debited,
        reason: "tool failed",
        keyHash: key.keyHash,
        tool: "hash",
      });
      expect(await raw.hget(key.spendKey, key.keyId)).toBe(`${windowStart(period)}:1`);
    }
  });

  it.each([
    ["day", 5],
    ["month", 10],
  ] as const)(
    "holds a %s budget of %d exactly with calls alternating between an older release and this one",
    async (period, credits) => {
      const key = await budgetedKey({ credits, period });
      const served: string[] = [];
      for (let i = 0; i < 2 * credits; i++)
        served.push(i % 2 === 0 ? await key.oldReplicaCall() : await key.call());
      expect(served.filter((s) => s === "ok")).toHaveLength(credits);
      expect(await key.spent()).toBe(credits);
      expect(await raw.hget(key.spendKey, key.keyId)).toBe(`${windowStart(period)}:${credits}`);
    },
  );

  it("counts what an older release spent under a day budget in the month when the budget becomes monthly", async () => {
    const key = await budgetedKey({ credits: 5, period: "day" });
    expect(await key.call()).toBe("ok");
    expect(await key.oldReplicaCall()).toBe("ok");
    expect(await key.oldReplicaCall()).toBe("ok");
    expect(await key.call()).toBe("ok");
    expect(await key.spent()).toBe(4);
    await key.setBudget({ credits: 5, period: "month" });
    expect(await key.spent()).toBe(4);
    expect([await key.call(), await key.call()]).toEqual(["ok", "key_budget_exceeded"]);
    // And back: today's spend is all of it.
    await key.setBudget({ credits: 6, period: "day" });
    expect(await key.spent()).toBe(5);
    expect(await key.oldReplicaCall({ credits: 6, period: "day" })).toBe("ok");
    expect(await key.call()).toBe("key_budget_exceeded");
  });

  it.each(["180812d", "e6aa43f"] as const)(
    "keeps what a key spent through %s across changes of its budget's period made here",
    async (release) => {
      const key = await budgetedKey({ credits: 5, period: "day" });
      const replica = (budget: KeyBudget) =>
        release === "180812d" ? key.oldReplicaCall(budget) : key.e6aa43fReplicaCall(budget);
      const served = async (budget: KeyBudget, calls: number, alternate: boolean) => {
        let ok = 0;
        for (let i = 0; i < calls; i++)
          if ((alternate && i % 2 === 1 ? await key.call() : await replica(budget)) === "ok") ok++;
        return ok;
      };
      expect(await served({ credits: 5, period: "day" }, 6, true)).toBe(5);
      await key.setBudget({ credits: 7, period: "month" });
      expect(await key.spent()).toBe(5);
      expect(await served({ credits: 7, period: "month" }, 4, false)).toBe(2);
      // All 7 were spent today.
      await key.setBudget({ credits: 8, period: "day" });
      expect(await key.spent()).toBe(7);
      expect(await served({ credits: 8, period: "day" }, 3, true)).toBe(1);
    },
  );

  it("reads the key id's field in the four-part form e6aa43f writes there", async () => {
    const day = windowStart("day");
    const month = windowStart("month");
    // Spent through e6aa43f only.
    const fresh = await budgetedKey({ credits: 4, period: "day" });
    await raw.hset(fresh.spendKey, fresh.keyId, `${day}:3:${month}:3`);
    expect(await fresh.spent()).toBe(3);
    expect([await fresh.call(), await fresh.call()]).toEqual(["ok", "key_budget_exceeded"]);
    // One call through this code, then one through e6aa43f (which read "<day start>:1" as 1 today
    // and this month, and wrote both): 2 spent of 3.
    const mixed = await budgetedKey({ credits: 3, period: "day" });
    expect(await mixed.call()).toBe("ok");
    await raw.hset(mixed.spendKey, mixed.keyId, `${day}:2:${month}:2`);
    expect(await mixed.spent()).toBe(2);
    expect([await mixed.call(), await mixed.call()]).toEqual(["ok", "key_budget_exceeded"]);
    expect(await raw.hget(mixed.spendKey, mixed.keyId)).toBe(`${day}:3`);
  });

  it("forgets both of a key's spend fields with the key", async () => {
    const key = await budgetedKey({ credits: 5, period: "day" });
    expect(await key.call()).toBe("ok");
    expect(await raw.hlen(key.spendKey)).toBe(2);
    expect((await store.revokeKey(key.id, key.keyId, 0)).status).toBe("revoked");
    for (let i = 0; i < REVOKED_KEYS_KEPT; i++) {
      const { record } = newKeyRecord(key.id, { id: newKeyId() });
      await store.addKey(record);
      await store.revokeKey(key.id, record.id, 0);
    }
    expect(await raw.hlen(key.spendKey)).toBe(0);
  });
});
