/**
 * Keccak-256 of a settlement transaction's bytes: the hash its relayer signs, and the hash it is
 * known by once sent. Computed by the `keccak` package's prebuilt native binding when it loads
 * here, else by viem's pure-JS keccak (@noble/hashes); the same digest either way (pinned by
 * test/unit/relayer-native-signing.test.ts). A batch of authorizations is one long transaction:
 * natively its two hashes cost about 20 µs each, in JS about 0.25 ms each for 1.2 KB (measured
 * on this machine), and every settled payment's share of them was on the gateway's busiest thread.
 */
import { createRequire } from "node:module";
import { keccak256, type Hex } from "viem";

/** What is used of the binding: a fresh hash of the given algorithm. */
type NativeKeccak = (algorithm: "keccak256") => {
  update(data: Buffer): { digest(encoding: "hex"): string };
};

/** The native binding, or null where it cannot load (no prebuilt binary for this platform). */
export function loadNativeKeccak(): NativeKeccak | null {
  try {
    return createRequire(import.meta.url)("keccak/bindings") as NativeKeccak;
  } catch {
    return null;
  }
}

/** Keccak-256 of hex-encoded bytes, natively when `native` is given. */
export function hashWith(native: NativeKeccak | null): (bytes: Hex) => Hex {
  if (!native) return (bytes) => keccak256(bytes);
  return (bytes) =>
    `0x${native("keccak256")
      .update(Buffer.from(bytes.slice(2), "hex"))
      .digest("hex")}`;
}
