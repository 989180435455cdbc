import { isAddressEqual, parseEventLogs, type Address, type Hex, type PublicClient } from "viem";
import { sameBytes } from "../lib/hex.js";
import { tokenAbi } from "../payments/verify.js";
import type { BooksDatabase } from "./database.js";

/**
 * Reconciliation of the money itself: on every configured network, the books' payments table
 * and the chain agree. Each settled payment's transaction holds its transfer (payer → pay-to,
 * the payment's value) and the authorization's AuthorizationUsed; and every transfer to pay-to
 * made by `transferWithAuthorization` (its transaction holds an AuthorizationUsed of the token)
 * is a credited payment. Plain transfers to pay-to (someone sending USDC by hand) are not
 * payments and are left alone. Read-only: it reports, it never corrects.
 */
export interface ChainToCheck {
  network: string;
  client: PublicClient;
  usdc: Address;
  payTo: Address;
}

export interface PaymentMismatch {
  network: string;
  txHash: string | null;
  paymentId: string | null;
  problem: string;
}

export interface PaymentsCheck {
  payments: number;
  transfers: number;
  mismatches: PaymentMismatch[];
  /** Networks that payments were made on but that are not configured here: not checked. */
  unchecked: string[];
}

interface PaymentRow {
  id: string;
  network: string;
  payer: string;
  value_atomic: string;
  tx_hash: string | null;
}

interface Transfer {
  txHash: Hex;
  from: Address;
  value: bigint;
}

export async function checkPayments(
  db: BooksDatabase,
  chains: ChainToCheck[],
  options: { fromBlock?: bigint; blockRange?: bigint } = {},
): Promise<PaymentsCheck> {
  const rows = await db.query<PaymentRow>(
    "SELECT id, network, payer, value_atomic::text AS value_atomic, tx_hash FROM payments ORDER BY settled_at, id",
  );
  const result: PaymentsCheck = {
    payments: rows.length,
    transfers: 0,
    mismatches: [],
    unchecked: [],
  };
  const configured = new Set(chains.map((c) => c.network));
  result.unchecked = [...new Set(rows.map((r) => r.network))].filter((n) => !configured.has(n));
  for (const chain of chains) {
    const payments = rows.filter((r) => r.network === chain.network);
    const mismatch = (row: PaymentRow | null, txHash: string | null, problem: string) =>
      result.mismatches.push({
        network: chain.network,
        txHash,
        paymentId: row?.id ?? null,
        problem,
      });

    // Each settled payment: its transaction moved its value from its payer to pay-to.
    for (const row of payments) {
      if (!row.tx_hash) {
        mismatch(row, null, "settled payment without a transaction hash");
        continue;
      }
      const receipt = await chain.client
        .getTransactionReceipt({ hash: row.tx_hash as Hex })
        .catch(() => null);
      if (receipt?.status !== "success") {
        mismatch(row, row.tx_hash, "its transaction is not on chain (or reverted)");
        continue;
      }
      const transfers = tokenTransfersToPayTo(chain, receipt.logs);
      if (!transfers.some((t) => sameTransfer(t, row)))
        mismatch(
          row,
          row.tx_hash,
          `its transaction has no transfer of ${row.value_atomic} from ${row.payer} to pay-to`,
        );
    }

    // Each authorized transfer to pay-to: a payment of the books.
    const transfers = await authorizedTransfers(chain, options);
    result.transfers += transfers.length;
    const unmatched = [...payments];
    for (const transfer of transfers) {
      const i = unmatched.findIndex((row) => sameTransfer(transfer, row));
      if (i >= 0) unmatched.splice(i, 1);
      else
        mismatch(
          null,
          transfer.txHash,
          `transfer of ${transfer.value} from ${transfer.from} to pay-to is not a credited payment`,
        );
    }
  }
  return result;
}

function sameTransfer(transfer: Transfer, row: PaymentRow): boolean {
  return (
    row.tx_hash !== null &&
    sameBytes(transfer.txHash, row.tx_hash) &&
    sameBytes(transfer.from, row.payer) &&
    transfer.value === BigInt(row.value_atomic)
  );
}

/** The token's Transfer logs to pay-to in `logs`, from a transaction that also used an authorization. */
function tokenTransfersToPayTo(
  chain: ChainToCheck,
  logs: Parameters<typeof parseEventLogs>[0]["logs"],
): Transfer[] {
  const events = parseEventLogs({
    abi: tokenAbi,
    logs: logs.filter((l) => isAddressEqual(l.address, chain.usdc)),
  }) as unknown as { eventName: string; args: Record<string, unknown>; transactionHash: Hex }[];
  if (!events.some((e) => e.eventName === "AuthorizationUsed")) return [];
  return events
    .filter((e) => e.eventName === "Transfer" && isAddressEqual(e.args.to as Address, chain.payTo))
    .map((e) => ({
      txHash: e.transactionHash,
      from: e.args.from as Address,
      value: e.args.value as bigint,
    }));
}

/** Transfers to pay-to whose transaction used an authorization, read in block ranges an RPC accepts. */
async function authorizedTransfers(
  chain: ChainToCheck,
  options: { fromBlock?: bigint; blockRange?: bigint },
): Promise<Transfer[]> {
  const latest = await chain.client.getBlockNumber();
  const step = options.blockRange ?? 10_000n;
  const found: Transfer[] = [];
  for (let from = options.fromBlock ?? 0n; from <= latest; from += step) {
    const to = from + step - 1n < latest ? from + step - 1n : latest;
    const range = { address: chain.usdc, abi: tokenAbi, fromBlock: from, toBlock: to } as const;
    const [transfers, used] = await Promise.all([
      chain.client.getContractEvents({
        ...range,
        eventName: "Transfer",
        args: { to: chain.payTo },
      }),
      chain.client.getContractEvents({ ...range, eventName: "AuthorizationUsed" }),
    ]);
    const authorized = used.map((l) => l.transactionHash);
    for (const log of transfers as unknown as {
      transactionHash: Hex;
      args: { from: Address; value: bigint };
    }[]) {
      if (authorized.some((hash) => sameBytes(hash, log.transactionHash)))
        found.push({ txHash: log.transactionHash, from: log.args.from, value: log.args.value });
    }
  }
  return found;
}
