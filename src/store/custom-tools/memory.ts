/** Business accounts' own tools in memory: a map of tools per account. */
import type { MemoryState } from "../memory-state.js";
import type { CustomToolRecord } from "../types.js";
import type { CustomToolStore } from "./index.js";

export function memoryCustomTools(state: MemoryState): CustomToolStore {
  const customTools = new Map<string, Map<string, CustomToolRecord>>();
  function customToolsOf(accountId: string) {
    const tools = customTools.get(accountId) ?? new Map<string, CustomToolRecord>();
    customTools.set(accountId, tools);
    return tools;
  }

  const customToolStore: CustomToolStore = {
    async addCustomTool(tool: CustomToolRecord, cap: number) {
      const tools = customToolsOf(tool.accountId);
      if (tools.has(tool.name)) return "exists" as const;
      if (tools.size >= cap) return "cap" as const;
      tools.set(tool.name, structuredClone(tool));
      return "added" as const;
    },

    async getCustomTool(accountId: string, name: string) {
      // Read without creating: lookups come with any account id a caller's key names.
      const tool = customTools.get(accountId)?.get(name);
      return tool ? structuredClone(tool) : null;
    },

    async getCustomToolWithTier(accountId: string, name: string) {
      const tool = await customToolStore.getCustomTool(accountId, name);
      return tool ? { tool, tier: state.accounts.get(accountId)?.tier ?? null } : null;
    },

    async listCustomTools(accountId: string) {
      return [...(customTools.get(accountId)?.values() ?? [])]
        .map((t) => structuredClone(t))
        .sort((a, b) => a.createdAt - b.createdAt || a.name.localeCompare(b.name));
    },

    async deleteCustomTool(accountId: string, name: string) {
      return customTools.get(accountId)?.delete(name) ?? false;
    },
  };
  return customToolStore;
}
