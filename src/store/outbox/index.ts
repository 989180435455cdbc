import type { EventRecord } from "../../events/types.js";
/** Events: written with the change that causes them, delivered from the outbox, kept in a recent-events log. */
export interface Outbox {
  /** Events waiting for delivery, oldest first, and their acknowledgement once handed on. */
  appendEvents(accountId: string, events: EventRecord[]): Promise<void>;
  readOutbox(accountId: string, limit: number): Promise<EventRecord[]>;
  ackOutbox(accountId: string, eventIds: string[]): Promise<void>;
  /** Accounts that may have undelivered events. */
  outboxAccounts(): Promise<string[]>;
  /** The account's recent events (newest first), recorded as the relay hands them on. */
  logEvents(accountId: string, events: EventRecord[], keep: number): Promise<void>;
  listEvents(accountId: string, limit: number): Promise<EventRecord[]>;
  /** Re-indexes outboxes a crashed process left unindexed (run at start-up); returns how many. */
  rebuildOutboxIndex(): Promise<number>;
}
