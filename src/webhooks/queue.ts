import type { Agent } from "node:https";
import type { Job } from "bullmq";
import type { Foundation } from "../services.js";
import { connectRedis } from "../store/redis-connection.js";
import {
  InternalDeliveryError,
  internalRetryDelayMs,
  processDelivery,
} from "./process-delivery.js";
import { MAX_ATTEMPTS, retryDelayMs, type DeliveryJob } from "./types.js";
import { ExpiringMap } from "../lib/expiring-map.js";

/**
 * Where deliveries wait and are retried. With Redis: BullMQ, so deliveries survive restarts and
 * spread over every gateway process (a job id per event and webhook makes enqueueing idempotent).
 * Without Redis (development): the same rule, in this process.
 */
export interface DeliveryQueue {
  /** Idempotent per `jobId`: a job already queued (or recently done) is not added again. */
  enqueue(jobId: string, job: DeliveryJob): Promise<void>;
  close(): Promise<void>;
}

const QUEUE_NAME = "webhook-deliveries";

/**
 * BullMQ (a fifth of the gateway's start-up CPU) is loaded once the gateway is up, not before it
 * can answer: `loadAfterMs` after this call, or at the first delivery queued, whichever comes
 * first. The queue's methods wait for it; jobs left by an earlier run are taken up then.
 */
export function createBullQueue(
  services: Foundation,
  agent: Agent,
  redisUrl: string,
  loadAfterMs = 1000,
): DeliveryQueue {
  let opened: Promise<BullDeliveryQueue> | null = null;
  let closed = false;
  const open = () =>
    (opened ??= import("bullmq").then((bullmq) => {
      if (closed) throw new Error("the webhook delivery queue is closed");
      return openBullQueue(bullmq, services, agent, redisUrl);
    }));
  const timer = setTimeout(() => {
    // Nothing waits on it until a delivery is queued: a failure is logged here and met again there.
    open().catch((err: Error) => {
      if (!closed)
        services.log.error({ err: err.message }, "the webhook delivery queue could not start");
    });
  }, loadAfterMs);
  // A scrape reads the queue itself (loading it, if a scrape comes first).
  services.metrics.onScrape(async () => {
    const counts = await (await open()).jobCounts();
    for (const [state, n] of Object.entries(counts))
      services.metrics.queueDepth.set({ queue: `webhooks-${state}` }, n);
  });
  return {
    async enqueue(jobId, job) {
      await (await open()).enqueue(jobId, job);
    },
    async close() {
      closed = true;
      clearTimeout(timer);
      await (await opened?.catch(() => null))?.close();
    },
  };
}

/** Deliveries one process has in flight at once (each mostly waits on its receiver). */
const CONCURRENCY = 32;
/**
 * At most this many of them for one owner (an account, or the platform), twice over: once for
 * its webhooks whose last delivery here went through (or that have had none), once for those
 * whose last one failed. A receiver that never answers holds its slot for the 10 s timeout, on
 * each of four attempts, and one account with a few such webhooks and a stream of events
 * (`tool.error` is free to cause) held every slot, so every other account's deliveries waited
 * behind its backlog (58 s in a probe, and growing). Kept apart, an owner's failing receivers
 * do not hold up its working ones either: with one share for both, the failing ones' retries
 * (due at once) took the slots back first, and working ones waited 20–40 s.
 */
const OWNER_SHARE = 8;
/** How long a webhook whose delivery failed counts as failing, unless one goes through first. */
const FAILING_FOR_MS = 10 * 60_000;
/** How long a delivery put back for its owner's share waits: 0.25 s, doubling to 4 s, jittered. */
const shareWaitMs = (putBack: number) =>
  Math.min(4000, 250 * 2 ** Math.max(0, Math.min(putBack, 4))) + Math.floor(Math.random() * 250);

/** Each owner's deliveries in flight in this process, up to `share` at once. */
class OwnerShares {
  private readonly held = new Map<string, number>();
  constructor(private readonly share: number) {}
  take(owner: string): boolean {
    const held = this.held.get(owner) ?? 0;
    if (held >= this.share) return false;
    this.held.set(owner, held + 1);
    return true;
  }
  give(owner: string): void {
    const held = (this.held.get(owner) ?? 1) - 1;
    if (held > 0) this.held.set(owner, held);
    else this.held.delete(owner);
  }
}

