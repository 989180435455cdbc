import { describe, expect, it } from "vitest";
import { parseSignature, serializeSignature, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { normaliseSignature, transferArgs } from "../../src/payments/verify.js";

/**
 * The payment signature's checks and normal form, done by hand on the hex, give what viem's
 * parseSignature and serializeSignature (secp256k1 curve objects) gave: the same signatures
 * refused with the same reasons, the same normal form, the same (v, r, s) arguments.
 */
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const HALF_N = N / 2n;
const hex64 = (n: bigint) => n.toString(16).padStart(64, "0");

/** What the code did before, with viem: the reason it refused, or the normal form. */
function withViem(signature: Hex): string {
  if (signature.length !== 132) return signature;
  let parsed: ReturnType<typeof parseSignature>;
  try {
    parsed = parseSignature(signature);
  } catch {
    return "not valid";
  }
  if (BigInt(parsed.s) > HALF_N) return "high s";
  if (BigInt(parsed.r) === 0n || BigInt(parsed.s) === 0n) return "not valid";
  return serializeSignature({
    r: parsed.r,
    s: parsed.s,
    yParity: parsed.yParity ?? (Number(parsed.v) - 27 === 1 ? 1 : 0),
  });
}

function byHand(signature: Hex): string {
  try {
    return normaliseSignature(signature);
  } catch (err) {
    return /high/.test((err as Error).message) ? "high s" : "not valid";
  }
}

async function realSignatures(count: number): Promise<Hex[]> {
  return Promise.all(
    Array.from({ length: count }, (_, i) =>
      privateKeyToAccount(generatePrivateKey()).signMessage({ message: `payment ${i}` }),
    ),
  );
}

describe("a payment signature's normal form", () => {
  it("is what viem's parse and serialize gave, for real signatures in every spelling of v and case", async () => {
    for (const signature of await realSignatures(40)) {
      const body = signature.slice(2, 130);
      const v = Number.parseInt(signature.slice(130), 16);
      const spellings = [
        signature,
        `0x${body}${(v - 27).toString(16).padStart(2, "0")}`, // v as 0 / 1
        `0x${body.toUpperCase()}${signature.slice(130)}`,
      ] as Hex[];
      for (const spelling of spellings) {
        const expected = withViem(spelling);
        expect(expected).toBe(signature.toLowerCase());
        expect(byHand(spelling)).toBe(expected);
      }
    }
  });

  it("refuses what viem refused, for the same reason: high s, zero or out-of-range r and s, a bad v", async () => {
    const [real] = await realSignatures(1);
    const r = real!.slice(2, 66);
    const s = real!.slice(66, 130);
    const cases: Hex[] = [
      `0x${r}${hex64(N - BigInt(`0x${s}`))}1b`, // the malleable twin
      `0x${r}${hex64(HALF_N + 1n)}1c`,
      `0x${hex64(0n)}${s}1b`,
      `0x${r}${hex64(0n)}1b`,
      `0x${hex64(N)}${s}1b`,
      `0x${r}${hex64(N)}1b`,
      `0x${r}${s}1d`,
      `0x${r}${s}02`,
    ];
    for (const signature of cases) {
      const expected = withViem(signature);
      expect(expected).not.toBe(signature);
      expect(byHand(signature)).toBe(expected);
    }
    // s exactly half the order is still the low one.
    const half = `0x${r}${hex64(HALF_N)}1b` as Hex;
    expect(byHand(half)).toBe(withViem(half));
    expect(byHand(half)).toBe(half);
  });

  it("passes a smart wallet's signature (any other length) on as it is", () => {
    const long = `0x${"ab".repeat(100)}` as Hex;
    expect(normaliseSignature(long)).toBe(long);
  });

  it("gives the (v, r, s) transfer arguments viem's parse gave", async () => {
    const m = {
      from: "0x0000000000000000000000000000000000000001",
      to: "0x0000000000000000000000000000000000000002",
      value: 1n,
      validAfter: 0n,
      validBefore: 10n,
      nonce: `0x${"11".repeat(32)}`,
    } as const;
    for (const signature of await realSignatures(10)) {
      const { r, s, v } = parseSignature(signature);
      expect(transferArgs(m, normaliseSignature(signature)).slice(6)).toEqual([Number(v), r, s]);
      // v spelled as the parity (0 / 1), as some wallets sign.
      const parity =
        `${signature.slice(0, 130)}${(Number(v) - 27).toString(16).padStart(2, "0")}` as Hex;
      expect(transferArgs(m, parity).slice(6)).toEqual([Number(v), r, s]);
    }
  });
});
