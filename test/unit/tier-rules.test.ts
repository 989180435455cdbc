import { describe, expect, it } from "vitest";
import { requireFeature, TIER_NAMES, TIERS } from "../../src/accounts/tiers.js";
import {
  applyDebit,
  applyTopUp,
  lowThreshold,
  nextAllowanceAt,
  type AlertState,
} from "../../src/credits/rules.js";
import { ApiError } from "../../src/http/errors.js";

/** The rules that depend on a tier, and the ledger's alert rules (the memory store's twin of the Lua). */
describe("tiers", () => {
  it("each tier includes every feature of the tiers below it and serves before them", () => {
    for (let i = 1; i < TIER_NAMES.length; i++) {
      const lower = TIERS[TIER_NAMES[i - 1]!];
      const higher = TIERS[TIER_NAMES[i]!];
      for (const feature of lower.features) expect(higher.features).toContain(feature);
      expect(higher.priority).toBeGreaterThan(lower.priority);
      expect(higher.requestsPerMinute).toBeGreaterThanOrEqual(lower.requestsPerMinute);
    }
  });

  it("refuses a feature outside the tier with 403 feature_not_in_tier, naming the lowest tier that has it", () => {
    expect(() => requireFeature("pro", "webhooks")).not.toThrow();
    let refused: unknown;
    try {
      requireFeature("free", "webhooks");
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({
      code: "feature_not_in_tier",
      status: 403,
      options: { details: { required_tier: "pro" } },
    });
    expect((refused as Error).message).toMatch(/not included in the Free tier.*from the Pro tier/);
  });
});

describe("credit alerts", () => {
  const fresh = (balance: number): AlertState => ({
    balance,
    reference: balance,
    lowArmed: true,
    depletedArmed: true,
  });

  it("fires credits.low once when the balance falls below 20% of the reference (rounded up)", () => {
    expect(lowThreshold(100)).toBe(20);
    expect(lowThreshold(101)).toBe(21);
    const state = fresh(100);
    expect(applyDebit(state, 80, "hash")).toEqual([]);
    expect(applyDebit(state, 1, "hash").map((a) => a.event)).toEqual(["credits.low"]);
    expect(applyDebit(state, 1, "hash")).toEqual([]);
  });

  it("fires credits.depleted once at exactly zero, and a top-up re-arms both", () => {
    const state = fresh(10);
    expect(applyDebit(state, 10, null).map((a) => a.event)).toEqual([
      "credits.low",
      "credits.depleted",
    ]);
    applyTopUp(state, 50);
    expect(state).toEqual({ balance: 50, reference: 50, lowArmed: true, depletedArmed: true });
    expect(applyDebit(state, 50, null).map((a) => a.event)).toEqual([
      "credits.low",
      "credits.depleted",
    ]);
  });

  it("does not re-arm for a top-up that pays for a single call", () => {
    const state = fresh(10);
    applyDebit(state, 10, null);
    applyTopUp(state, 2, false);
    expect(state).toMatchObject({
      balance: 2,
      reference: 10,
      lowArmed: false,
      depletedArmed: false,
    });
    expect(applyDebit(state, 2, null)).toEqual([]);
  });

  it("schedules the next monthly allowance after the missed periods", () => {
    expect(nextAllowanceAt(1000, 1000, 100)).toBe(1100);
    expect(nextAllowanceAt(1000, 1350, 100)).toBe(1400);
  });
});
