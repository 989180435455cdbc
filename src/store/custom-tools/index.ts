import type { TierName } from "../../accounts/tiers.js";
import type { CustomToolRecord } from "../types.js";

/** Business accounts' own tools at HTTP endpoints. */
export interface CustomToolStore {
  /**
   * A Business account's own tools (src/tools/custom), one per name: `exists` when the account
   * already has one of that name, `cap` when it has `cap` tools; checked and added atomically.
   */
  addCustomTool(tool: CustomToolRecord, cap: number): Promise<"added" | "exists" | "cap">;
  getCustomTool(accountId: string, name: string): Promise<CustomToolRecord | null>;
  /**
   * The tool with its owner's tier, read together (one round trip): a call must know the account
   * is still on a tier with custom endpoints. `tier` is null when the account does not exist.
   */
  getCustomToolWithTier(
    accountId: string,
    name: string,
  ): Promise<{ tool: CustomToolRecord; tier: TierName | null } | null>;
  /** Oldest first. */
  listCustomTools(accountId: string): Promise<CustomToolRecord[]>;
  deleteCustomTool(accountId: string, name: string): Promise<boolean>;
}
