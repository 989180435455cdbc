import { openRedisClient } from "../store/redis-context.js";
import {
  UPTIME_DAYS,
  countsTowardUptime,
  utcDay,
  type CheckResult,
  type DayCount,
  type Incident,
  type StatusStore,
} from "./store.js";

/**
 * The status store in Redis, shared by every gateway process: each process records its own
 * checks, so uptime counts every process's view. Every key carries the `{status}` hash tag, so
 * the multi-key pipeline below stays in one Redis Cluster slot.
 *
 *   {status}:latest            hash component -> JSON CheckResult
 *   {status}:day:<YYYY-MM-DD>  hash "<component>|ok" / "<component>|total" -> count (kept 91 days)
 *   {status}:incidents         sorted set id by creation time; {status}:incident:<id> -> JSON
 *   {status}:incidents:open    set of the ids of unresolved incidents (a resolved id left in it by
 *                              a crash between the two writes is dropped when next read)
 *   {status}:incident-key:<h>  the id of the incident an opening's Idempotency-Key (hashed) opened,
 *                              kept IDEMPOTENCY_TTL_SECONDS
 */
const DAY_TTL_SECONDS = (UPTIME_DAYS + 1) * 86_400;
const INCIDENTS_KEPT = 200;
const OPEN_INCIDENTS = "{status}:incidents:open";
/** Each failed attempt means another change landed; this many in a row is not contention but a fault. */
const CHANGE_ATTEMPTS = 50;
export function createRedisStatusStore(options: {
  url: string;
  keyPrefix: string;
  cluster: boolean;
}): StatusStore {
  // A connection of its own, sent on as the store's is (redis-context.ts): each command has the
  // same deadline, and a lost, refused or unanswering Redis is StoreUnavailableError, so the
  // incident routes answer 503 store_unavailable, not 500, and fail fast while Redis is away.
  const { redis, call, script } = openRedisClient(options);
  const dayKey = (day: string) => `{status}:day:${day}`;
  const incidentKey = (id: string) => `{status}:incident:${id}`;
  const openedByKey = (idempotencyKey: string) => `{status}:incident-key:${idempotencyKey}`;
  const compareAndSet = (key: string, read: string, write: string): Promise<number> =>
    script<number>("compare-and-set", [key], [read, write]);
  return {
    async record(results) {
      const batch = redis.multi();
      for (const result of results) {
        batch.hset("{status}:latest", result.component, JSON.stringify(result));
        if (!countsTowardUptime(result.state)) continue;
        const key = dayKey(utcDay(result.checkedAt));
        batch.hincrby(key, `${result.component}|total`, 1);
        if (result.state === "operational") batch.hincrby(key, `${result.component}|ok`, 1);
        batch.expire(key, DAY_TTL_SECONDS);
      }
      await call(() => batch.exec());
    },
    async latest() {
      const all = await call(() => redis.hgetall("{status}:latest"));
      return new Map(
        Object.entries(all).map(([component, json]) => [
          component,
          JSON.parse(json) as CheckResult,
        ]),
      );
    },
    async dayCounts(days) {
      const batch = redis.multi();
      for (const day of days) batch.hgetall(dayKey(day));
      const replies = (await call(() => batch.exec())) ?? [];
      const out = new Map<string, DayCount[]>();
      replies.forEach(([err, fields], i) => {
        if (err) throw err;
        const counts = new Map<string, DayCount>();
        for (const [field, value] of Object.entries(fields as Record<string, string>)) {
          const [component, kind] = field.split("|") as [string, "ok" | "total"];
          const entry = counts.get(component) ?? { day: days[i]!, ok: 0, total: 0 };
          entry[kind] = Number(value);
          counts.set(component, entry);
        }
        for (const [component, entry] of counts)
          out.set(component, [...(out.get(component) ?? []), entry]);
      });
      return out;
    },
    async saveIncident(incident, idempotency) {
      const keptId = await script<string | null>(
        "incident-open",
        [
          incidentKey(incident.id),
          "{status}:incidents",
          OPEN_INCIDENTS,
          openedByKey(idempotency?.key ?? ""),
        ],
        [JSON.stringify(incident), incident.createdAt, incident.id, idempotency?.ttlSeconds ?? 0],
      );
      if (keptId === null) return null;
      // Read after the script, not in it: a script may only touch the keys it is given. An
      // incident is never deleted, so the one the key opened is there.
      const kept = await call(() => redis.get(incidentKey(keptId)));
      if (kept === null)
        throw new Error(`incident ${keptId}, opened by an Idempotency-Key, is missing`);
      return JSON.parse(kept) as Incident;
    },
    async changeIncident(id, change) {
      // Optimistic: read, change in JavaScript, write only if nothing changed it meanwhile
      // (compare-and-set.lua), else again from a fresh read. WATCH would not do: the connection is
      // shared by every request of the process, and a WATCH holds for the whole connection.
      for (let attempt = 0; attempt < CHANGE_ATTEMPTS; attempt++) {
        const raw = await call(() => redis.get(incidentKey(id)));
        if (raw === null) return null;
        const changed = change(JSON.parse(raw) as Incident);
        if (!changed) return { incident: JSON.parse(raw) as Incident, changed: false };
        const written = JSON.stringify(changed);
        if ((await compareAndSet(incidentKey(id), raw, written)) === 1) {
          // Best effort: the incident is resolved already, and a stale id is dropped when read.
          if (changed.resolvedAt) await call(() => redis.srem(OPEN_INCIDENTS, id)).catch(() => {});
          return { incident: changed, changed: true };
        }
      }
      throw new Error(`incident ${id}: changed by others ${CHANGE_ATTEMPTS} times in a row`);
    },
    async getIncident(id) {
      const json = await call(() => redis.get(incidentKey(id)));
      return json ? (JSON.parse(json) as Incident) : null;
    },
    async listIncidents(limit) {
      const ids = await call(() =>
        redis.zrevrange("{status}:incidents", 0, Math.min(limit, INCIDENTS_KEPT) - 1),
      );
      if (ids.length === 0) return [];
      const jsons = await call(() => redis.mget(...ids.map(incidentKey)));
      return jsons.filter((j): j is string => j !== null).map((j) => JSON.parse(j) as Incident);
    },
    async openIncidents() {
      const ids = await call(() => redis.smembers(OPEN_INCIDENTS));
      if (ids.length === 0) return [];
      const jsons = await call(() => redis.mget(...ids.map(incidentKey)));
      const open: Incident[] = [];
      const stale: string[] = [];
      jsons.forEach((json, i) => {
        const incident = json === null ? null : (JSON.parse(json) as Incident);
        if (incident && !incident.resolvedAt) open.push(incident);
        else stale.push(ids[i]!);
      });
      if (stale.length > 0) await call(() => redis.srem(OPEN_INCIDENTS, ...stale)).catch(() => {});
      return open;
    },
    async close() {
      redis.disconnect();
    },
  };
}
