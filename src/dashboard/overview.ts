import { TIERS, PERIOD_MS } from "../accounts/tiers.js";
import { accountView, ledgerEntryView } from "../accounts/views.js";
import { BooksUnavailableError } from "../books/errors.js";
import { usagePage } from "../books/usage.js";
import { esc } from "../pages/respond.js";
import type { Services } from "../services.js";
import type { AccountRecord, LedgerEntry, Page } from "../store/types.js";
import { dashboardPage } from "./layout.js";
import type { DashboardSession } from "./session.js";

/**
 * The overview: balance, tier, rate limit, this period's usage, and the live feed of ledger
 * entries (each charged call is a debit, a failed call's refund and every top-up follow it).
 * The feed starts with the latest entries rendered here and continues from the newest of them
 * over Server-Sent Events (`live-feed.ts`), so nothing falls between the page and the stream.
 * Below it, this calendar month's spend and the account's spend alert, set and removed through
 * the API's /account/spend-alert (the figures are the API's own `spend` and `spend_alert`).
 */
const FEED_SIZE = 20;
/** The period's usage is summed from the ledger, newest first, reading at most this many entries. */
const USAGE_SCAN_LIMIT = 2_000;
/** How long the page waits for the books' database before it shows what the store still holds. */
const BOOKS_WAIT_MS = 5000;

/**
 * The account's ledger, newest first, as GET /api/v1/usage reads it: the books merged with the
 * entries the store has not exported yet (the export trims them from the store). The store's
 * alone when there are no books, or they cannot be reached in time.
 */
export async function ledgerPage(
  services: Services,
  accountId: string,
  page: { cursor?: string; limit: number },
): Promise<Page<LedgerEntry>> {
  const db = services.books ? await services.books.ready(BOOKS_WAIT_MS).catch(() => null) : null;
  if (!db) return usagePage(services.store, null, accountId, {}, page);
  // The books gone after they opened (ready() answers at once then): the store's entries alone,
  // as before they opened, rather than the API's 503 in place of the page.
  return usagePage(services.store, db, accountId, {}, page).catch((err: unknown) => {
    if (!(err instanceof BooksUnavailableError)) throw err;
    return usagePage(services.store, null, accountId, {}, page);
  });
}

/** When the account's current period began: its paid plan's or Free allowance's period, else the last 30 days (or since sign-up). */
export function periodStart(
  account: AccountRecord,
  planPeriodMs: number,
  now = Date.now(),
): number {
  if (account.planExpiresAt > now) return account.planExpiresAt - planPeriodMs;
  if (account.tier === "free" && account.allowanceAt > now) return account.allowanceAt - PERIOD_MS;
  return Math.max(account.createdAt, now - PERIOD_MS);
}

interface PeriodUsage {
  since: number;
  calls: number;
  credits: number;
  /** false when the scan stopped before reaching the period's start. */
  complete: boolean;
}

/**
 * Charged calls and credits spent since `since`, read newest first: debits less their refunds. A
 * refund counts only with its debit (the same request id), so a call charged before the period
 * and refunded in it is neither period's, rather than a -1 call on a fresh period.
 */
export class PeriodTally {
  calls = 0;
  credits = 0;
  /** Refunds read whose debit is not read yet (it is older): request id → credits given back. */
  private readonly refunds = new Map<string, number>();

  constructor(readonly since: number) {}

  /** Counts one entry; false once the entries are older than the period. */
  add(entry: LedgerEntry): boolean {
    if (entry.at < this.since) return false;
    if (entry.kind === "refund")
      this.refunds.set(entry.requestId, (this.refunds.get(entry.requestId) ?? 0) + entry.amount);
    if (entry.kind !== "debit") return true;
    const refunded = this.refunds.get(entry.requestId);
    this.refunds.delete(entry.requestId);
    if (refunded === undefined) {
      this.calls += 1;
      this.credits -= entry.amount;
    } else this.credits -= entry.amount + refunded;
    return true;
  }
}

async function periodUsage(
  services: Services,
  accountId: string,
  since: number,
  newest: LedgerEntry[],
): Promise<PeriodUsage> {
  const tally = new PeriodTally(since);
  const usage = (complete: boolean) => ({
    since,
    calls: tally.calls,
    credits: tally.credits,
    complete,
  });
  let page = { items: newest, nextCursor: newest.length === FEED_SIZE ? newest.at(-1)!.id : null };
  let read = 0;
  for (;;) {
    for (const entry of page.items) if (!tally.add(entry)) return usage(true);
    read += page.items.length;
    if (!page.nextCursor) return usage(true);
    if (read >= USAGE_SCAN_LIMIT) return usage(false);
    page = await ledgerPage(services, accountId, { cursor: page.nextCursor, limit: 100 });
  }
}

