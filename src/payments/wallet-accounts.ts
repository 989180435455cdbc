import { createHash } from "node:crypto";
import type { Address } from "viem";
import { createAccountRecord } from "../accounts/accounts.js";
import type { Services } from "../services.js";
import type { AccountRecord } from "../store/types.js";

/**
 * A paying wallet's account (decisions.md D7). Its id is derived from the address, so every process
 * finds the same account without an index, and the first payment creates it.
 */
export function walletAccountId(address: Address): string {
  const digest = BigInt(
    `0x${createHash("sha256").update(`wallet:${address.toLowerCase()}`).digest("hex")}`,
  );
  return `acct_${digest.toString(36).padStart(16, "0").slice(0, 16)}`;
}

export async function ensureWalletAccount(
  services: Pick<Services, "store">,
  address: Address,
): Promise<AccountRecord> {
  return (
    (await services.store.getAccount(walletAccountId(address))) ??
    createWalletAccount(services, address)
  );
}

/** Makes the wallet's account, or finds the one another process made a moment ago. */
export async function createWalletAccount(
  services: Pick<Services, "store">,
  address: Address,
): Promise<AccountRecord> {
  const id = walletAccountId(address);
  try {
    return await createAccountRecord(services, {
      id,
      email: null,
      tier: "free",
      credits: 0,
      reason: `wallet ${address.toLowerCase()}`,
    });
  } catch {
    // Another process created it a moment ago.
    const created = await services.store.getAccount(id);
    if (!created) throw new Error(`could not open the account of wallet ${address}`);
    return created;
  }
}
