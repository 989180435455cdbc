import type { ToolDefinition } from "./definition.js";

/**
 * Money is integers (DESIGN D2): one credit costs `creditPriceAtomic` USDC atomic units
 * (6 decimals, so 1 unit = $0.000001), and a call's x402 price is cost × that, in bigint.
 */
export const USDC_DECIMALS = 6;

/** "0.002" → 2000n. Refuses anything that is not a plain decimal with at most 6 decimals. */
export function parseUsd(value: string): bigint {
  const match = /^(\d+)(?:\.(\d{1,6}))?$/.exec(value.trim());
  if (!match) throw new Error(`not a USD amount with at most ${USDC_DECIMALS} decimals: ${value}`);
  return BigInt(match[1]!) * 10n ** BigInt(USDC_DECIMALS) + BigInt((match[2] ?? "").padEnd(USDC_DECIMALS, "0"));
}

/** 10000n → "0.01", 2000n → "0.002": at least two decimals, no trailing zeros past them. */
export function formatUsd(atomic: bigint): string {
  const whole = atomic / 10n ** BigInt(USDC_DECIMALS);
  const fraction = (atomic % 10n ** BigInt(USDC_DECIMALS)).toString().padStart(USDC_DECIMALS, "0").replace(/0+$/, "").padEnd(2, "0");
  return `${whole}.${fraction}`;
}

export interface Price {
  credits: number;
  usd: string;
  /** USDC atomic units, as a decimal string (JSON has no bigint). */
  usdc_atomic: string;
}

/** "1 credit", "5 credits": every text that states an amount of credits says it this way. */
export function formatCredits(credits: number | bigint): string {
  return `${credits} ${credits === 1 || credits === 1n ? "credit" : "credits"}`;
}

/** What `credits` cost in USDC atomic units. */
export function atomicPrice(credits: number, creditPriceAtomic: bigint): bigint {
  return BigInt(credits) * creditPriceAtomic;
}

export function priceOf(tool: Pick<ToolDefinition, "cost">, creditPriceAtomic: bigint): Price {
  const atomic = atomicPrice(tool.cost, creditPriceAtomic);
  return { credits: tool.cost, usd: formatUsd(atomic), usdc_atomic: atomic.toString() };
}
