/**
 * Hex is case-insensitive: `0xAB` and `0xab` are the same bytes. Values that arrive from outside
 * (addresses, nonces, signatures, hashes) are normalised once, where they are parsed, and any
 * two hex values are compared as bytes — never as case-sensitive text.
 */
export type Hex = `0x${string}`;

const HEX = /^0x(?:[0-9a-fA-F]{2})*$/;

/** Lower-case `0x…` with an even number of digits; throws on anything that is not hex. */
export function normaliseHex(value: string): Hex {
  if (!HEX.test(value)) throw new Error(`not even-length 0x-prefixed hex: ${value.slice(0, 80)}`);
  return value.toLowerCase() as Hex;
}

/**
 * Whether two hex strings (any case) spell the same bytes. Two valid hex strings spell the same
 * bytes exactly when they match with case folded: each digit is one nibble whatever its case.
 */
export function sameBytes(a: string, b: string): boolean {
  if (a.length !== b.length || !HEX.test(a) || !HEX.test(b)) return false;
  return a === b || a.toLowerCase() === b.toLowerCase();
}
