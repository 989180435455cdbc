import { describe, expect, it } from "vitest";
import { PeriodTally } from "../../src/dashboard/overview.js";
import type { LedgerEntry } from "../../src/store/types.js";

/** The dashboard's "This period" card: calls charged and credits spent since the period began. */
const SINCE = Date.UTC(2026, 10, 1);
const entry = (kind: LedgerEntry["kind"], at: number, amount: number, requestId: string) =>
  ({
    id: `${at}-0`,
    at,
    kind,
    amount,
    balance: 0,
    reason: "",
    requestId,
    tool: "hash",
    keyId: null,
  }) as LedgerEntry;

/** Tallies entries given newest first, as the ledger is read, until one is older than the period. */
function tally(entries: LedgerEntry[]) {
  const t = new PeriodTally(SINCE);
  for (const e of entries) if (!t.add(e)) break;
  return { calls: t.calls, credits: t.credits };
}

describe("the period's usage", () => {
  it("counts debits less the refunds of those debits", () => {
    expect(
      tally([
        entry("refund", SINCE + 30, 3, "req_b"),
        entry("debit", SINCE + 20, -3, "req_b"),
        entry("debit", SINCE + 10, -2, "req_a"),
        entry("grant", SINCE + 5, 100, "req_g"),
      ]),
    ).toEqual({ calls: 1, credits: 2 });
  });

  it("leaves out a refund whose call was charged before the period began: no negative calls on a fresh period", () => {
    expect(
      tally([entry("refund", SINCE + 10, 3, "req_old"), entry("debit", SINCE - 10, -3, "req_old")]),
    ).toEqual({ calls: 0, credits: 0 });
  });
});
