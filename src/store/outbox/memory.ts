/** Events in memory: each account's outbox is an array on the account; the recent-events log is kept here. */
import type { EventRecord } from "../../events/types.js";
import type { MemoryState } from "../memory-state.js";
import type { Outbox } from "./index.js";

export function memoryOutbox(state: MemoryState): Outbox {
  const eventLogs = new Map<string, EventRecord[]>();
  return {
    async appendEvents(accountId: string, events: EventRecord[]) {
      state.accounts.get(accountId)?.outbox.push(...events);
    },

    async readOutbox(accountId: string, limit: number) {
      return (state.accounts.get(accountId)?.outbox ?? []).slice(0, limit);
    },

    async ackOutbox(accountId: string, eventIds: string[]) {
      const a = state.accounts.get(accountId);
      if (a) a.outbox = a.outbox.filter((e) => !eventIds.includes(e.id));
    },

    async outboxAccounts() {
      return [...state.accounts.values()].filter((a) => a.outbox.length > 0).map((a) => a.id);
    },

    async logEvents(accountId: string, events: EventRecord[], keep: number) {
      const logged = eventLogs.get(accountId) ?? [];
      const fresh = events.filter((e) => !logged.some((l) => l.id === e.id));
      eventLogs.set(accountId, [...fresh.reverse(), ...logged].slice(0, keep));
    },

    async listEvents(accountId: string, limit: number) {
      return (eventLogs.get(accountId) ?? []).slice(0, limit);
    },

    async rebuildOutboxIndex() {
      return 0; // the memory store derives its index; nothing can be left unindexed
    },
  };
}
