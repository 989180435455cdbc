import { createHash, randomBytes } from "node:crypto";
import { ACCOUNT_ID_PATTERN } from "../lib/ids.js";

/**
 * API key format: `tg_live_<account>_<secret>`.
 *
 * The account part (the 16 characters of the account id) lets the gateway find the
 * key's record inside that account's Redis hash slot, so authentication, rate limiting
 * and the debit run as one atomic script in one round trip, on Redis Cluster too.
 * The secret is 32 base62 characters (~190 bits); only its SHA-256 is stored.
 */
const PREFIX = "tg_live_";
const KEY_PATTERN = /^tg_live_([0-9a-z]{16})_([0-9A-Za-z]{32})$/;
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

export interface NewApiKey {
  /** The full key: shown to its owner once, never stored. */
  plaintext: string;
  hash: string;
  /** What listings show instead of the key. */
  prefix: string;
  last4: string;
}

function base62(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export function hashApiKey(plaintext: string): string {
  return createHash("sha256").update(plaintext).digest("hex");
}

/** A new key for the account; `secret` (32 base62 characters) is given only for a derived key (the development key). */
export function generateApiKey(accountId: string, secret = base62(32)): NewApiKey {
  if (!ACCOUNT_ID_PATTERN.test(accountId)) throw new Error(`not an account id: ${accountId}`);
  if (!/^[0-9A-Za-z]{32}$/.test(secret)) throw new Error("a key secret is 32 base62 characters");
  const plaintext = `${PREFIX}${accountId.slice(5)}_${secret}`;
  return {
    plaintext,
    hash: hashApiKey(plaintext),
    prefix: plaintext.slice(0, PREFIX.length + 16 + 5),
    last4: plaintext.slice(-4),
  };
}

/** The account a well-formed key claims to belong to, or null for anything malformed. */
export function parseApiKey(plaintext: string): { accountId: string; hash: string } | null {
  const match = KEY_PATTERN.exec(plaintext);
  if (!match) return null;
  return { accountId: `acct_${match[1]}`, hash: hashApiKey(plaintext) };
}
