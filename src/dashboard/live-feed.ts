import type { Request, Response } from "express";
import { ledgerEntryView } from "../accounts/views.js";
import { ApiError } from "../http/errors.js";
import type { Services } from "../services.js";
import { isLedgerId } from "../store/types.js";
import { currentSession } from "./session.js";

/**
 * GET /dashboard/live: the account's ledger as Server-Sent Events (`event: ledger`, `id:` the
 * entry id, `data:` the entry as /api/v1/usage shows it). It follows the ledger in the store —
 * a blocking read on the account's Redis stream — so a call made through any gateway process
 * shows up within one round trip of its debit. The stream resumes after `Last-Event-ID` (the
 * browser's own reconnection) or `?after=` (the newest entry the page was rendered with).
 *
 * Each stream holds one Redis connection, so a process holds at most DASHBOARD_LIVE_STREAMS;
 * the session is checked again between reads, so signing out ends the stream within a wait.
 */
const WAIT_MS = 2_500;

export function liveFeed(services: Services) {
  let open = 0;
  return async (req: Request, res: Response) => {
    const current = await currentSession(services, req);
    if (!current)
      throw new ApiError(
        "session_required",
        "Sign in to the dashboard first (/dashboard/sign-in).",
      );
    if (open >= services.config.dashboard.liveStreams) {
      throw new ApiError(
        "rate_limited",
        "Too many live dashboards are open on this server; the page retries shortly.",
        { headers: { "Retry-After": "10" } },
      );
    }
    const resumeFrom = [
      req.get("last-event-id"),
      typeof req.query.after === "string" ? req.query.after : undefined,
    ].find((id) => id !== undefined && isLedgerId(id));
    let after =
      resumeFrom ??
      (await services.store.ledger(current.account.id, { limit: 1 })).items[0]?.id ??
      "0-0";

    open += 1;
    const follower = services.store.followLedger(current.account.id);
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      open -= 1;
      void follower.close();
    };
    req.on("close", close);
    res.status(200);
    res.setHeader("Content-Type", "text/event-stream; charset=utf-8");
    res.setHeader("Cache-Control", "no-store");
    res.setHeader("X-Accel-Buffering", "no"); // a buffering proxy would hold the events back
    res.flushHeaders();
    res.write("retry: 2000\n\n");
    const server = (req.socket as { server?: { listening: boolean } }).server;
    try {
      while (!closed && server?.listening !== false) {
        const entries = await follower.next(after, WAIT_MS);
        for (const entry of entries) {
          res.write(
            `id: ${entry.id}\nevent: ledger\ndata: ${JSON.stringify(ledgerEntryView(entry))}\n\n`,
          );
          after = entry.id;
        }
        if (entries.length === 0) res.write(": still here\n\n");
        if (
          !(await services.store.touchSession(
            current.session.accountId,
            current.session.id,
            services.config.dashboard.sessionIdleMs,
          ))
        )
          break;
      }
    } catch (err) {
      if (!closed)
        services.log.warn(
          { err, account: current.account.id },
          "dashboard live feed ended by an error",
        );
    } finally {
      close();
      res.end();
    }
  };
}
