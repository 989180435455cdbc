/**
 * Money is integers (decisions.md D2), and this is where amounts of money are converted: USDC has
 * 6 decimals, so 1 atomic unit = $0.000001, and every amount is a bigint of atomic units.
 * A call's x402 price is its cost in credits × the price of one credit.
 */
export const USDC_DECIMALS = 6;

/** "0.002" → 2000n. Refuses anything that is not a plain decimal with at most 6 decimals. */
export function parseUsd(value: string): bigint {
  const match = /^(\d+)(?:\.(\d{1,6}))?$/.exec(value.trim());
  if (!match) throw new Error(`not a USD amount with at most ${USDC_DECIMALS} decimals: ${value}`);
  return (
    BigInt(match[1]!) * 10n ** BigInt(USDC_DECIMALS) +
    BigInt((match[2] ?? "").padEnd(USDC_DECIMALS, "0"))
  );
}

/** 10000n → "0.01", 2000n → "0.002": at least two decimals, no trailing zeros past them. */
export function formatUsd(atomic: bigint): string {
  const whole = atomic / 10n ** BigInt(USDC_DECIMALS);
  const fraction = (atomic % 10n ** BigInt(USDC_DECIMALS))
    .toString()
    .padStart(USDC_DECIMALS, "0")
    .replace(/0+$/, "")
    .padEnd(2, "0");
  return `${whole}.${fraction}`;
}

/** What `credits` cost in USDC atomic units. */
export function atomicPrice(credits: number, creditPriceAtomic: bigint): bigint {
  return BigInt(credits) * creditPriceAtomic;
}
