import { getAddress, parseAbiItem, type Hex, type TransactionReceipt } from "viem";
import { sameBytes } from "../lib/hex.js";
import type { PaymentRecord } from "../store/types.js";
import type { NetworkClients } from "./chain.js";
import { authorizationUsed } from "./verify.js";

/**
 * Who used a payment's authorization on chain. The token marks an authorization used whoever
 * sends it, so "used" alone does not say the money moved for this deployment: another deployment
 * sharing the chain and X402_PAY_TO (its own Redis, its own relayer keys) may have been sent the
 * same authorization at the same moment and settled it first. Each payment is credited by the
 * deployment whose transaction used it, and only there.
 */

const AUTHORIZATION_USED = parseAbiItem(
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
);

/**
 * The transaction that used the authorization, from its AuthorizationUsed log: read forward from
 * the block seen before the settlement was sent, in ranges of at most `rangeBlocks` (hosted RPCs
 * cap eth_getLogs ranges, often at 1,000 to 10,000 blocks). A record without that block (written
 * by an older version) is searched over the last ten ranges only.
 */
export async function findAuthorizationUse(
  clients: NetworkClients,
  record: PaymentRecord,
  rangeBlocks: number,
): Promise<Hex | null> {
  const auth = record.authorization;
  const latest = await clients.public.getBlockNumber({ cacheTime: 0 });
  const span = BigInt(rangeBlocks);
  const start = record.sentFromBlock
    ? BigInt(record.sentFromBlock)
    : latest > span * 10n
      ? latest - span * 10n
      : 0n;
  for (let from = start; from <= latest; from += span) {
    const to = from + span - 1n < latest ? from + span - 1n : latest;
    const logs = await clients.public.getLogs({
      address: clients.network.usdc.address,
      event: AUTHORIZATION_USED,
      args: { authorizer: getAddress(auth.from!), nonce: auth.nonce as Hex },
      fromBlock: from,
      toBlock: to,
    });
    if (logs[0]) return logs[0].transactionHash;
  }
  return null;
}

/**
 * Whether a mined transaction is this deployment's own: the hash its record names, or sent by
 * one of its relayer keys (X402_RELAYER_PRIVATE_KEY(S), shared by every process and by the
 * facilitator's settlements) or by the key the record says sent it (a key since removed). The
 * sender, not only the recorded hash, so a process that died after broadcasting and before saving
 * the hash, and a stuck transaction replaced at the same nonce, are still ours.
 */
export function sentByUs(
  clients: NetworkClients,
  record: PaymentRecord,
  receipt: Pick<TransactionReceipt, "from" | "transactionHash">,
): boolean {
  if (record.txHash && sameBytes(record.txHash, receipt.transactionHash)) return true;
  if (record.relay?.from && sameBytes(record.relay.from, receipt.from)) return true;
  return clients.relayers.some((account) => sameBytes(account.address, receipt.from));
}

/**
 * After a settlement of ours failed: unused (nothing moved; the claim may be let go), used by a
 * transaction of ours (an earlier send of this settlement landed: the reconciler credits it), used
 * by someone else's (not ours to credit), or unknown (the chain could not be asked, or the log is
 * not found yet: the reconciler decides later).
 */
export async function whoUsedAuthorization(
  clients: NetworkClients,
  record: PaymentRecord,
  rangeBlocks: number,
): Promise<"unused" | "us" | "others" | "unknown"> {
  try {
    const auth = record.authorization;
    if (!(await authorizationUsed(clients, getAddress(auth.from!), auth.nonce as Hex)))
      return "unused";
    const hash = await findAuthorizationUse(clients, record, rangeBlocks);
    if (!hash) return "unknown";
    const receipt = await clients.public.getTransactionReceipt({ hash });
    return sentByUs(clients, record, receipt) ? "us" : "others";
  } catch {
    return "unknown";
  }
}
