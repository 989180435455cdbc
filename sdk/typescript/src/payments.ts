/**
 * Paying calls with x402 from a wallet, with the official clients (@x402/fetch's x402Client and
 * x402HTTPClient, @x402/evm's exact scheme), under spending caps the caller sets: the client
 * refuses to sign a payment above the per-call cap or one that would take the session's total
 * past the per-session cap.
 */
import { x402Client, x402HTTPClient, type PaymentRequirements } from "@x402/fetch";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { ToolgateError } from "./errors.js";
import {
  ALLOW_ASSET_ADVICE,
  DEFAULT_MAX_PER_CALL,
  DEFAULT_MAX_PER_SESSION,
  type SpendingLimits,
  type WalletAccount,
} from "./spending.js";

const amountOf = (requirements: PaymentRequirements): bigint => {
  const r = requirements as PaymentRequirements & { maxAmountRequired?: string };
  return BigInt(r.amount ?? r.maxAmountRequired ?? "0");
};
const usdc = (atomic: bigint) =>
  `${atomic / 1_000_000n}.${(atomic % 1_000_000n).toString().padStart(6, "0")} USDC`;

export class WalletPayer {
  private readonly http: x402HTTPClient;
  private readonly maxPerCall: bigint;
  private readonly maxPerSession: bigint;
  private committed = 0n;

  constructor(wallet: WalletAccount, limits: SpendingLimits = {}) {
    this.maxPerCall = limits.maxPerCall ?? DEFAULT_MAX_PER_CALL;
    this.maxPerSession = limits.maxPerSession ?? DEFAULT_MAX_PER_SESSION;
    const client = new x402Client();
    registerExactEvmScheme(client, { signer: wallet });
    // Our caps replace the client's default USD cap; its asset allow-list stays in force.
    client.setSpendControls({
      maxAmountPerPayment: false,
      ...(limits.allowedAssets ? { allowedAssets: limits.allowedAssets } : {}),
    });
    client.onBeforePaymentCreation(async ({ selectedRequirements }) =>
      this.reserve(amountOf(selectedRequirements)),
    );
    this.http = new x402HTTPClient(client);
  }

  /** What this client has signed so far, in USDC atomic units. */
  get spent(): bigint {
    return this.committed;
  }

  /** Runs before anything is signed: refuses above the caps, else counts the amount as spent. */
  private reserve(amount: bigint): void {
    if (amount > this.maxPerCall)
      throw new ToolgateError({
        status: 0,
        code: "spend_cap_exceeded",
        message: `The call costs ${usdc(amount)}, above the per-call cap of ${usdc(this.maxPerCall)}; nothing was signed.`,
      });
    if (this.committed + amount > this.maxPerSession)
      throw new ToolgateError({
        status: 0,
        code: "spend_cap_exceeded",
        message: `Paying ${usdc(amount)} would take this session's spending to ${usdc(this.committed + amount)}, above its cap of ${usdc(this.maxPerSession)}; nothing was signed.`,
      });
    this.committed += amount;
  }

  /** The payment headers answering a 402, signed once; the caller re-sends them on retries. */
  async paymentHeaders(response: Response, bodyText: string): Promise<Record<string, string>> {
    let body: unknown;
    try {
      body = JSON.parse(bodyText);
    } catch {
      body = undefined;
    }
    let offered: PaymentRequirements[] = [];
    try {
      const required = this.http.getPaymentRequiredResponse(
        (name) => response.headers.get(name),
        body,
      );
      offered = required.accepts;
      return this.http.encodePaymentSignatureHeader(await this.http.createPaymentPayload(required));
    } catch (error) {
      if (error instanceof ToolgateError) throw error;
      const message = (error as Error).message;
      throw new ToolgateError({
        status: 0,
        code: "payment_failed",
        // The x402 client's own words name its options (spendControls), not this library's.
        message: /only default assets/.test(message)
          ? `The gateway asks to be paid in ${offered.map((r) => `${r.asset} on ${r.network}`).join(" or ")}, not a USDC this client pays with unless told: ${ALLOW_ASSET_ADVICE} to pay with it. Nothing was signed.`
          : `Could not pay with the wallet: ${message}`,
        cause: error,
      });
    }
  }
}
