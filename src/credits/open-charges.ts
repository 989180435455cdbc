import { randomBytes } from "node:crypto";
import { eventRecord } from "../events/types.js";
import { newEventId } from "../lib/ids.js";
import { every } from "../lib/periodic.js";
import type { Foundation } from "../services.js";
import type { OpenCharge } from "../store/open-charges/index.js";
import { untilStoreAnswers } from "./until-store-answers.js";

/**
 * The reconciler of charged calls left open by a gateway process that died (SIGKILL, OOM, a lost
 * host): every charged call ends kept or refunded, exactly once, even when the process that
 * admitted it is gone (decisions.md, "Calls cut off by a SIGKILL").
 *
 * Each process beats a heartbeat every second. A call still open after OPEN_MARK_AFTER_MS is
 * written under the process's id by the next sweep (every MARK_EVERY_MS: so 1 to 1.5 s in) (the fast calls, nearly all of them, end first: the hot path
 * stays one Redis round trip); such a call is closed in Redis before its answer is sent. Every
 * process looks every two seconds for processes silent for SILENT_AFTER_MS and refunds their open
 * calls: the caller never had an answer. Close and take are atomic and exclusive, so a process
 * that was only stalled (not dead) learns its call was refunded and answers it as not charged.
 */
const HEARTBEAT_EVERY_MS = 1000;
const OPEN_MARK_AFTER_MS = 1000;
const MARK_EVERY_MS = 500;
const RECONCILE_EVERY_MS = 2000;
export const SILENT_AFTER_MS = 10_000;
/** How long a survivor retries the refund of a call it took while the store does not take it. */
const STORE_RETRY_MS = 5 * 60_000;

export interface OpenChargeHandle {
  /** Before a served call's answer: false when a survivor took the call for dead and refunded it. */
  keep(): Promise<boolean>;
  /** After a failed call's refund. */
  close(): Promise<void>;
}

export interface OpenCharges {
  track(charge: OpenCharge): OpenChargeHandle;
  stop(): Promise<void>;
}

interface Tracked {
  charge: OpenCharge;
  since: number;
  /** The write of this call as open, once made (it may have failed: closing then finds nothing). */
  marked: Promise<unknown> | null;
}

export function startOpenCharges(
  services: Pick<Foundation, "store" | "log" | "metrics">,
): OpenCharges {
  const { store, log } = services;
  const processId = `proc_${randomBytes(9).toString("base64url")}`;
  const open = new Map<string, Tracked>();

  // Since when this process's heartbeats have all landed. After a Redis outage every process's
  // last beat is old: none takes another's calls until each has had SILENT_AFTER_MS to beat again.
  let beatingSince: number | null = null;
  const beat = () =>
    store.heartbeat(processId, Date.now()).then(
      () => {
        beatingSince ??= Date.now();
      },
      () => {
        beatingSince = null; // the store is away: its own 503s say so; the beat resumes with it
      },
    );
  const heartbeat = every(HEARTBEAT_EVERY_MS, beat, () => undefined);
  void beat();

  const marking = every(
    MARK_EVERY_MS,
    async () => {
      const due = Date.now() - OPEN_MARK_AFTER_MS;
      const unmarked = [...open.values()].filter((t) => !t.marked && t.since <= due);
      if (unmarked.length === 0) return;
      const write = store.markOpen(
        processId,
        unmarked.map((t) => t.charge),
      );
      for (const t of unmarked) t.marked = write;
      await write;
    },
    (err) => log.warn({ err }, "could not record the open charged calls"),
  );

  // Past an hour the process's record has expired anyway.
  const closeWhenBack = (requestId: string) =>
    untilStoreAnswers(
      log,
      "the close of a kept call's open record",
      { request_id: requestId },
      Date.now() + 3600_000,
      async () => {
        await store.closeOpen(processId, requestId);
      },
    );

  const reconciling = every(
    RECONCILE_EVERY_MS,
    async () => {
      if (beatingSince === null || Date.now() - beatingSince < SILENT_AFTER_MS) return;
      for (const silent of await store.silentProcesses(Date.now() - SILENT_AFTER_MS)) {
        if (silent === processId) continue;
        for (const charge of await store.takeOpen(silent, Date.now()))
          await refundLeftOpen(services, charge, silent);
      }
    },
    (err) => log.warn({ err }, "could not reconcile the open charged calls of silent processes"),
  );

  return {
    track(charge) {
      const tracked: Tracked = { charge, since: Date.now(), marked: null };
      open.set(charge.requestId, tracked);
      const end = async (): Promise<"closed" | "taken"> => {
        open.delete(charge.requestId);
        if (!tracked.marked) return "closed";
        await tracked.marked.catch(() => undefined);
        try {
          return await store.closeOpen(processId, charge.requestId);
        } catch {
          // The store away: it was not taken meanwhile (no one takes calls while the store is
          // away, nor for SILENT_AFTER_MS after; unless this process alone lost it, over 10 s: a
          // partition, the one case left where a served call can also be refunded). It is closed
          // once the store is back, so a later death of this process cannot have it refunded.
          closeWhenBack(charge.requestId);
          return "closed";
        }
      };
      return {
        async keep() {
          return (await end()) === "closed";
        },
        async close() {
          await end();
        },
      };
    },
    async stop() {
      await Promise.all([heartbeat.stop(), marking.stop(), reconciling.stop()]);
      // Every call has ended by now (the server drained): nothing of this process is left open.
      await store.leave(processId).catch(() => undefined);
    },
  };
}

/** A call its process left open, refunded once with `tool.error` (the refund is idempotent per request id). */
async function refundLeftOpen(
  { store, log, metrics }: Pick<Foundation, "store" | "log" | "metrics">,
  charge: OpenCharge,
  processId: string,
): Promise<void> {
  const event = eventRecord(newEventId(), "tool.error", charge.accountId, {
    tool_name: charge.tool,
    credits_charged: 0,
    error_code: "shutting_down",
    request_id: charge.requestId,
  });
  // Taken from the process's record already: retried here until it lands, or until a retry with
  // the call's Idempotency-Key may have taken its debit over, for five minutes at most (as any
  // end of a call is while the store is away; meanwhile this survivor reconciles nothing else).
  const retryUntil = Math.min(charge.refundUntil, Date.now() + STORE_RETRY_MS);
  let refunded: Awaited<ReturnType<typeof store.refund>>;
  for (;;) {
    try {
      refunded = await store.refund(
        charge.accountId,
        {
          requestId: charge.requestId,
          idempotencyKey: charge.idempotencyKey,
          tool: charge.tool,
          keyHash: charge.keyHash,
          reason: "gateway process died mid-call",
        },
        [event],
      );
      break;
    } catch (err) {
      if (Date.now() + 1000 >= retryUntil) {
        log.error(
          { err, account_id: charge.accountId, request_id: charge.requestId },
          "could not refund a charged call left open by a dead process; the ledger needs reconciling",
        );
        return;
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  if (refunded.status === "refunded") metrics.creditsRefunded.inc(refunded.amount);
  log.warn(
    {
      account_id: charge.accountId,
      request_id: charge.requestId,
      process: processId,
      status: refunded.status,
    },
    "refunded a charged call left open by a gateway process that stopped answering",
  );
}
