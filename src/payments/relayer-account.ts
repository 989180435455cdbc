/**
 * The relayer keys' viem accounts, signing settlement transactions with libsecp256k1 (the
 * `secp256k1` package's prebuilt native binding) when it loads here, else with viem's own pure-JS
 * signer (@noble/curves). Both sign deterministically (RFC 6979, low s): the same transaction gets
 * the same bytes either way, ten times faster natively (about 0.1 ms against 1 ms per signature,
 * a paid call's largest single CPU cost once its signature is proven on chain). Everything else an
 * account does (its address, messages, typed data) stays viem's.
 */
import { createRequire } from "node:module";
import {
  bytesToHex,
  hexToBytes,
  keccak256,
  serializeTransaction,
  type Hex,
  type LocalAccount,
  type SerializeTransactionFn,
  type TransactionSerializable,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";

/** What is used of the binding (secp256k1/bindings: libsecp256k1 through N-API). */
export interface NativeSecp256k1 {
  ecdsaSign(message: Uint8Array, privateKey: Uint8Array): { signature: Uint8Array; recid: number };
}

/**
 * The native binding, or null where it cannot load (no prebuilt binary for this platform): the
 * package's own fallback is not used, viem's signer is.
 */
export function loadNativeSecp256k1(): NativeSecp256k1 | null {
  try {
    return createRequire(import.meta.url)("secp256k1/bindings") as NativeSecp256k1;
  } catch {
    return null;
  }
}

/**
 * A relayer's account; its transactions signed by `native` when given, their hash computed by
 * `hash` (transaction-hash.ts; viem's keccak256 by default).
 */
export function relayerAccount(
  privateKey: Hex,
  native: NativeSecp256k1 | null,
  hash: (bytes: Hex) => Hex = keccak256,
): LocalAccount {
  const account = privateKeyToAccount(privateKey);
  if (!native) return account;
  const key = hexToBytes(privateKey);
  return {
    ...account,
    // As viem's own signTransaction (accounts/utils/signTransaction), with the hash signed natively.
    async signTransaction<T extends TransactionSerializable>(
      transaction: T,
      options?: { serializer?: SerializeTransactionFn<T> },
    ) {
      const serializer = (options?.serializer ??
        serializeTransaction) as SerializeTransactionFn<TransactionSerializable>;
      // A blob transaction's sidecars are not part of what is signed.
      const signable =
        transaction.type === "eip4844" ? { ...transaction, sidecars: false } : transaction;
      const digest = hash(await serializer(signable as TransactionSerializable));
      const { signature, recid } = native.ecdsaSign(hexToBytes(digest), key);
      return (await serializer(transaction, {
        r: bytesToHex(signature.subarray(0, 32)),
        s: bytesToHex(signature.subarray(32, 64)),
        v: recid ? 28n : 27n,
        yParity: recid,
      })) as never;
    },
  };
}
