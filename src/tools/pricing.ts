import { atomicPrice, formatUsd } from "../lib/money.js";
import type { ToolDefinition } from "./definition.js";

/** A tool's price as the API shows it: credits, and what they cost in USD and USDC (src/lib/money.ts). */
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

export function priceOf(tool: Pick<ToolDefinition, "cost">, creditPriceAtomic: bigint): Price {
  const atomic = atomicPrice(tool.cost, creditPriceAtomic);
  return { credits: tool.cost, usd: formatUsd(atomic), usdc_atomic: atomic.toString() };
}