const amount = (n: number) => (n > 0 ? `+${n}` : String(n));
const when = (ms: number) => `${new Date(ms).toISOString().replace("T", " ").slice(0, 19)} UTC`;

/**
 * One feed line; the dashboard script builds the same markup for live entries. The parts are
 * apart (a space between them: the flex layout shows none, a screen reader reads the words apart).
 */
export function feedItem(entry: LedgerEntry): string {
  const view = ledgerEntryView(entry);
  return `<li data-entry-id="${esc(view.id)}"><time datetime="${view.at}">${when(entry.at)}</time> <span class="amount ${entry.amount < 0 ? "debit" : "credit"}">${amount(entry.amount)}</span> <span>${esc(entry.tool ?? entry.kind)}</span> <span class="muted">${esc(entry.reason)} · balance ${entry.balance}</span></li>`;
}

/** This month's spend beside the spend alert, and the form that sets it (the state is refreshed after a change). */
function spendAlertSection(account: AccountRecord): string {
  const { spend, spend_alert: alert } = accountView(account);
  const state = alert
    ? `<p>Alert at <strong data-testid="spend-alert">${alert.credits}</strong> credits this month: a <code>spend.threshold_reached</code> event (and webhook) when the month's spend reaches it.</p><p><button type="button" class="secondary" data-action="remove-spend-alert">Remove the spend alert</button></p>`
    : `<p data-testid="spend-alert">No spend alert set.</p>`;
  return `<section aria-labelledby="spend-heading"><h2 id="spend-heading">Spend this month</h2>
<div id="spend-alert-state" data-refresh><p>Spent since ${spend.period_start.slice(0, 10)} (UTC): <strong data-testid="month-spend" data-since="${spend.period_start}">${spend.credits}</strong> credits.</p>${state}</div>
<form id="spend-alert"><label for="spend-alert-credits">Alert when this month's spend reaches (credits)</label><input id="spend-alert-credits" name="credits" type="number" min="1" step="1" inputmode="numeric" required value="${alert?.credits ?? ""}">
<p><button type="submit">Set spend alert</button></p></form>
</section>`;
}

export async function renderOverview(
  services: Services,
  current: DashboardSession,
): Promise<string> {
  const { account } = current;
  const tier = TIERS[account.tier];
  const newest = (await ledgerPage(services, account.id, { limit: FEED_SIZE })).items;
  const usage = await periodUsage(
    services,
    account.id,
    periodStart(account, services.config.planPeriodMs),
    newest,
  );
  const body = `
<dl class="cards">
<div class="card"><dt>Credit balance</dt><dd data-testid="credits-balance">${account.balance}</dd></div>
<div class="card"><dt>Tier</dt><dd data-testid="tier">${esc(tier.label)}</dd></div>
<div class="card"><dt>Rate limit</dt><dd data-testid="rate-limit">${tier.requestsPerMinute} / min</dd></div>
<div class="card"><dt>This period (since ${when(usage.since).slice(0, 10)})</dt><dd data-testid="period-usage">${usage.complete ? "" : "at least "}<span data-count="calls">${usage.calls}</span> calls · <span data-count="credits">${usage.credits}</span> credits</dd></div>
</dl>
${account.email && !account.emailVerified ? `<p class="notice">Your e-mail address ${esc(account.email)} is not verified yet: open the link we sent to receive 75 more credits.</p>` : ""}
<section aria-labelledby="live-heading"><h2 id="live-heading">Live usage</h2>
<p class="muted" id="live-state">Calls and credit changes appear here as they happen, from every gateway process.</p>
<p id="live-summary" class="visually-hidden" role="status" aria-live="polite"></p>
<ol class="feed" data-testid="usage-feed" data-after="${esc(newest[0]?.id ?? "0-0")}">${newest.map(feedItem).join("")}</ol>
</section>
${spendAlertSection(account)}
<section aria-labelledby="sessions-heading"><h2 id="sessions-heading">Sessions</h2>
<form method="post" action="${services.config.basePath}/dashboard/sign-out-everywhere"><input type="hidden" name="_csrf" value="${esc(current.session.csrfToken)}"><p>Signed in on another device you no longer use? End every dashboard session of this account.</p><button type="submit" class="secondary">Sign out everywhere</button></form>
</section>`;
  return dashboardPage(current, {
    basePath: services.config.basePath,
    title: "Overview",
    path: "/dashboard",
    body,
  });
}
