import { ApiError } from "../http/errors.js";
import type { Services } from "../services.js";
import { eventRecord } from "../events/types.js";
import { newAccountId, newEventId, newKeyId, newRequestId } from "../lib/ids.js";
import type { AccountRecord, KeyRecord, KeyUpdate } from "../store/types.js";
import { generateApiKey } from "./api-keys.js";
import type { TierName } from "./tiers.js";

interface NewAccountInput {
  email: string | null;
  tier: TierName;
  credits: number;
  reason: string;
  requestId?: string;
  id?: string;
}

/** Creates an account (no key yet); `agent.registered` is written atomically with it. */
export async function createAccountRecord(
  services: Pick<Services, "store">,
  input: NewAccountInput,
): Promise<AccountRecord> {
  const id = input.id ?? newAccountId();
  const registered = eventRecord(newEventId(), "agent.registered", id, {
    agent_id: id,
    email: input.email,
    tier: input.tier,
  });
  return services.store.createAccount(
    { id, email: input.email, tier: input.tier },
    { amount: input.credits, reason: input.reason, requestId: input.requestId ?? newRequestId() },
    [registered],
  );
}

/** Creates an account with its first key. */
export async function createAccount(
  services: Services,
  input: NewAccountInput,
): Promise<{ account: AccountRecord; apiKey: string; key: KeyRecord }> {
  const account = await createAccountRecord(services, input);
  const { plaintext, key } = await issueKey(services, account.id, "default");
  return { account, apiKey: plaintext, key };
}

/**
 * A new key for the account; the plaintext is returned to be shown once and is never stored.
 * `controls`: its account controls (expiry, allowed tools, budget), if any.
 */
export async function issueKey(
  services: Services,
  accountId: string,
  name: string | null,
  secret?: string,
  controls: Omit<KeyUpdate, "name"> = {},
): Promise<{ plaintext: string; key: KeyRecord }> {
  const issued = newKey(accountId, name, secret, controls);
  await services.store.addKey(issued.key);
  return issued;
}

/**
 * As `issueKey`, unless the account already has `cap` live keys (the store counts and adds in
 * one step): null then, and nothing is stored.
 */
export async function issueKeyWithinCap(
  services: Services,
  accountId: string,
  name: string | null,
  controls: Omit<KeyUpdate, "name">,
  cap: number,
): Promise<{ plaintext: string; key: KeyRecord } | null> {
  const issued = newKey(accountId, name, undefined, controls);
  return (await services.store.addKey(issued.key, cap)) ? issued : null;
}

/** 422 for a key past the account's cap (`KEYS_PER_ACCOUNT`): every key that still works counts. */
export const keyCapReached = (cap: number, advice: string) =>
  new ApiError("validation_failed", `At most ${cap} active API keys per account: ${advice}`);

/** A key's record and its plaintext, not yet stored. */
function newKey(
  accountId: string,
  name: string | null,
  secret: string | undefined,
  controls: Omit<KeyUpdate, "name">,
): { plaintext: string; key: KeyRecord } {
  const generated = generateApiKey(accountId, secret);
  const key: KeyRecord = {
    id: newKeyId(),
    accountId,
    hash: generated.hash,
    prefix: generated.prefix,
    last4: generated.last4,
    name,
    createdAt: Date.now(),
    revokedAt: null,
    expiresAt: controls.expiresAt ?? null,
    allowedTools: controls.allowedTools ?? null,
    budget: controls.budget ?? null,
  };
  return { plaintext: generated.plaintext, key };
}
