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
export const newRequestId = () => `req_${randomId(20)}`;

export const ACCOUNT_ID_PATTERN = /^acct_[0-9a-z]{16}$/;
