/**
 * How many revoked keys an account keeps. Only live keys count against KEYS_PER_ACCOUNT, and a
 * rotation without grace is free, so revoked keys piled up without end (one a second per account):
 * every scan of an account's keys (adding one, revoking one, the listing, the dashboard) grew with
 * them. Each revocation now forgets the revoked keys beyond the most recent ones, in the same step
 * (revoke-key.lua for Redis). A forgotten key is gone as if never issued: it answers 401
 * invalid_api_key, and ledger rows keep naming its id.
 */
import { isRevoked, type KeyRecord } from "../types.js";

/** The most recently revoked keys an account keeps listed (and known to the admission). */
export const REVOKED_KEYS_KEPT = 100;

/**
 * The revoked keys beyond the REVOKED_KEYS_KEPT most recently revoked: the ones a revocation
 * forgets. Revoked: the revocation time has come (a key in its rotation grace is not, and stays).
 * Most recent first: by revocation time, then creation time, then id, as revoke-key.lua orders them.
 */
export function revokedBeyondKept(keys: Iterable<KeyRecord>, now: number): KeyRecord[] {
  return [...keys]
    .filter((key) => isRevoked(key, now))
    .sort(
      (a, b) =>
        b.revokedAt! - a.revokedAt! ||
        b.createdAt - a.createdAt ||
        (a.id < b.id ? 1 : a.id > b.id ? -1 : 0),
    )
    .slice(REVOKED_KEYS_KEPT);
}
