/**
 * The wallet's payer, its x402 code (payments.ts: @x402/fetch, @x402/evm, viem, ~380 KB minified)
 * loaded by a dynamic import on the first 402 to pay: a client made with an API key only never
 * loads it, and a bundler that splits code leaves it out of that client's first chunk.
 */
import { ToolgateError } from "./errors.js";
import type { WalletPayer } from "./payments.js";
import type { SpendingLimits, WalletAccount } from "./spending.js";

export class LazyWalletPayer {
  #payer: Promise<WalletPayer> | undefined;
  #loaded: WalletPayer | undefined;

  constructor(
    private readonly wallet: WalletAccount,
    private readonly limits: SpendingLimits | undefined,
  ) {}

  /** What the wallet has signed so far, in USDC atomic units (0n before its first payment). */
  get spent(): bigint {
    return this.#loaded?.spent ?? 0n;
  }

  /** The payment headers answering a 402 (WalletPayer.paymentHeaders), the payer made once. */
  async paymentHeaders(response: Response, bodyText: string): Promise<Record<string, string>> {
    // One payer for every call, concurrent ones included: the session cap counts all of them.
    this.#payer ??= this.load();
    const payer = await this.#payer;
    this.#loaded = payer;
    return payer.paymentHeaders(response, bodyText);
  }

  private async load(): Promise<WalletPayer> {
    try {
      const { WalletPayer } = await import("./payments.js");
      return new WalletPayer(this.wallet, this.limits);
    } catch (error) {
      // A failed load is tried again on the next payment (a chunk the network dropped).
      this.#payer = undefined;
      throw new ToolgateError({
        status: 0,
        code: "payment_failed",
        message: `Could not load the x402 payment client: ${(error as Error).message}. Nothing was signed.`,
        cause: error,
      });
    }
  }
}
