import type { Services } from "../services.js";
import { startStatusChecks, type StatusChecker } from "./checker.js";
import { createMemoryStatusStore } from "./memory-store.js";
import { createRedisStatusStore } from "./redis-store.js";
import { buildStatusReport, type StatusReport } from "./report.js";
import type { StatusStore } from "./store.js";

/**
 * The status page's service: its store (Redis when the gateway has one, shared by every
 * process; memory otherwise) from the start, and the background checks once the gateway
 * listens (they probe its own address). Reports are cached briefly, so a busy status page
 * costs the store a handful of reads a second at most.
 */
const REPORT_CACHE_MS = 1000;

export interface StatusService {
  store: StatusStore;
  /** Starts the background checks against this gateway's own address. */
  start(selfUrl: string): void;
  report(): Promise<StatusReport>;
  /**
   * Drops the cached report after an incident changed: the operator who posted it sees it on the
   * next view (opening one reads the report first, so the cached one was from just before it).
   */
  incidentsChanged(): void;
  /**
   * Stops the background checks (the page is still served): called as soon as shutdown begins,
   * before the listener the checks probe closes.
   */
  stopChecks(): Promise<void>;
  stop(): Promise<void>;
}

export function createStatusService(services: Omit<Services, "status">): StatusService {
  const { config } = services;
  const store = config.redisUrl
    ? createRedisStatusStore({
        url: config.redisUrl,
        keyPrefix: config.redisKeyPrefix,
        cluster: config.redisCluster,
      })
    : createMemoryStatusStore();
  let checker: StatusChecker | null = null;
  let cached: { at: number; report: Promise<StatusReport> } | null = null;
  // Kept from the reports themselves (no read of its own): what the page shows while the store
  // cannot be read, in this process's memory.
  let incidentsLastRead: StatusReport["incidents"] | null = null;
  const keepIncidents = (report: StatusReport) => {
    // The newest read wins: two reports built at once may settle in either order.
    if (report.history_available && report.updated_at >= (incidentsLastRead?.as_of ?? ""))
      incidentsLastRead = report.incidents;
  };
  return {
    store,
    start(selfUrl) {
      checker = startStatusChecks(services, store, selfUrl, config.statusCheckIntervalMs);
    },
    report() {
      if (!checker) return Promise.reject(new Error("status checks have not started"));
      // Never cached longer than a check interval: a state change shows within one interval.
      if (
        !cached ||
        Date.now() - cached.at > Math.min(REPORT_CACHE_MS, config.statusCheckIntervalMs)
      ) {
        const report = buildStatusReport({
          store,
          checker,
          metrics: services.metrics,
          intervalMs: config.statusCheckIntervalMs,
          incidentsLastRead,
        });
        cached = { at: Date.now(), report };
        report.then(keepIncidents, () => (cached = null));
      }
      return cached.report;
    },
    incidentsChanged() {
      cached = null;
    },
    async stopChecks() {
      await checker?.stop();
    },
    async stop() {
      await checker?.stop();
      await store.close();
    },
  };
}
