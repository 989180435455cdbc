import { readFileSync } from "node:fs";
import { connectRedis, type RedisConnection, withinDeadline } from "../store/redis-connection.js";
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
 */
const DAY_TTL_SECONDS = (UPTIME_DAYS + 1) * 86_400;
const INCIDENTS_KEPT = 200;
const OPEN_INCIDENTS = "{status}:incidents:open";
const COMMAND_DEADLINE_MS = 2000;
/** Each failed attempt means another change landed; this many in a row is not contention but a fault. */
const CHANGE_ATTEMPTS = 50;
const COMPARE_AND_SET = readFileSync(
  new URL("../credits/lua/compare-and-set.lua", import.meta.url),
  "utf8",
);

export function createRedisStatusStore(options: {
  url: string;
  keyPrefix: string;
  cluster: boolean;
}): StatusStore {
  const redis: RedisConnection = connectRedis(options.url, options.cluster, {
    keyPrefix: options.keyPrefix,
    maxRetriesPerRequest: 1,
    lazyConnect: false,
  });
  // The same deadline as the account store's (see withinDeadline): a busy process must not report
  // Redis as down because its timers fired before it read replies that came in time.
  const timely = <T>(command: Promise<T>) => withinDeadline(command, COMMAND_DEADLINE_MS);
  // A status check must never take the process down: errors surface as rejected commands.
  redis.on("error", () => {});
  const dayKey = (day: string) => `{status}:day:${day}`;
  const incidentKey = (id: string) => `{status}:incident:${id}`;
  redis.defineCommand("statusCompareAndSet", { numberOfKeys: 1, lua: COMPARE_AND_SET });
  const compareAndSet = (key: string, read: string, write: string): Promise<number> =>
    (
      redis as unknown as {
        statusCompareAndSet(key: string, read: string, write: string): Promise<number>;
      }
    ).statusCompareAndSet(key, read, write);
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
      await timely(batch.exec());
    },
    async latest() {
      const all = await timely(redis.hgetall("{status}:latest"));
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
      const replies = (await timely(batch.exec())) ?? [];
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
    async saveIncident(incident) {
      await timely(
        redis
          .multi()
          .set(incidentKey(incident.id), JSON.stringify(incident))
          .zadd("{status}:incidents", incident.createdAt, incident.id)
          .sadd(OPEN_INCIDENTS, incident.id)
          .exec(),
      );
    },
    async changeIncident(id, change) {
      // Optimistic: read, change in JavaScript, write only if nothing changed it meanwhile
      // (compare-and-set.lua), else again from a fresh read. WATCH would not do: the connection is
      // shared by every request of the process, and a WATCH holds for the whole connection.
      for (let attempt = 0; attempt < CHANGE_ATTEMPTS; attempt++) {
        const raw = await timely(redis.get(incidentKey(id)));
        if (raw === null) return null;
        const changed = change(JSON.parse(raw) as Incident);
        if (!changed) return { incident: JSON.parse(raw) as Incident, changed: false };
        const written = JSON.stringify(changed);
        if ((await timely(compareAndSet(incidentKey(id), raw, written))) === 1) {
          // Best effort: the incident is resolved already, and a stale id is dropped when read.
          if (changed.resolvedAt) await timely(redis.srem(OPEN_INCIDENTS, id)).catch(() => {});
          return { incident: changed, changed: true };
        }
      }
      throw new Error(`incident ${id}: changed by others ${CHANGE_ATTEMPTS} times in a row`);
    },
    async getIncident(id) {
      const json = await timely(redis.get(incidentKey(id)));
      return json ? (JSON.parse(json) as Incident) : null;
    },
    async listIncidents(limit) {
      const ids = await timely(
        redis.zrevrange("{status}:incidents", 0, Math.min(limit, INCIDENTS_KEPT) - 1),
      );
      if (ids.length === 0) return [];
      const jsons = await timely(redis.mget(...ids.map(incidentKey)));
      return jsons.filter((j): j is string => j !== null).map((j) => JSON.parse(j) as Incident);
    },
    async openIncidents() {
      const ids = await timely(redis.smembers(OPEN_INCIDENTS));
      if (ids.length === 0) return [];
      const jsons = await timely(redis.mget(...ids.map(incidentKey)));
      const open: Incident[] = [];
      const stale: string[] = [];
      jsons.forEach((json, i) => {
        const incident = json === null ? null : (JSON.parse(json) as Incident);
        if (incident && !incident.resolvedAt) open.push(incident);
        else stale.push(ids[i]!);
      });
      if (stale.length > 0) await timely(redis.srem(OPEN_INCIDENTS, ...stale)).catch(() => {});
      return open;
    },
    async close() {
      redis.disconnect();
    },
  };
}