/** The BullMQ queue once loaded: deliveries, and its job counts for the metrics. */
interface BullDeliveryQueue extends DeliveryQueue {
  jobCounts(): Promise<Record<string, number>>;
}

function openBullQueue(
  { DelayedError, Queue, UnrecoverableError, Worker }: typeof import("bullmq"),
  services: Foundation,
  agent: Agent,
  redisUrl: string,
): BullDeliveryQueue {
  // BullMQ keeps its own key namespace (it does not support ioredis' keyPrefix). The braces put
  // all of a queue's keys in one cluster slot, as BullMQ's scripts need on a Redis Cluster.
  const prefix = `{${services.config.redisKeyPrefix}bull}`;
  const options = { maxRetriesPerRequest: null, enableOfflineQueue: true };
  const shared = services.config.redisCluster ? connectRedis(redisUrl, true, options) : null;
  const connection = shared ?? { url: redisUrl, ...options };
  const queue = new Queue<DeliveryJob>(QUEUE_NAME, {
    connection,
    prefix,
    defaultJobOptions: {
      attempts: MAX_ATTEMPTS,
      backoff: { type: "custom" },
      // Completed jobs are kept a day, so a re-enqueue of the same event (after a crash) is a no-op.
      removeOnComplete: { age: 24 * 3600, count: 100_000 },
      // Failed ones a week, and as many at most: an account whose receivers always fail makes one
      // per event and webhook (a custom tool that always fails, up to 1,000 tool.error events a
      // minute), which a week's age alone did not bound.
      removeOnFail: { age: 7 * 24 * 3600, count: 100_000 },
    },
  });
  /**
   * A retry is due at its backoff; BullMQ wakes an idle worker for it through a marker in Redis.
   * In CI that wake-up was lost a few times (the worker's blocking read abandoned by BullMQ's own
   * watchdog), and the retry went out ~4 s late, with the next job due. The process that
   * scheduled the retry also promotes it when it is due, unless it has been taken already.
   */
  const nudges = new Set<NodeJS.Timeout>();
  const promoteWhenDue = (job: Job<DeliveryJob>, delayMs: number) => {
    const timer = setTimeout(() => {
      nudges.delete(timer);
      void job.promote().catch(() => {}); // taken or gone already: nothing to do
    }, delayMs);
    timer.unref();
    nudges.add(timer);
  };
  const shares = new OwnerShares(OWNER_SHARE);
  const failing = new ExpiringMap<string, true>(Date.now, FAILING_FOR_MS);
  const shareOf = ({ ownerId, webhookId }: DeliveryJob) =>
    `${ownerId} ${failing.has(webhookId) ? "failing" : "working"}`;
  const worker = new Worker<DeliveryJob>(
    QUEUE_NAME,
    async (job, token) => {
      const internalFailures = job.data.internalFailures ?? 0;
      const share = shareOf(job.data);
      if (!shares.take(share)) {
        // Its owner has its share of this process's deliveries in flight: back to the delayed
        // set, counting no attempt, later each time it finds the share taken (the starts beyond
        // the counted attempts and our own failures are those put-backs, and crashes).
        const putBack = job.attemptsStarted - job.attemptsMade - 1 - internalFailures;
        await job.moveToDelayed(Date.now() + shareWaitMs(putBack), token);
        throw new DelayedError();
      }
      const attempt = job.attemptsMade + 1;
      let outcome;
      try {
        outcome = await processDelivery(services, agent, job.data, attempt, internalFailures);
      } catch (err) {
        if (!(err instanceof InternalDeliveryError)) throw err;
        // Back to the delayed set without counting an attempt: the receiver's retries stay whole.
        await job.updateData({ ...job.data, internalFailures: internalFailures + 1 });
        await job.moveToDelayed(Date.now() + internalRetryDelayMs(internalFailures + 1), token);
        throw new DelayedError();
      } finally {
        shares.give(share);
      }
      if (outcome === "delivered") failing.delete(job.data.webhookId);
      else if (outcome !== "dropped") failing.set(job.data.webhookId, true);
      if (outcome === "retry") {
        // Due when the backoff below says, as the delivery log's next_attempt_at does.
        promoteWhenDue(job, retryDelayMs(attempt));
        throw new Error("delivery failed; will retry");
      }
      if (outcome === "failed") throw new UnrecoverableError("delivery failed for good");
    },
    {
      connection,
      prefix,
      concurrency: CONCURRENCY,
      settings: { backoffStrategy: (attemptsMade: number) => retryDelayMs(attemptsMade) },
      // Longer than the 10 s delivery timeout; a job held by a crashed process is taken over after it.
      lockDuration: 20_000,
      stalledInterval: 5_000,
      // A delivery cut off by its process's death (or a lock lost to a Redis outage) is "stalled"
      // and taken over; BullMQ's default fails it for good at the second stall, so two crashes in
      // a row mid-delivery lost the event (test/integration/webhooks-crash-mid-delivery.test.ts).
      // A stall is our fault, not the receiver's: it uses none of the delivery's attempts, and the
      // bound is only there so a delivery that somehow killed every process would end.
      maxStalledCount: 1_000,
      // An idle worker looks for due jobs at least every second (BullMQ's default: 5 s). A wake-up
      // marker handed to a blocking read that BullMQ's watchdog has just abandoned is lost with it,
      // and the job then waits for the worker's next look: a retry due in 1 s went out ~4 s late
      // in CI. One blocking read a second per process is the cost.
      drainDelay: 1,
    },
  );
  worker.on("error", (err) => services.log.warn({ err: err.message }, "webhook worker error"));
  queue.on("error", (err) => services.log.warn({ err: err.message }, "webhook queue error"));
  return {
    jobCounts: () => queue.getJobCounts("waiting", "delayed", "active"),
    async enqueue(jobId, job) {
      await queue.add(job.event, job, { jobId });
    },
    async close() {
      for (const timer of nudges) clearTimeout(timer);
      // Bounded: with Redis gone, BullMQ would wait for a connection that is not coming back.
      const bounded = (p: Promise<unknown>) =>
        Promise.race([p, new Promise((r) => setTimeout(r, 3000).unref())]);
      await bounded(worker.close());
      await bounded(queue.close());
      shared?.disconnect();
    },
  };
}

