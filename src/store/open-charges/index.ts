/**
 * Charged calls still open (admitted, not yet kept or refunded) in a gateway process, as Redis
 * sees them, so that the calls of a process that died can be refunded by the survivors
 * (src/credits/open-charges.ts). Every process beats a heartbeat; its calls that have been open
 * a while are written under its id; a call is closed by the process (its charge kept or refunded)
 * or taken by a survivor once the process has been silent long enough, never both: close and take
 * are each one atomic step, and only one of them finds the call.
 */
export interface OpenCharge {
  accountId: string;
  requestId: string;
  idempotencyKey: string | null;
  tool: string;
  keyHash: string | null;
  /** Until when a refund is right (ms): for a call under an Idempotency-Key, until a retry may take its debit over. */
  refundUntil: number;
}

export interface OpenChargeStore {
  /** This process is alive at `at` (ms). */
  heartbeat(processId: string, at: number): Promise<void>;
  /** This process's calls that have been open a while (the fast ones end before they are written). */
  markOpen(processId: string, charges: OpenCharge[]): Promise<void>;
  /** Ends a call written by markOpen: "closed" by this process, or "taken" already by a survivor (and refunded). */
  closeOpen(processId: string, requestId: string): Promise<"closed" | "taken">;
  /** The processes whose last heartbeat is older than `before` (ms). */
  silentProcesses(before: number): Promise<string[]>;
  /**
   * Takes a silent process's open calls that may still be refunded at `now` (each once, across
   * every survivor), forgets the others, and forgets the process.
   */
  takeOpen(processId: string, now: number): Promise<OpenCharge[]>;
  /** A process stopping cleanly: nothing of it is left to take. */
  leave(processId: string): Promise<void>;
}
