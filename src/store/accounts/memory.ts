/** Accounts in memory: the shared accounts map, and the e-mail claims. */
import type { TierName } from "../../accounts/tiers.js";
import type { EventRecord } from "../../events/types.js";
import { planLapsed } from "../../credits/rules.js";
import { ExpiringMap } from "../../lib/expiring-map.js";
import {
  DEBIT_KEPT_MS,
  type MemAccount,
  type MemoryState,
  OPERATION_KEPT_MS,
} from "../memory-state.js";
import {
  type AccountRecord,
  type CreditChange,
  InvalidCursorError,
  type NewAccount,
  type Page,
} from "../types.js";
import { type AccountStore, EMAIL_CLAIM_SETTLE_MS } from "./index.js";

export function memoryAccounts(state: MemoryState): AccountStore {
  const emails = new Map<string, { accountId: string; claimedAt: number }>();
  return {
    async createAccount(
      account: NewAccount,
      grant: CreditChange & { amount: number },
      events: EventRecord[],
    ) {
      if (state.accounts.has(account.id)) throw new Error("account exists");
      const a: MemAccount = {
        ...account,
        emailVerified: false,
        balance: 0,
        reference: 0,
        createdAt: state.now(),
        allowanceAt: 0,
        planExpiresAt: 0,
        dedicatedWorkersUrl: null,
        spendAlert: null,
        spend: { windowStart: 0, credits: 0 },
        spendAlertedWindow: 0,
        keySpend: new Map(),
        budgetHolds: new Map(),
        lowArmed: false,
        depletedArmed: false,
        keysByHash: new Map(),
        keysById: new Map(),
        rateWindow: new Map(),
        ledger: [],
        debits: new ExpiringMap(state.now, DEBIT_KEPT_MS),
        operations: new ExpiringMap(state.now, OPERATION_KEPT_MS),
        outbox: [...events],
      };
      state.accounts.set(a.id, a);
      state.topUpAccount(a, "grant", grant.amount, grant);
      return state.view(a);
    },

    async getAccount(id: string) {
      const a = state.accounts.get(id);
      return a ? state.view(a) : null;
    },

    async getAccounts(ids: string[]) {
      return ids.map((id) => {
        const a = state.accounts.get(id);
        return a ? state.view(a) : null;
      });
    },

    async listAccounts(page: { cursor?: string; limit: number }): Promise<Page<AccountRecord>> {
      const all = [...state.accounts.values()].sort(
        (x, y) => x.createdAt - y.createdAt || x.id.localeCompare(y.id),
      );
      const start = page.cursor !== undefined ? all.findIndex((a) => a.id === page.cursor) + 1 : 0;
      if (start === 0 && page.cursor !== undefined)
        throw new InvalidCursorError(`no account ${page.cursor}`);
      const slice = all.slice(start, start + page.limit + 1);
      return {
        items: slice.slice(0, page.limit).map((a) => state.view(a)),
        nextCursor: slice.length > page.limit ? slice[page.limit - 1]!.id : null,
      };
    },

    async claimEmail(email: string, accountId: string, now: number) {
      const holder = emails.get(email);
      if (
        holder &&
        (state.accounts.has(holder.accountId) || now - holder.claimedAt < EMAIL_CLAIM_SETTLE_MS)
      )
        return false;
      emails.set(email, { accountId, claimedAt: now });
      return true;
    },

    async accountIdByEmail(email: string) {
      return emails.get(email)?.accountId ?? null;
    },

    async setTier(accountId: string, tier: TierName) {
      const a = state.accounts.get(accountId);
      if (!a) return null;
      // The tier it has changes nothing: a paid plan's period still ends (set-tier.lua's twin).
      if (a.tier !== tier || planLapsed(a, state.now())) {
        a.tier = tier;
        a.planExpiresAt = 0;
      }
      return state.view(a);
    },

    async setDedicatedWorkers(accountId: string, url: string) {
      const a = state.accounts.get(accountId);
      if (!a) return null;
      a.dedicatedWorkersUrl = url;
      return state.view(a);
    },

    async unbindDedicatedWorkers(accountId: string) {
      const a = state.accounts.get(accountId);
      if (!a) return { status: "not_found" as const };
      if (a.dedicatedWorkersUrl === null) return { status: "not_bound" as const };
      a.dedicatedWorkersUrl = null;
      return { status: "unbound" as const, account: state.view(a) };
    },

    async verifyEmail(accountId: string, grant: CreditChange & { amount: number }) {
      const a = state.accounts.get(accountId);
      if (!a) return "not_found" as const;
      if (a.emailVerified) return "already_verified" as const;
      a.emailVerified = true;
      a.allowanceAt = state.now() + state.periodMs;
      state.topUpAccount(a, "grant", grant.amount, grant);
      a.operations.set(grant.requestId, true);
      return "verified" as const;
    },

    async setSpendAlert(accountId: string, alert: { credits: number }) {
      const a = state.accounts.get(accountId);
      if (!a) return null;
      a.spendAlert = { ...alert };
      a.spendAlertedWindow = 0;
      return state.view(a);
    },

    async removeSpendAlert(accountId: string) {
      const a = state.accounts.get(accountId);
      if (!a) return { status: "not_found" as const };
      if (a.spendAlert === null) return { status: "not_set" as const };
      a.spendAlert = null;
      a.spendAlertedWindow = 0;
      return { status: "removed" as const, account: state.view(a) };
    },
  };
}
