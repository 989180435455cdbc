/**
 * What the status page keeps: the latest result of each component's check, counts of checks per
 * component and UTC day (for 90-day uptime), and the operator's incidents. A small interface of
 * its own, with a Redis implementation shared by every gateway process and an in-memory one for
 * the embedded mode.
 */
export type ComponentState = "operational" | "degraded" | "not_configured";

export interface CheckResult {
  component: string;
  state: ComponentState;
  /** Why the component is not operational, for the page. */
  detail: string | null;
  latencyMs: number;
  checkedAt: number;
}

/** Checks on one UTC day: `ok` of `total` found the component operational. */
export interface DayCount {
  day: string;
  ok: number;
  total: number;
}

export type IncidentStatus = "investigating" | "identified" | "monitoring" | "resolved";
export type IncidentImpact = "minor" | "major";

export interface IncidentUpdate {
  status: IncidentStatus;
  message: string;
  at: number;
  /** The Idempotency-Key it was posted with, hashed: a retry finds it and posts nothing. */
  key?: string;
}

export interface Incident {
  id: string;
  title: string;
  impact: IncidentImpact;
  components: string[];
  createdAt: number;
  resolvedAt: number | null;
  /** Oldest first; the first is the opening message. */
  updates: IncidentUpdate[];
}

/** An incident opening's Idempotency-Key, hashed, and how long it names the incident it opened. */
export interface IncidentIdempotency {
  key: string;
  ttlSeconds: number;
}

export interface StatusStore {
  /** Records one round of checks: the latest result per component and the day's counts. */
  record(results: CheckResult[]): Promise<void>;
  latest(): Promise<Map<string, CheckResult>>;
  /** Per component, the counts of the given days (missing days are absent). */
  dayCounts(days: string[]): Promise<Map<string, DayCount[]>>;
  /**
   * Keeps a new incident, in one step, unless its opening's Idempotency-Key (hashed) opened one
   * within the last `ttlSeconds` (an opening retried): that one is then left as it is and answered;
   * null when this one was kept. Past that time the key opens a new incident.
   */
  saveIncident(incident: Incident, idempotency?: IncidentIdempotency): Promise<Incident | null>;
  getIncident(id: string): Promise<Incident | null>;
  /**
   * Changes an incident in one step: `change` gets the incident as kept and returns it changed, or
   * null to leave it as it is. Racing changes each see the one before (in Redis, a change made
   * from a stale read is made again from a fresh one), so none is lost and none undoes another.
   * Answers the incident as kept after the change and whether `change` changed it; null when
   * there is no such incident.
   */
  changeIncident(
    id: string,
    change: (incident: Incident) => Incident | null,
  ): Promise<{ incident: Incident; changed: boolean } | null>;
  /** Newest first. */
  listIncidents(limit: number): Promise<Incident[]>;
  /**
   * Every unresolved incident, however old: `listIncidents` alone lost an open incident from the
   * page (and left the page "operational") once enough newer ones had come and gone.
   */
  openIncidents(): Promise<Incident[]>;
  close(): Promise<void>;
}

export const UPTIME_DAYS = 90;

/** "2026-11-22" for a time (UTC). */
export const utcDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** The last `count` UTC days up to today, oldest first. */
export function lastDays(now: number, count = UPTIME_DAYS): string[] {
  return Array.from({ length: count }, (_, i) => utcDay(now - (count - 1 - i) * 86_400_000));
}

/** Only operational and degraded checks count toward uptime; an unconfigured provider is no outage. */
export const countsTowardUptime = (state: ComponentState) => state !== "not_configured";
