import { generateApiKey } from "../../src/accounts/api-keys.js";
import { newKeyId } from "../../src/lib/ids.js";
import type { KeyRecord } from "../../src/store/types.js";

/** A new key's record for an account (not yet stored), and the key it was made from. */
export function newKeyRecord(accountId: string, changes: Partial<KeyRecord> = {}) {
  const key = generateApiKey(accountId);
  const record: KeyRecord = {
    id: newKeyId(),
    accountId,
    hash: key.hash,
    prefix: key.prefix,
    last4: key.last4,
    name: null,
    createdAt: Date.now(),
    revokedAt: null,
    ...changes,
  };
  return { key, record };
}
