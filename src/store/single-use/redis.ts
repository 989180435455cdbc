/** Single-use values, first-writer-wins settings and leases on Redis: plain keys with SET NX / PX. */
import { newEventId } from "../../lib/ids.js";
import { type RedisContext, redisKey } from "../redis-context.js";
import type { SingleUseStore } from "./index.js";

export function redisSingleUse({ redis, call, script }: RedisContext): SingleUseStore {
  return {
    async saveNonce(name: string, ttlMs: number): Promise<void> {
      await call(() => redis.set(`nonce:${name}`, "1", "PX", ttlMs));
    },

    async consumeNonce(name: string): Promise<boolean> {
      return (await call(() => redis.del(`nonce:${name}`))) === 1;
    },

    async saveOnce(name: string, value: string, ttlMs: number): Promise<void> {
      await call(() => redis.set(redisKey.once(name), value, "PX", ttlMs));
    },

    async takeOnce(name: string): Promise<string | null> {
      // GET and DEL in one transaction: of two readers racing, one gets the value, the other null.
      const replies = await call(() =>
        redis.multi().get(redisKey.once(name)).del(redisKey.once(name)).exec(),
      );
      const value = replies?.[0]?.[1];
      return typeof value === "string" ? value : null;
    },

    async keepFirst(name: string, candidate: string): Promise<string> {
      // One transaction: SET NX, then read whichever value won.
      const replies = await call(() =>
        redis
          .multi()
          .set(redisKey.setting(name), candidate, "NX")
          .get(redisKey.setting(name))
          .exec(),
      );
      const value = replies?.[1]?.[1];
      if (typeof value !== "string") throw new Error(`could not keep the setting ${name}`);
      return value;
    },

    async acquireLock(name: string, ttlMs: number): Promise<string | null> {
      const token = newEventId();
      return (await call(() => redis.set(`lock:${name}`, token, "PX", ttlMs, "NX"))) === "OK"
        ? token
        : null;
    },

    async releaseLock(name: string, token: string): Promise<void> {
      await script("release-lock", [`lock:${name}`], [token]);
    },
  };
}
