import { randomBytes } from "node:crypto";

const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";

/** Random lowercase base-36 string; rejection sampling keeps every character uniform. */
export function randomId(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 252) out += ALPHABET[byte % 36];
      if (out.length === length) break;
    }
  }
  return out;
}

export const newAccountId = () => `acct_${randomId(16)}`;
export const newKeyId = () => `key_${randomId(16)}`;
export const newEventId = () => `evt_${randomId(24)}`;
export const newRequestId = () => `req_${randomId(20)}`;

export const ACCOUNT_ID_PATTERN = /^acct_[0-9a-z]{16}$/;
