import type { Metrics } from "../http/metrics.js";
import type { StatusChecker } from "./checker.js";
import type { ComponentReport, IncidentView, Percentiles, StatusReport } from "./report-schema.js";
import { UPTIME_DAYS, lastDays, type DayCount, type Incident, type StatusStore } from "./store.js";

/**
 * What /status, /status.json and /status.rss show, computed from the status store (shared by
 * every process) and this process's metrics. Its shape is report-schema.ts's.
 */
export type { ComponentReport, IncidentView, Percentiles, StatusReport };

/** Routes (metrics labels) whose latency stands for a component. */
const HTTP_ROUTES: Record<string, (route: string) => boolean> = {
  "rest-api": (route) => route.startsWith("/v1/") || route.startsWith("/api/v1"),
  mcp: (route) => route === "/mcp" || route.startsWith("/mcp/"),
};

const round = (ms: number) => Math.round(ms * 100) / 100;

/** Quantiles of a Prometheus histogram (cumulative buckets), interpolated inside the bucket. */
export function histogramQuantiles(
  buckets: Map<number, number>,
  quantiles: number[],
): (number | null)[] {
  const bounds = [...buckets.keys()].sort((a, b) => a - b);
  const total = buckets.get(Infinity) ?? 0;
  return quantiles.map((q) => {
    if (total === 0) return null;
    const rank = q * total;
    let previousBound = 0;
    let previousCount = 0;
    for (const bound of bounds) {
      const count = buckets.get(bound)!;
      if (count >= rank) {
        if (bound === Infinity) return previousBound;
        const inBucket = count - previousCount;
        return inBucket === 0
          ? bound
          : previousBound + ((bound - previousBound) * (rank - previousCount)) / inBucket;
      }
      previousBound = bound;
      previousCount = count;
    }
    return previousBound;
  });
}

function sampleQuantiles(samples: number[], quantiles: number[]): (number | null)[] {
  if (samples.length === 0) return quantiles.map(() => null);
  const sorted = [...samples].sort((a, b) => a - b);
  return quantiles.map(
    (q) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!,
  );
}

async function httpBuckets(
  metrics: Metrics,
  matches: (route: string) => boolean,
): Promise<Map<number, number>> {
  const buckets = new Map<number, number>();
  for (const value of (await metrics.latency.get()).values) {
    if (!value.metricName?.endsWith("_bucket") || !matches(String(value.labels.route ?? "")))
      continue;
    const bound = (value.labels as Record<string, string | number>).le;
    const le = bound === "+Inf" ? Infinity : Number(bound);
    buckets.set(le, (buckets.get(le) ?? 0) + value.value);
  }
  return buckets;
}

function incidentView(incident: Incident): IncidentView {
  return {
    id: incident.id,
    title: incident.title,
    impact: incident.impact,
    status: incident.updates.at(-1)?.status ?? "investigating",
    components: incident.components,
    created_at: new Date(incident.createdAt).toISOString(),
    resolved_at: incident.resolvedAt ? new Date(incident.resolvedAt).toISOString() : null,
    updates: incident.updates.map((u) => ({
      status: u.status,
      message: u.message,
      at: new Date(u.at).toISOString(),
    })),
  };
}

export { incidentView };

/** One of each incident (the open and the newest lists overlap), newest first. */
function newestFirst(incidents: Incident[]): Incident[] {
  const byId = new Map(incidents.map((i) => [i.id, i]));
  return [...byId.values()].sort((a, b) => b.createdAt - a.createdAt);
}

export async function buildStatusReport(options: {
  store: StatusStore;
  checker: StatusChecker;
  metrics: Metrics;
  intervalMs: number;
  /** The incidents of this process's last report that read the store, shown while it cannot be read. */
  incidentsLastRead: StatusReport["incidents"] | null;
  now?: number;
}): Promise<StatusReport> {
  const now = options.now ?? Date.now();
  const days = lastDays(now, UPTIME_DAYS);
  // The status page must still answer when the shared store does not: then it shows this
  // process's own latest checks, without history, and the incidents as last read (an outage of
  // the store is when the operator's notice of an incident matters most).
  const [latest, counts, incidents, storeReadable] = await Promise.all([
    options.store.latest(),
    options.store.dayCounts(days),
    options.store.listIncidents(50),
    options.store.openIncidents(),
  ]).then(
    ([l, c, newest, open]) => [l, c, newestFirst([...open, ...newest]), true] as const,
    () =>
      [
        new Map(options.checker.lastRound().map((r) => [r.component, r])),
        new Map<string, DayCount[]>(),
        [] as Incident[],
        false,
      ] as const,
  );
  const quantiles = [0.5, 0.95, 0.99];
  const components: ComponentReport[] = [];
  for (const component of options.checker.components) {
    const last = latest.get(component.id);
    const perDay = counts.get(component.id) ?? [];
    const ok = perDay.reduce((n, d) => n + d.ok, 0);
    const total = perDay.reduce((n, d) => n + d.total, 0);
    const httpMatch = HTTP_ROUTES[component.id];
    let latency: Percentiles;
    if (httpMatch) {
      const buckets = await httpBuckets(options.metrics, httpMatch);
      const [p50, p95, p99] = histogramQuantiles(buckets, quantiles).map((s) =>
        s === null ? null : round(s * 1000),
      );
      latency = {
        p50: p50!,
        p95: p95!,
        p99: p99!,
        source: "http",
        samples: buckets.get(Infinity) ?? 0,
      };
    } else {
      const samples = options.checker.latencies(component.id);
      const [p50, p95, p99] = sampleQuantiles(samples, quantiles);
      latency = { p50: p50!, p95: p95!, p99: p99!, source: "checks", samples: samples.length };
    }
    components.push({
      id: component.id,
      name: component.name,
      group: component.group,
      state: last?.state ?? "unknown",
      detail: last?.detail ?? null,
      checked_at: last ? new Date(last.checkedAt).toISOString() : null,
      uptime_90d: total > 0 ? Math.round((ok / total) * 1_000_000) / 10_000 : null,
      days: perDay,
      latency_ms: latency,
    });
  }
  const views = incidents.map(incidentView);
  const updatedAt = new Date(now).toISOString();
  const shown: StatusReport["incidents"] = storeReadable
    ? {
        active: views.filter((i) => !i.resolved_at),
        recent: views.filter((i) => i.resolved_at).slice(0, 20),
        as_of: updatedAt,
      }
    : (options.incidentsLastRead ?? { active: [], recent: [], as_of: null });
  return {
    status:
      components.some((c) => c.state === "degraded") || shown.active.length > 0
        ? "degraded"
        : "operational",
    history_available: storeReadable,
    updated_at: updatedAt,
    check_interval_ms: options.intervalMs,
    components,
    incidents: shown,
  };
}
