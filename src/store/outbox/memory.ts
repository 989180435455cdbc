/** Events in memory: each account's outbox is an array on the account; the events log is in the shared state. */
import type { EventRecord } from "../../events/types.js";
import type { MemoryState } from "../memory-state.js";
import type { Outbox } from "./index.js";

export function memoryOutbox(state: MemoryState): Outbox {
  const { eventLogs } = state;
  const outbox: Outbox = {
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

    async readOutboxes(accountIds: string[], limit: number) {
      return Promise.all(accountIds.map((id) => outbox.readOutbox(id, limit)));
    },

    async handOn(handed, keep) {
      for (const { accountId, events } of handed) {
        await outbox.logEvents(accountId, events, keep);
        await outbox.ackOutbox(
          accountId,
          events.map((e) => e.id),
        );
      }
    },

    async outboxAccounts() {
      return [...state.accounts.values()].filter((a) => a.outbox.length > 0).map((a) => a.id);
    },

    async logEvents(accountId: string, events: EventRecord[], keep: number | null) {
      const logged = eventLogs.get(accountId) ?? [];
      const fresh = events.filter((e) => !logged.some((l) => l.id === e.id));
      const all = [...fresh.reverse(), ...logged];
      eventLogs.set(accountId, keep === null ? all : all.slice(0, keep));
    },

    async oldestLoggedEvents(accountId: string, limit: number) {
      return (eventLogs.get(accountId) ?? []).slice(-limit).reverse();
    },

    async forgetLoggedEvents(accountId: string, events: EventRecord[]) {
      const ids = new Set(events.map((e) => e.id));
      const logged = eventLogs.get(accountId);
      if (logged)
        eventLogs.set(
          accountId,
          logged.filter((e) => !ids.has(e.id)),
        );
    },

    async listEvents(accountId: string, limit: number) {
      return (eventLogs.get(accountId) ?? []).slice(0, limit);
    },

    async rebuildOutboxIndex() {
      return 0; // the memory store derives its index; nothing can be left unindexed
    },
  };
  return outbox;
}
