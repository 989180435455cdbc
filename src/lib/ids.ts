import { randomFillSync } from "node:crypto";

const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";

/**
 * Cryptographic random bytes, drawn from a pool refilled 4 KiB at a time: a keyed call makes
 * three ids, and one fill serves about fifty calls instead of a call to the CSPRNG per id.
 */
const pool = Buffer.alloc(4096);
let used = pool.length;
function nextByte(): number {
  if (used === pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  return pool[used++]!;
}

/** Random lowercase base-36 string; rejection sampling keeps every character uniform. */
export function randomId(length: number): string {
  let out = "";
  while (out.length < length) {
    const byte = nextByte();
    if (byte < 252) out += ALPHABET[byte % 36];
  }
  return out;
}

export const newAccountId = () => `acct_${randomId(16)}`;
export const newKeyId = () => `key_${randomId(16)}`;
export const newEventId = () => `evt_${randomId(24)}`;
/**
 * A request id names the 30-second slot it was minted in (six base-36 digits: `DEBIT_SLOT_MS`
 * slots since 1970, enough for 2,000 years) before 14 random characters (72 bits): the store
 * files the call's debit record under that slot (src/store/credits/redis.ts, `debitRecord`), so a refund
 * or an Idempotency-Key retry finds it with one lookup, and the records of a slot expire together.
 */
export const newRequestId = (now = Date.now()) =>
  `req_${Math.floor(now / DEBIT_SLOT_MS)
    .toString(36)
    .padStart(SLOT_DIGITS, "0")}${randomId(20 - SLOT_DIGITS)}`;

/** The width of a request id's time slot: the debit records of one account and slot share one small hash. */
export const DEBIT_SLOT_MS = 30_000;
const SLOT_DIGITS = 6;
const REQUEST_ID = /^req_([0-9a-z]{6})([0-9a-z]{14})$/;

/** The slot a request id was minted in and its random part; null for ids not minted by newRequestId. */
export function requestIdSlot(requestId: string): { slot: number; random: string } | null {
  const match = REQUEST_ID.exec(requestId);
  return match ? { slot: Number.parseInt(match[1]!, 36), random: match[2]! } : null;
}

/**
 * No later than when the debit under `requestId` was made: its slot's start (0 for an id that
 * names no slot). A refund gives credits back to a key budget or spend month only when that
 * window began before this, so with no exact time it errs towards giving nothing back.
 */
export function debitedNoLaterThan(requestId: string): number {
  const stamped = requestIdSlot(requestId);
  return stamped ? stamped.slot * DEBIT_SLOT_MS : 0;
}

export const ACCOUNT_ID_PATTERN = /^acct_[0-9a-z]{16}$/;
