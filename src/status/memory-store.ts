import {
  countsTowardUptime,
  utcDay,
  type CheckResult,
  type DayCount,
  type Incident,
  type StatusStore,
} from "./store.js";

/** The embedded mode's status store: one process, nothing kept across restarts. */
export function createMemoryStatusStore(): StatusStore {
  const latest = new Map<string, CheckResult>();
  const days = new Map<string, Map<string, { ok: number; total: number }>>(); // day -> component -> counts
  const incidents = new Map<string, Incident>();
  // An opening's Idempotency-Key (hashed) -> the incident it opened, until when. Few: the
  // operator's keyed openings.
  const openedByKey = new Map<string, { id: string; until: number }>();
  return {
    async record(results) {
      for (const result of results) {
        latest.set(result.component, result);
        if (!countsTowardUptime(result.state)) continue;
        const day = utcDay(result.checkedAt);
        const byComponent = days.get(day) ?? new Map();
        days.set(day, byComponent);
        const counts = byComponent.get(result.component) ?? { ok: 0, total: 0 };
        counts.total++;
        if (result.state === "operational") counts.ok++;
        byComponent.set(result.component, counts);
      }
    },
    async latest() {
      return new Map(latest);
    },
    async dayCounts(wanted) {
      const out = new Map<string, DayCount[]>();
      for (const day of wanted) {
        for (const [component, counts] of days.get(day) ?? [])
          out.set(component, [...(out.get(component) ?? []), { day, ...counts }]);
      }
      return out;
    },
    async saveIncident(incident, idempotency) {
      const opened = idempotency ? openedByKey.get(idempotency.key) : undefined;
      const kept = opened && opened.until > Date.now() ? incidents.get(opened.id) : undefined;
      if (kept) return structuredClone(kept);
      incidents.set(incident.id, structuredClone(incident));
      if (idempotency)
        openedByKey.set(idempotency.key, {
          id: incident.id,
          until: Date.now() + idempotency.ttlSeconds * 1000,
        });
      return null;
    },
    async changeIncident(id, change) {
      // No await between the read and the write: racing changes run one after the other.
      const incident = incidents.get(id);
      if (!incident) return null;
      const changed = change(structuredClone(incident));
      if (changed) incidents.set(id, structuredClone(changed));
      return { incident: structuredClone(changed ?? incident), changed: changed !== null };
    },
    async getIncident(id) {
      const incident = incidents.get(id);
      return incident ? structuredClone(incident) : null;
    },
    async listIncidents(limit) {
      return [...incidents.values()]
        .sort((a, b) => b.createdAt - a.createdAt)
        .slice(0, limit)
        .map((i) => structuredClone(i));
    },
    async openIncidents() {
      return [...incidents.values()].filter((i) => !i.resolvedAt).map((i) => structuredClone(i));
    },
    async close() {},
  };
}
