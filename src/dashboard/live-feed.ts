import type { Request, Response } from "express";
import { ledgerEntryView } from "../accounts/views.js";
import { countedAddress } from "../http/client-address.js";
import { ApiError } from "../http/errors.js";
import type { Services } from "../services.js";
import { isLedgerId, type LedgerEntry } from "../store/types.js";
import { compareLedgerIds } from "../books/usage.js";
import { ledgerPage } from "./overview.js";
import { currentSession, stillLive } from "./session.js";

/**
 * GET /dashboard/live: the account's ledger as Server-Sent Events (`event: ledger`, `id:` the
 * entry id, `data:` the entry as /api/v1/usage shows it). It follows the ledger in the store —
 * a blocking read on the account's Redis stream — so a call made through any gateway process
 * shows up within one round trip of its debit. The stream resumes after `Last-Event-ID` (the
 * browser's own reconnection) or `?after=` (the newest entry the page was rendered with), first
 * sending what came since from the books and the store (`entriesSince`).
 *
 * Each stream holds one Redis connection, so a process holds at most DASHBOARD_LIVE_STREAMS, one
 * account at most LIVE_STREAMS_PER_ACCOUNT of them (a few tabs), and one client address at most
 * LIVE_STREAMS_PER_ADDRESS: accounts cost nothing to make (a wallet signs in to a new one), so
 * without the last, one address holding forty throwaway accounts took every stream. The session
 * is checked again between reads without counting as use: signing out, or the session's idle
 * time passing with no page used, ends the stream within a wait.
 */
const WAIT_MS = 2_500;
/** The most entries a resumed stream catches up on; past that the page is told to reload. */
const CATCH_UP_LIMIT = 500;

/**
 * The entries after `after`, oldest first, read as the page was (the books merged with the store),
 * or null when there are more than CATCH_UP_LIMIT. The store's stream alone cannot resume: the
 * books' export trims it every BOOKS_EXPORT_INTERVAL_MS, so entries made while no stream was open
 * (between the page and its stream, or during a reconnection's wait) may be in the books only.
 */
async function entriesSince(
  services: Services,
  accountId: string,
  after: string,
): Promise<LedgerEntry[] | null> {
  const missed: LedgerEntry[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await ledgerPage(services, accountId, { cursor, limit: 100 });
    for (const entry of page.items) {
      if (compareLedgerIds(entry.id, after) <= 0) return missed.reverse();
      if (missed.push(entry) > CATCH_UP_LIMIT) return null;
    }
    if (!page.nextCursor) return missed.reverse();
    cursor = page.nextCursor;
  }
}

const ledgerEvent = (entry: LedgerEntry) =>
  `id: ${entry.id}\nevent: ledger\ndata: ${JSON.stringify(ledgerEntryView(entry))}\n\n`;
export const LIVE_STREAMS_PER_ACCOUNT = 5;
export const LIVE_STREAMS_PER_ADDRESS = 20;

/** How many streams each key (an account, an address) holds. */
class OpenStreams {
  private readonly held = new Map<string, number>();
  constructor(readonly limit: number) {}
  full(key: string): boolean {
    return (this.held.get(key) ?? 0) >= this.limit;
  }
  take(key: string): void {
    this.held.set(key, (this.held.get(key) ?? 0) + 1);
  }
  release(key: string): void {
    const left = (this.held.get(key) ?? 1) - 1;
    if (left > 0) this.held.set(key, left);
    else this.held.delete(key);
  }
}

export function liveFeed(services: Services) {
  let open = 0;
  const perAccount = new OpenStreams(LIVE_STREAMS_PER_ACCOUNT);
  const perAddress = new OpenStreams(LIVE_STREAMS_PER_ADDRESS);
  return async (req: Request, res: Response) => {
    const current = await currentSession(services, req, res);
    if (!current)
      throw new ApiError(
        "session_required",
        "Sign in to the dashboard first (/dashboard/sign-in).",
      );
    const accountId = current.account.id;
    const address = countedAddress(req.ip);
    const refusal = perAccount.full(accountId)
      ? `At most ${LIVE_STREAMS_PER_ACCOUNT} live dashboards per account are open at once; close a tab, and the page retries shortly.`
      : perAddress.full(address)
        ? `At most ${LIVE_STREAMS_PER_ADDRESS} live dashboards per client address are open at once; the page retries shortly.`
        : open >= services.config.dashboard.liveStreams
          ? "Too many live dashboards are open on this server; the page retries shortly."
          : null;
    if (refusal) throw new ApiError("rate_limited", refusal, { headers: { "Retry-After": "10" } });
    // The stream's place is taken before anything is awaited: streams opened at once count each other.
    open += 1;
    perAccount.take(accountId);
    perAddress.take(address);
    const follower = services.store.followLedger(accountId);
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      open -= 1;
      perAccount.release(accountId);
      perAddress.release(address);
      void follower.close();
    };
    req.on("close", close);
    const resumeFrom = [
      req.get("last-event-id"),
      typeof req.query.after === "string" ? req.query.after : undefined,
    ].find((id) => id !== undefined && isLedgerId(id));
    let after: string;
    let missed: LedgerEntry[] | null = [];
    try {
      after =
        resumeFrom ?? (await services.store.ledger(accountId, { limit: 1 })).items[0]?.id ?? "0-0";
      if (resumeFrom) missed = await entriesSince(services, accountId, resumeFrom);
    } catch (err) {
      close();
      throw err;
    }
    res.status(200);
    res.setHeader("Content-Type", "text/event-stream; charset=utf-8");
    res.setHeader("Cache-Control", "no-store");
    res.setHeader("X-Accel-Buffering", "no"); // a buffering proxy would hold the events back
    res.flushHeaders();
    res.write("retry: 2000\n\n");
    if (missed === null) {
      // Too much happened while the page was away: it reloads rather than count it all again.
      res.end("event: reload\ndata: {}\n\n");
      return close();
    }
    for (const entry of missed) {
      res.write(ledgerEvent(entry));
      after = entry.id;
    }
    const server = (req.socket as { server?: { listening: boolean } }).server;
    try {
      while (!closed && server?.listening !== false) {
        const entries = await follower.next(after, WAIT_MS);
        // Checked before anything is written: a session signed out (or its key revoked) during
        // the wait must not be sent the entry that ended the wait.
        if (!(await stillLive(services, current.session))) break;
        for (const entry of entries) {
          res.write(ledgerEvent(entry));
          after = entry.id;
        }
        if (entries.length === 0) res.write(": still here\n\n");
      }
    } catch (err) {
      if (!closed)
        services.log.warn({ err, account: accountId }, "dashboard live feed ended by an error");
    } finally {
      close();
      res.end();
    }
  };
}
