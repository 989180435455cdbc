import { keccak256, parseTransaction, recoverTransactionAddress, toHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { loadNativeSecp256k1, relayerAccount } from "../../src/payments/relayer-account.js";
import { hashWith, loadNativeKeccak } from "../../src/payments/transaction-hash.js";

/** The relayer's settlement transactions, signed by libsecp256k1 where it loads, by viem otherwise. */
const KEY = keccak256(toHex("relayer key for this test"));
const transactions = [0, 1, 2, 3, 4, 5, 6, 7].map((i) => ({
  chainId: 84532,
  type: "eip1559" as const,
  to: "0x5FbDB2315678afecb367f032d93F642f64180aa3" as const,
  data: keccak256(toHex(`calldata ${i}`)),
  nonce: i,
  gas: 90_000n + BigInt(i),
  maxFeePerGas: 2_000_000_000n,
  maxPriorityFeePerGas: 1_000_000n,
}));

describe("relayer transaction signing", () => {
  it.runIf(process.platform === "linux" && process.arch === "x64")(
    "loads the native libsecp256k1 binding on linux x64 (a prebuilt binary in the package)",
    () => {
      expect(loadNativeSecp256k1()).not.toBeNull();
    },
  );

  it.runIf(process.platform === "linux" && process.arch === "x64")(
    "loads the native keccak binding on linux x64 (a prebuilt binary in the package)",
    () => {
      expect(loadNativeKeccak()).not.toBeNull();
    },
  );

  it("hashes natively as viem does, at every length around keccak's 136-byte block", () => {
    const native = hashWith(loadNativeKeccak());
    for (const length of [0, 1, 31, 32, 135, 136, 137, 272, 1200, 4000]) {
      const bytes = toHex(Uint8Array.from({ length }, (_, i) => (i * 37 + length) % 256));
      expect(native(bytes)).toBe(keccak256(bytes));
    }
    // Hex is read as bytes, whatever its case.
    expect(native("0xABCDEF")).toBe(keccak256("0xabcdef"));
  });

  it("signs natively byte for byte as viem does, and the signature recovers to the relayer", async () => {
    const native = relayerAccount(KEY, loadNativeSecp256k1(), hashWith(loadNativeKeccak()));
    const viemOwn = privateKeyToAccount(KEY);
    expect(native.address).toBe(viemOwn.address);
    for (const tx of transactions) {
      const signed = await native.signTransaction(tx);
      expect(signed).toBe(await viemOwn.signTransaction(tx));
      expect(
        await recoverTransactionAddress({
          serializedTransaction: signed as never,
        }),
      ).toBe(viemOwn.address);
      expect(parseTransaction(signed).nonce).toBe(tx.nonce);
    }
  });

  it("without the binding, is viem's own account", async () => {
    const fallback = relayerAccount(KEY, null);
    expect(await fallback.signTransaction(transactions[0]!)).toBe(
      await privateKeyToAccount(KEY).signTransaction(transactions[0]!),
    );
  });
});
