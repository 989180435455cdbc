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
  if (!cluster) return new Redis(url, options);
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
