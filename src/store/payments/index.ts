import type { PaymentRecord } from "../types.js";

/** x402 payments from claim to settlement, and the relayers' nonce sequences. */
export interface PaymentStore {
  /**
   * x402 authorizations, one record per (chain, token, payer, nonce): the first caller claims it
   * (null), anyone after gets the record as it stands — so one authorization is settled and
   * credited at most once, across every process. With `callKeptMs`, the payment is also the one
   * of its call (`record.call.key` in its account) for that long: a claim for the same call under
   * another authorization gets the record of the payment the call has (another id), while that
   * record lasts — so one call under a key the client chose is paid once.
   */
  claimPayment(record: PaymentRecord, callKeptMs?: number): Promise<PaymentRecord | null>;
  savePayment(record: PaymentRecord): Promise<void>;
  /**
   * Replaces a payment's record with `next` only if it is still exactly `read` (as read from
   * `openPayments`): of the processes taking over one abandoned settlement, one wins.
   */
  takeOverPayment(read: PaymentRecord, next: PaymentRecord): Promise<boolean>;
  getPayment(id: string): Promise<PaymentRecord | null>;
  /** Forgets a claim whose payment failed before anything moved, so it can be tried again. */
  releasePayment(id: string): Promise<void>;
  /** Claims the one thing a settled payment pays for (kept until `expiresAt`); false when it was already served. */
  claimPaymentService(id: string, expiresAt: number): Promise<boolean>;
  /** Payments not yet settled: pending ones, and those still (or, if their process died, forever) settling. */
  openPayments(): Promise<PaymentRecord[]>;
  /**
   * A relayer's nonce sequence, shared by every process: the next nonce, handed out once. A
   * sequence that does not exist yet starts at `start` (the chain's count); without one, null.
   */
  takeRelayerNonce(name: string, start: number | null): Promise<number | null>;
  /** The nonce a relayer's sequence would hand out next (null: no sequence yet), changing nothing. */
  peekRelayerNonce(name: string): Promise<number | null>;
  /** Moves a relayer's sequence forward to `next` (a resync with the chain), never back; the sequence after. */
  raiseRelayerNonce(name: string, next: number): Promise<number>;
  /**
   * Hands `nonce` back to a relayer's sequence (the node refused its transaction: it was never
   * sent) when it is still the last nonce handed out; false when a later one was taken since.
   */
  giveBackRelayerNonce(name: string, nonce: number): Promise<boolean>;
}
