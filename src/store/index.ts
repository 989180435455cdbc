import { PERIOD_MS, TIERS, TIER_NAMES } from "../accounts/tiers.js";
import type { Config } from "../config.js";
import { createMemoryStore } from "./memory.js";
import { createRedisStore } from "./redis.js";
import type { Store, TierLimits } from "./types.js";

export function tierLimits(): TierLimits {
  return Object.fromEntries(
    TIER_NAMES.map((name) => [
      name,
      {
        requestsPerMinute: TIERS[name].requestsPerMinute,
        monthlyAllowance: name === "free" ? (TIERS.free.monthlyCredits ?? 0) : 0,
        rank: TIER_NAMES.indexOf(name),
        priceCents: Math.round(Number(TIERS[name].priceUsdPerMonth ?? 0) * 100),
        countsMessages: TIERS[name].features.includes("mcp"),
      },
    ]),
  );
}

/** `REDIS_URL` set: the shared Redis store; otherwise the in-memory one (development). */
export function createStore(
  config: Pick<Config, "redisUrl" | "redisKeyPrefix" | "redisCluster">,
): Store {
  if (config.redisUrl)
    return createRedisStore({
      url: config.redisUrl,
      keyPrefix: config.redisKeyPrefix,
      cluster: config.redisCluster,
      tiers: tierLimits(),
      periodMs: PERIOD_MS,
    });
  return createMemoryStore({ tiers: tierLimits(), periodMs: PERIOD_MS });
}