/** How long the in-process queue remembers a job id: as long as BullMQ keeps a completed job. */
const SEEN_FOR_MS = 24 * 3600 * 1000;

export function createInProcessQueue(services: Foundation, agent: Agent): DeliveryQueue {
  // Job ids enqueued, each kept a day as BullMQ keeps a completed job (a re-enqueue is a no-op),
  // then forgotten: a set of every delivery ever made grew for as long as the process ran.
  const seen = new ExpiringMap<string, true>(Date.now, SEEN_FOR_MS);
  const timers = new Set<NodeJS.Timeout>();
  const later = (delayMs: number, next: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      next();
    }, delayMs);
    timers.add(timer);
  };
  const run = (job: DeliveryJob, attemptNumber: number, internalFailures = 0) => {
    void processDelivery(services, agent, job, attemptNumber, internalFailures).then(
      (outcome) => {
        if (outcome === "retry")
          later(retryDelayMs(attemptNumber), () => run(job, attemptNumber + 1));
      },
      (err) => {
        // A fault of ours: the same attempt again later, not counted against the receiver.
        if (err instanceof InternalDeliveryError)
          later(internalRetryDelayMs(internalFailures + 1), () =>
            run(job, attemptNumber, internalFailures + 1),
          );
        else services.log.error({ err }, "webhook delivery crashed");
      },
    );
  };
  return {
    async enqueue(jobId, job) {
      if (seen.has(jobId)) return;
      seen.set(jobId, true);
      run(job, 1);
    },
    async close() {
      for (const t of timers) clearTimeout(t);
    },
  };
}
