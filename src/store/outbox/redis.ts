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
  together,
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
   * Acknowledges each account's `eventIds` (logging `logged` in the same step), all accounts in
   * one request (`together`). Each is unindexed first and re-indexed after if anything is still
   * waiting: an event appended meanwhile is counted by the script or indexes itself after it.
   */
  const settleOutboxes = async (
    acks: { accountId: string; eventIds: string[]; logged: EventRecord[] }[],
    keep: number | null,
  ) => {
    if (acks.length === 0) return;
    const index = redisKey.outboxAccounts();
    let waiting: unknown[];
    try {
      [, waiting] = (await together(
        acks.map(
          ({ accountId }) =>
            ({ on }) =>
              on.srem(index, accountId),
        ),
        acks.map(
          ({ accountId, eventIds, logged }) =>
            ({ script }) =>
              script("outbox-ack", ...ackArgs(accountId, logged, keep, eventIds)),
        ),
      )) as [unknown[], unknown[]];
    } catch (err) {
      // Nothing known to be acknowledged: the events stay waiting, so the index must say so again.
      const all = acks.map((a) => a.accountId);
      await call(() => redis.sadd(index, ...all)).catch(() => undefined);
      throw err;
    }
    const still = acks.filter((_, i) => Number(waiting[i]) > 0).map((a) => a.accountId);
    if (still.length > 0) await call(() => redis.sadd(index, ...still));
  };

  /** The oldest `limit` events waiting in each account's outbox, all read in one request. */
  const readOutboxes = async (accountIds: string[], limit: number) => {
    const [rows] = (await together(
      accountIds.map(
        (id) =>
          ({ on }) =>
            on.xrange(redisKey.outbox(id), "-", "+", "COUNT", limit),
      ),
    )) as [[string, string[]][][]];
    return rows.map((entries) => entries.map(([, fields]) => eventOf(fields)));
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
      return (await readOutboxes([accountId], limit))[0]!;
    },

    readOutboxes,

    async ackOutbox(accountId: string, eventIds: string[]): Promise<void> {
      await settleOutboxes([{ accountId, eventIds, logged: [] }], null);
    },

    async handOn(handed, keep): Promise<void> {
      await settleOutboxes(
        handed.map(({ accountId, events }) => ({
          accountId,
          eventIds: events.map((e) => e.id),
          logged: events,
        })),
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

/** An outbox entry's fields (a stream entry's name/value list), validated. */
function eventOf(fields: string[]): EventRecord {
  const f: Record<string, string> = {};
  for (let i = 0; i < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
  return parseEventRecord({
    id: f.id,
    event: f.event,
    timestamp: f.timestamp,
    account_id: f.account_id,
    data: JSON.parse(f.data ?? "{}"),
  });
}

/** An event log's members: each record under its time (several relays logging one event add it once). */
const logMembers = (events: EventRecord[]) =>
  events.flatMap((e) => [Date.parse(e.timestamp), JSON.stringify(e)]);
