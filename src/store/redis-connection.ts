import { Cluster, Redis, type RedisOptions } from "ioredis";

export type RedisConnection = Redis | Cluster;

/**
 * One Redis server, or (`cluster`) a Redis Cluster reached through one of its nodes given as
 * the URL: the client learns the other nodes and the slot map from it. The same options apply
 * to every node; every multi-key command and script the store sends stays inside one slot.
 */
export function connectRedis(
  url: string,
  cluster: boolean,
  options: RedisOptions,
): RedisConnection {
  if (!cluster) return closedOnRefusedDatabase(new Redis(url, options));
  const seed = new URL(url);
  const { keyPrefix, enableOfflineQueue: _, retryStrategy, ...nodeOptions } = options;
  return new Cluster([{ host: seed.hostname, port: Number(seed.port || 6379) }], {
    keyPrefix,
    // The cluster client's own start-up check is sent before its node connections are up: it
    // needs the offline queue. Callers that must fail fast check `status` themselves.
    enableOfflineQueue: true,
    ...(retryStrategy
      ? { clusterRetryStrategy: (attempt: number) => retryStrategy(attempt) ?? null }
      : {}),
    redisOptions: {
      ...nodeOptions,
      ...(seed.username ? { username: decodeURIComponent(seed.username) } : {}),
      ...(seed.password ? { password: decodeURIComponent(seed.password) } : {}),
      ...(seed.protocol === "rediss:" ? { tls: {} } : {}),
    },
  });
}

/** Why a connection was closed for good: the database REDIS_URL names could not be selected. */
const refusedDatabases = new WeakMap<RedisConnection, string>();

/** The reason `connection` was closed for its database (see closedOnRefusedDatabase), or null. */
export const refusedDatabase = (connection: RedisConnection): string | null =>
  refusedDatabases.get(connection) ?? null;

/**
 * When SELECT fails (a database number the server does not have, or a Cluster node), ioredis
 * reports the error and goes on, ready, on database 0: every command would then read and write
 * another database, perhaps someone else's. Such a connection is closed for good instead, before
 * it is ready (no command is sent), and says why (`refusedDatabase`): the store answers 503
 * with that reason, `/readyz` is 503, and a development start stops with it.
 */
function closedOnRefusedDatabase(redis: Redis): Redis {
  redis.on("error", (err: Error) => {
    if (!/^ERR (DB index is out of range|SELECT is not allowed)/.test(err.message)) return;
    refusedDatabases.set(
      redis,
      `REDIS_URL names database ${redis.options.db}, which this Redis cannot select (${err.message})`,
    );
    redis.disconnect();
  });
  return redis;
}

/**
 * `promise`, or a "Command timed out" rejection when it has not settled `ms` after it was sent.
 * The clock starts on the next tick, when the store's corked socket has written the command
 * (redis-context.ts, coalesceWrites): a command made just before CPU work leaves only after it,
 * and a clock started at the call had run out before Redis could answer. The verdict waits for the
 * event loop's next I/O poll (setImmediate): a process whose loop was held up by CPU work has its
 * timers fire before it reads the replies that arrived meanwhile, and ioredis's own
 * `commandTimeout` then fails commands Redis had answered in time (spurious 503s under load).
 */
/** The message of a command that `withinDeadline` gave up on. */
export const DEADLINE_PASSED = "Command timed out";

export function withinDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    process.nextTick(() => {
      if (settled) return;
      timer = setTimeout(() => setImmediate(() => reject(new Error(DEADLINE_PASSED))), ms);
    });
    promise.then(
      (value) => {
        settled = true;
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        settled = true;
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}
