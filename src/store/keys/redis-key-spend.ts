/**
 * A budgeted key's spend as the Redis key-spend hash holds it, read as the admission reads it
 * (prelude.lua, key_spend and spent_since, which say why): the key id's field holds the budget's
 * own window, "<window start>:<credits>" (what releases before 3381aea read and write; one
 * release wrote "<day start>:<credits>:<month start>:<credits>" there), and "<key id>:periods"
 * the day's and the month's, written by the current admission only.
 */
import { type KeySpend, spentIn, type WindowSpend } from "../../credits/controls.js";
import { type ControlPeriod, type ControlWindows, controlWindow } from "../types.js";

/** The field holding a key's spend today and this month (prelude.lua, key_periods_field). */
const keyPeriodsField = (keyId: string) => `${keyId}:periods`;

/** A record's windows: one for "<start>:<credits>", two for the four-part form. */
function parseWindows(raw: string | undefined): WindowSpend[] | undefined {
  const parts = raw?.split(":").map(Number) ?? [];
  if ((parts.length !== 2 && parts.length !== 4) || parts.some((n) => !Number.isInteger(n)))
    return undefined;
  const windows: WindowSpend[] = [];
  for (let i = 0; i < parts.length; i += 2)
    windows.push({ windowStart: parts[i]!, credits: parts[i + 1]! });
  return windows;
}

/** A record as { day, month }: a one-window record (its period not known now) counts as either. */
function asKeySpend(windows: WindowSpend[] | undefined): KeySpend | undefined {
  return windows && { day: windows[0]!, month: windows[1] ?? windows[0]! };
}

/** What older releases counted in the main field since the admission last wrote both (prelude.lua, spent_since). */
function spentSince(main: WindowSpend[], record: WindowSpend, known: KeySpend) {
  let since = { credits: record.credits, from: record.windowStart };
  let matched = false;
  for (const w of main) {
    for (const k of [known.day, known.month]) {
      if (k.windowStart !== w.windowStart) continue;
      const credits = w.credits - k.credits;
      if (matched && credits <= since.credits) continue;
      matched = true;
      // A refund given back there may be of a debit made before the periods field's day.
      since = {
        credits,
        from: credits > 0 ? Math.max(w.windowStart, known.day.windowStart) : w.windowStart,
      };
    }
  }
  return since;
}

/**
 * What the key spent in the current window of its budget's `period`, from the hash's fields
 * (`hash`: the HGETALL of the account's key-spend hash): the periods field as the admission left
 * it plus what older releases counted since, never less than the main field's own record says.
 */
export function budgetSpent(
  hash: Record<string, string>,
  keyId: string,
  period: ControlPeriod,
  now: number,
  windows: ControlWindows,
): number {
  const mainWindows = parseWindows(hash[keyId]);
  const main = asKeySpend(mainWindows);
  const known = asKeySpend(parseWindows(hash[keyPeriodsField(keyId)])) ?? main;
  if (!mainWindows || !main || !known) return spentIn(known, period, now, windows);
  let spent = spentIn(known, period, now, windows);
  const since = spentSince(mainWindows, main[period], known);
  if (since.from >= controlWindow(now, period, windows).start)
    spent = Math.max(0, spent + since.credits);
  return Math.max(spent, spentIn(main, period, now, windows));
}
