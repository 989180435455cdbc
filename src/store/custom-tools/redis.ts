/** Business accounts' own tools on Redis: one hash per account (`{acct}:custom-tools`, name → JSON). */
import type { TierName } from "../../accounts/tiers.js";
import { type RedisContext, redisKey } from "../redis-context.js";
import type { CustomToolRecord } from "../types.js";
import type { CustomToolStore } from "./index.js";

export function redisCustomTools({ redis, call, script }: RedisContext): CustomToolStore {
  return {
    async addCustomTool(tool: CustomToolRecord, cap: number): Promise<"added" | "exists" | "cap"> {
      return script<"added" | "exists" | "cap">(
        "custom-tool-add",
        [redisKey.customTools(tool.accountId)],
        [tool.name, JSON.stringify(tool), cap],
      );
    },

    async getCustomTool(accountId: string, name: string): Promise<CustomToolRecord | null> {
      const raw = await call(() => redis.hget(redisKey.customTools(accountId), name));
      return raw ? (JSON.parse(raw) as CustomToolRecord) : null;
    },

    async getCustomToolWithTier(
      accountId: string,
      name: string,
    ): Promise<{ tool: CustomToolRecord; tier: TierName | null } | null> {
      // Both keys are in the account's slot: one pipeline, one round trip (on a cluster too).
      const replies = await call(() =>
        redis
          .pipeline()
          .hget(redisKey.customTools(accountId), name)
          .hget(redisKey.account(accountId), "tier")
          .exec(),
      );
      const [[toolErr, raw], [tierErr, tier]] = replies as [
        [Error | null, string | null],
        [Error | null, string | null],
      ];
      if (toolErr || tierErr) throw toolErr ?? tierErr;
      return raw
        ? { tool: JSON.parse(raw) as CustomToolRecord, tier: (tier as TierName | null) ?? null }
        : null;
    },

    async listCustomTools(accountId: string): Promise<CustomToolRecord[]> {
      const all = await call(() => redis.hvals(redisKey.customTools(accountId)));
      return all
        .map((raw) => JSON.parse(raw) as CustomToolRecord)
        .sort((a, b) => a.createdAt - b.createdAt || a.name.localeCompare(b.name));
    },

    async deleteCustomTool(accountId: string, name: string): Promise<boolean> {
      return (await call(() => redis.hdel(redisKey.customTools(accountId), name))) === 1;
    },
  };
}
