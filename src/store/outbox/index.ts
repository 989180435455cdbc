import type { EventRecord } from "../../events/types.js";
/** Events: written with the change that causes them, delivered from the outbox, kept in a recent-events log. */
export interface Outbox {
  /** Events waiting for delivery, oldest first, and their acknowledgement once handed on. */
  appendEvents(accountId: string, events: EventRecord[]): Promise<void>;
  /** The oldest waiting events, validated (parseEventRecord) where they were read from outside the process. */
  readOutbox(accountId: string, limit: number): Promise<EventRecord[]>;
  /** `readOutbox` for several accounts, in their order, in one request (the relay's read). */
  readOutboxes(accountIds: string[], limit: number): Promise<EventRecord[][]>;
  ackOutbox(accountId: string, eventIds: string[]): Promise<void>;
  /**
   * The relay's last step for the events it has handed on, for each account: logs them (as
   * `logEvents`) and acknowledges them (as `ackOutbox`) in one step. An account stays indexed
   * while any event is still waiting, one appended meanwhile included. All accounts in one
   * request.
   */
  handOn(
    handed: { accountId: string; events: EventRecord[] }[],
    keep: number | null,
  ): Promise<void>;
  /** Accounts that may have undelivered events. */
  outboxAccounts(): Promise<string[]>;
  /**
   * The account's events (newest first), recorded as the relay hands them on: the last `keep` of
   * them, or with `keep` null every one until the books exporter has moved it to PostgreSQL.
   */
  logEvents(accountId: string, events: EventRecord[], keep: number | null): Promise<void>;
  listEvents(accountId: string, limit: number): Promise<EventRecord[]>;
  /** The log's oldest events, oldest first: what the books exporter moves next. */
  oldestLoggedEvents(accountId: string, limit: number): Promise<EventRecord[]>;
  /** Forgets these events from the log, once the books hold them. */
  forgetLoggedEvents(accountId: string, events: EventRecord[]): Promise<void>;
  /** Re-indexes outboxes a crashed process left unindexed (run at start-up); returns how many. */
  rebuildOutboxIndex(): Promise<number>;
}
