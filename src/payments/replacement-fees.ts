import type { Fees } from "./relayers.js";

/**
 * What a replacement raises over the fees it replaces, in per mille: the least nodes take as a
 * replacement (geth 10%, others 12.5%). Compounded pass after pass it is what once bid a queue up
 * to 8,748 gwei, so it is only ever a step up from the larger of the old fees and the chain's
 * current ones, under the cap below.
 */
const BUMP_PER_MILLE = 1125n;
/** The least rise a node takes as a replacement (geth's 10%), in per mille. */
const NODE_MINIMUM_PER_MILLE = 1100n;
/**
 * The most a replacement may bid, as a multiple of the chain's current fee estimate: above a
 * normal send (twice the base fee plus the tip, under 1.7× the estimate) and a gap filler (2×),
 * with room for a few minimum bumps over them, and a bound on what any one transaction can cost
 * whatever it replaced.
 */
export const REPLACEMENT_FEE_CAP = 3n;

const perMilleUp = (value: bigint, perMille: bigint) => (value * perMille + 999n) / 1000n;
const larger = (a: bigint, b: bigint) => (a > b ? a : b);
const smaller = (a: bigint, b: bigint) => (a < b ? a : b);

/**
 * The fees of a replacement for a transaction sent at `sent` while the chain asks `current`: a
 * minimum bump from whichever is higher, the max fee never above REPLACEMENT_FEE_CAP × the current
 * one (the tip within the max fee, so what is paid per gas is bounded too), unless only a tip
 * behind the chain's keeps it waiting. null when the cap leaves no room for the rise a node
 * requires: the transaction stays at the fees it has.
 */
export function replacementFees(sent: Fees, current: Fees): Fees | null {
  // Sent when the base fee was higher, a transaction may hold a max fee above the cap and still
  // wait behind a tip the chain has outgrown: its max fee then rises the least a node takes, as a
  // replacement must. What it pays per gas is the base fee plus the tip, bounded by the chain's.
  const tipBehind = sent.maxPriorityFeePerGas < current.maxPriorityFeePerGas;
  const cap = current.maxFeePerGas * REPLACEMENT_FEE_CAP;
  const ceiling = tipBehind
    ? larger(cap, perMilleUp(sent.maxFeePerGas, NODE_MINIMUM_PER_MILLE))
    : cap;
  const maxFeePerGas = smaller(
    perMilleUp(larger(sent.maxFeePerGas, current.maxFeePerGas), BUMP_PER_MILLE),
    ceiling,
  );
  const maxPriorityFeePerGas = smaller(
    perMilleUp(larger(sent.maxPriorityFeePerGas, current.maxPriorityFeePerGas), BUMP_PER_MILLE),
    maxFeePerGas,
  );
  const takenByNodes =
    maxFeePerGas >= perMilleUp(sent.maxFeePerGas, NODE_MINIMUM_PER_MILLE) &&
    maxPriorityFeePerGas >= perMilleUp(sent.maxPriorityFeePerGas, NODE_MINIMUM_PER_MILLE);
  return takenByNodes ? { maxFeePerGas, maxPriorityFeePerGas } : null;
}
