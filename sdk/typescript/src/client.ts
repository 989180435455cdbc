/** `new Toolgate({...})`: the client, its options and their defaults from the environment. */
import { checkTimeoutMs, normaliseApiKey, normaliseBaseUrl, normaliseHeaders } from "./checks.js";
import { LazyWalletPayer } from "./lazy-wallet-payer.js";
import { Account, Keys, Usage } from "./resources/account.js";
import { Tools } from "./resources/tools.js";
import { Webhooks } from "./resources/webhooks.js";
import type { SpendingLimits, WalletAccount } from "./spending.js";
import { Transport } from "./transport.js";

export interface ToolgateOptions {
  /** `x-api-key`; default `TOOLGATE_API_KEY` from the environment (where there is one). */
  apiKey?: string | undefined;
  /** Default `TOOLGATE_BASE_URL`, else `http://localhost:8402`. */
  baseUrl?: string | undefined;
  /** A viem account: with no API key, each tool call is paid with x402 from it. */
  wallet?: WalletAccount | undefined;
  /** Spending caps for the wallet, in USDC atomic units (defaults: $0.10 per call, $1 per session). */
  spending?: SpendingLimits | undefined;
  /** Retries on 429, 503 and network errors (tool calls and reads). Default 2. */
  maxRetries?: number | undefined;
  /** Per-attempt timeout, for the attempt as a whole (sending to the answer's last byte). Default 60 000 ms. */
  timeoutMs?: number | undefined;
  /** A fetch to use instead of the global one. */
  fetch?: typeof globalThis.fetch | undefined;
  /** Extra headers for every request. */
  headers?: Record<string, string> | undefined;
}

export const DEFAULT_BASE_URL = "http://localhost:8402";

/** The environment where there is one (Node, Bun, Deno); browsers have none. */
const env = (name: string): string | undefined =>
  (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.[name] ||
  undefined;

export class Toolgate {
  readonly tools: Tools;
  readonly account: Account;
  readonly keys: Keys;
  readonly usage: Usage;
  readonly webhooks: Webhooks;
  readonly baseUrl: string;
  private readonly payer: LazyWalletPayer | undefined;

  constructor(options: ToolgateOptions = {}) {
    // An empty baseUrl is unset, as in Python (`base_url or …`): not a URL every request would fail on.
    // Checked here, once: a URL without its scheme (`api.toolgate.example`, the usual slip in
    // TOOLGATE_BASE_URL) or with a line break pasted after it would otherwise fail every request
    // with a bare TypeError naming nothing.
    this.baseUrl = normaliseBaseUrl(
      options.baseUrl || env("TOOLGATE_BASE_URL") || DEFAULT_BASE_URL,
      options.baseUrl ? "baseUrl" : "TOOLGATE_BASE_URL",
    );
    checkTimeoutMs(options.timeoutMs);
    const apiKey =
      options.apiKey !== undefined
        ? normaliseApiKey(options.apiKey, "apiKey")
        : options.wallet
          ? undefined
          : normaliseApiKey(env("TOOLGATE_API_KEY"), "TOOLGATE_API_KEY");
    const defaultHeaders = normaliseHeaders(options.headers);
    this.payer = options.wallet ? new LazyWalletPayer(options.wallet, options.spending) : undefined;
    const transport = new Transport({
      apiKey,
      baseUrl: this.baseUrl,
      payer: this.payer,
      maxRetries: options.maxRetries ?? 2,
      timeoutMs: options.timeoutMs ?? 60_000,
      fetch: options.fetch ?? globalThis.fetch.bind(globalThis),
      defaultHeaders,
    });
    this.tools = new Tools(transport);
    this.account = new Account(transport);
    this.keys = new Keys(transport);
    this.usage = new Usage(transport);
    this.webhooks = new Webhooks(transport);
  }

  /** USDC atomic units this client's wallet has signed for so far (0n without a wallet). */
  get spent(): bigint {
    return this.payer?.spent ?? 0n;
  }
}
