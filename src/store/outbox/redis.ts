/**
 * Events on Redis: each account's outbox is a stream (`{acct}:outbox`) the credit scripts append
 * to in the same step as the change; `outbox:accounts` indexes the accounts with events waiting
 * (outside any account slot, so it is written beside the scripts); the recent-events log is a
 * sorted set per account.
 */
import { Cluster } from "ioredis";
import { type EventRecord, parseEventRecord } from "../../events/types.js";
import { type RedisContext, redisKey } from "../redis-context.js";
import type { Outbox } from "./index.js";

export function redisOutbox({
  redis,
  call,
  script,
  scriptWithIndexes,
  markOutbox,
  options,
}: RedisContext): Outbox {
  /**
   * The one script that writes an account's event log (outbox-ack.lua): logs `logged` (the last
   * `keep` of the log kept) and removes the events `eventIds` from its outbox; answers how many
   * events are still waiting there.
   */
  const ackArgs = (
    accountId: string,
    logged: EventRecord[],
    keep: number | null,
    eventIds: string[],
  ): [string[], (string | number)[]] => [
    [redisKey.outbox(accountId), redisKey.events(accountId)],
    [keep ?? "", logged.length, ...logMembers(logged), ...eventIds],
  ];
  const logAndAck = (...args: Parameters<typeof ackArgs>) =>
    script<number>("outbox-ack", ...ackArgs(...args));

  /**
   * Acknowledges `eventIds` (logging `logged` in the same step). Unindexed first, re-indexed after
   * if anything is still waiting: an event appended meanwhile is counted by the script or indexes
   * itself after it.
   */
  const settleOutbox = async (
    accountId: string,
    eventIds: string[],
    logged: EventRecord[],
    keep: number | null,
  ) => {
    const index = redisKey.outboxAccounts();
    let waiting: number;
    try {
      // Unindexed, then acknowledged: one round trip on one Redis node.
      waiting = await scriptWithIndexes<number>(
        "outbox-ack",
        ...ackArgs(accountId, logged, keep, eventIds),
        { before: (writes) => writes.unindexOutbox(accountId) },
      );
    } catch (err) {
      // Nothing was acknowledged: the events stay waiting, so the index must say so again.
      await call(() => redis.sadd(index, accountId)).catch(() => undefined);
      throw err;
    }
    if (waiting > 0) await call(() => redis.sadd(index, accountId));
  };

  return {
    async appendEvents(accountId: string, events: EventRecord[]): Promise<void> {
      if (events.length === 0) return;
      const tx = redis.multi();
      for (const e of events) {
        tx.xadd(
          redisKey.outbox(accountId),
          "*",
          "id",
          e.id,
          "event",
          e.event,
          "timestamp",
          e.timestamp,
          "account_id",
          e.account_id,
          "data",
          JSON.stringify(e.data),
        );
      }
      await call(() => tx.exec());
      await markOutbox(accountId, events);
    },

    async readOutbox(accountId: string, limit: number): Promise<EventRecord[]> {
      const rows = await call(() =>
        redis.xrange(redisKey.outbox(accountId), "-", "+", "COUNT", limit),
      );
      return rows.map(([, fields]) => {
        const f: Record<string, string> = {};
        for (let i = 0; i < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
        return parseEventRecord({
          id: f.id,
          event: f.event,
          timestamp: f.timestamp,
          account_id: f.account_id,
          data: JSON.parse(f.data ?? "{}"),
        });
      });
    },

    async ackOutbox(accountId: string, eventIds: string[]): Promise<void> {
      await settleOutbox(accountId, eventIds, [], null);
    },

    async handOn(accountId: string, events: EventRecord[], keep: number | null): Promise<void> {
      await settleOutbox(
        accountId,
        events.map((e) => e.id),
        events,
        keep,
      );
    },

    async outboxAccounts(): Promise<string[]> {
      return call(() => redis.smembers(redisKey.outboxAccounts()));
    },

    async logEvents(accountId: string, events: EventRecord[], keep: number | null): Promise<void> {
      if (events.length > 0) await logAndAck(accountId, events, keep, []);
    },

    async oldestLoggedEvents(accountId: string, limit: number): Promise<EventRecord[]> {
      return (
        await call(() => redis.zrange(redisKey.events(accountId), "0", String(limit - 1)))
      ).map((raw) => parseEventRecord(JSON.parse(raw)));
    },

    async forgetLoggedEvents(accountId: string, events: EventRecord[]): Promise<void> {
      if (events.length === 0) return;
      // By id among the members of the batch's time range: a member is removed only if it is one
      // of these events (a relay may have logged others meanwhile, with the same times).
      const ids = new Set(events.map((e) => e.id));
      const times = events.map((e) => Date.parse(e.timestamp));
      const key = redisKey.events(accountId);
      const members = await call(() =>
        redis.zrangebyscore(key, Math.min(...times), Math.max(...times)),
      );
      const gone = members.filter((raw) => ids.has((JSON.parse(raw) as { id: string }).id));
      if (gone.length > 0) await call(() => redis.zrem(key, ...gone));
    },

    async listEvents(accountId: string, limit: number): Promise<EventRecord[]> {
      return (await call(() => redis.zrevrange(redisKey.events(accountId), 0, limit - 1))).map(
        (raw) => parseEventRecord(JSON.parse(raw)),
      );
    },

    async rebuildOutboxIndex(): Promise<number> {
      const prefix = options.keyPrefix;
      // SCAN walks one server: on a cluster, every master holds its share of the accounts.
      const servers = redis instanceof Cluster ? redis.nodes("master") : [redis];
      let found = 0;
      for (const server of servers) {
        let cursor = "0";
        do {
          // SCAN patterns are not prefixed by ioredis: match the full key.
          const [next, keys] = await call(() =>
            server.scan(cursor, "MATCH", `${prefix}{acct_*}:outbox`, "COUNT", 1000),
          );
          cursor = next;
          for (const key of keys) {
            const accountId = key.slice(prefix.length + 1, key.indexOf("}"));
            if ((await call(() => redis.xlen(redisKey.outbox(accountId)))) > 0) {
              await call(() => redis.sadd(redisKey.outboxAccounts(), accountId));
              found++;
            }
          }
        } while (cursor !== "0");
      }
      return found;
    },
  };
}

/** An event log's members: each record under its time (several relays logging one event add it once). */
const logMembers = (events: EventRecord[]) =>
  events.flatMap((e) => [Date.parse(e.timestamp), JSON.stringify(e)]);
