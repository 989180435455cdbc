import type { TierName } from "../../accounts/tiers.js";
import type { EventRecord } from "../../events/types.js";
import type { AccountRecord, CreditChange, NewAccount, Page } from "../types.js";

/** Accounts: creation, lookup, tier, e-mail, dedicated workers, spend alert. */
export interface AccountStore {
  /** Creates the account with its first grant and events, atomically. */
  createAccount(
    account: NewAccount,
    grant: CreditChange & { amount: number },
    events: EventRecord[],
  ): Promise<AccountRecord>;
  getAccount(id: string): Promise<AccountRecord | null>;
  /** `getAccount` for several accounts, in their order, in one request. */
  getAccounts(ids: string[]): Promise<(AccountRecord | null)[]>;
  /** Oldest first. Throws InvalidCursorError for a cursor that is not an account id. */
  listAccounts(page: { cursor?: string; limit: number }): Promise<Page<AccountRecord>>;
  /**
   * Claims an e-mail address for an account; false when another account holds it, or when a
   * sign-up claimed it within `EMAIL_CLAIM_SETTLE_MS` and may still be creating its account. An
   * older claim whose account was never made (its sign-up died) is taken over, by one claimant.
   * `now` is the claim's time (the caller's clock, as the claim's age is judged by it).
   */
  claimEmail(email: string, accountId: string, now: number): Promise<boolean>;
  /** The account holding an e-mail address (as claimed by `claimEmail`), or null. */
  accountIdByEmail(email: string): Promise<string | null>;
  setTier(accountId: string, tier: TierName): Promise<AccountRecord | null>;
  /** Binds the account to its own worker pool (`url`); null when there is no such account. */
  setDedicatedWorkers(accountId: string, url: string): Promise<AccountRecord | null>;
  /**
   * Unbinds the account's worker pool, if one is bound, in one step: of two unbinds at once, one
   * removes the binding and the other finds none (`not_bound`), as an unbind after it would.
   */
  unbindDedicatedWorkers(
    accountId: string,
  ): Promise<{ status: "unbound"; account: AccountRecord } | { status: "not_bound" | "not_found" }>;
  /** Marks the e-mail verified and grants `amount` once; starts the Free monthly allowance clock. */
  verifyEmail(
    accountId: string,
    grant: CreditChange & { amount: number },
  ): Promise<"verified" | "already_verified" | "not_found">;
  /** Sets the account's spend alert, re-arming it for this month; null when there is no such account. */
  setSpendAlert(accountId: string, alert: { credits: number }): Promise<AccountRecord | null>;
  /**
   * Removes the account's spend alert, if one is set, in one step: of two removals at once, one
   * removes it and the other finds none (`not_set`), as a removal after it would.
   */
  removeSpendAlert(
    accountId: string,
  ): Promise<{ status: "removed"; account: AccountRecord } | { status: "not_set" | "not_found" }>;
}

/**
 * How long a claim on an e-mail address belongs to its sign-up even though no account exists yet:
 * the sign-up claims the address first, then creates the account. A second sign-up that took the
 * claim over in between made two accounts with one address. A sign-up takes milliseconds; this
 * only has to outlast a slow one, and delays no one else (a dead sign-up's address is free after it).
 */
export const EMAIL_CLAIM_SETTLE_MS = 60_000;

/** A claim as stored: the account and when it was claimed (a claim without a time is an old one). */
export const emailClaim = {
  encode: (accountId: string, claimedAt: number) => `${accountId} ${claimedAt}`,
  decode(value: string): { accountId: string; claimedAt: number } {
    const [accountId = "", claimedAt = "0"] = value.split(" ");
    return { accountId, claimedAt: Number(claimedAt) || 0 };
  },
};
