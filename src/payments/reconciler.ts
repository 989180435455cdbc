import { getAddress, parseAbiItem, type Address, type Hex } from "viem";
import { sameBytes } from "../lib/hex.js";
import { every } from "../lib/periodic.js";
import type { Foundation, Services } from "../services.js";
import type { PaymentRecord, RelayedTransaction } from "../store/types.js";
import type { NetworkClients } from "./chain.js";
import type { Payments } from "./payments.js";
import { transferInReceipt } from "./receipt.js";
import type { Relayers } from "./relayers.js";
import { replacementFees } from "./replacement-fees.js";
import { authorizationUsed } from "./verify.js";

const AUTHORIZATION_USED = parseAbiItem(
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
);
const AUTHORIZATION_CANCELED = parseAbiItem(
  "event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce)",
);

/**
 * Finishes settlements whose outcome was unknown (a receipt that never came, an RPC that went
 * silent after the send) and those whose process died while settling. The chain decides: if the
 * authorization was used, the transfer is found through its AuthorizationUsed log, checked in
 * its receipt and credited (once, as ever); if it is unused and its process died before recording
 * a send, it is sent now (Payments.settleAbandoned); if it expired unused, or was used by a
 * transaction that did not pay us (or cancelled), nothing moved and the claim is released. Runs
 * in every process; the credit is idempotent, so two reconcilers finishing the same payment
 * credit it once.
 */
export function startReconciler(
  services: Foundation & Pick<Services, "books">,
  payments: Payments,
  intervalMs = 1000,
): { stop(): Promise<void> } {
  // The reconciler's backlog, for operators: payments whose money may have moved but is not credited yet.
  services.metrics.onScrape(async () =>
    services.metrics.queueDepth.set(
      { queue: "payments-unsettled" },
      (await services.store.openPayments()).length,
    ),
  );
  // A gap is judged only once any payment transaction at that nonce had its receipt wait and its
  // own stuck replacement: those re-send the payment, a filler would cancel it.
  const gapAfterMs = payments.config.receiptTimeoutMs + payments.config.stuckAfterMs;
  const tick = async () => {
    const open = await services.store.openPayments();
    // One pass judges its payments at one instant, so a batch's payments, which share one
    // transaction, are all stuck or all not; the first of them to find it stuck replaces it for all.
    const pass: Pass = {
      now: Date.now(),
      replaced: new Map(),
      latest: latestTransactions(open),
      mined: new Map(),
    };
    for (const record of open) {
      // A settlement still in the hands of a live process is left to it.
      if (record.state === "settling" && pass.now - record.createdAt < payments.settlingDeadlineMs)
        continue;
      try {
        await reconcile(services, payments, record, pass);
      } catch (err) {
        services.log.warn(
          { payment: record.id, err: String(err) },
          "could not reconcile a pending payment yet",
        );
      }
    }
    const held =
      (network: string, relayers: Relayers) => (relayer: Address, nonce: number, since: number) =>
        open.some((r) =>
          mayHoldNonce(r, {
            network,
            relayer,
            nonce,
            since,
            now: Date.now(),
            settlingDeadlineMs: payments.settlingDeadlineMs,
            relayerOf: (from) => relayers.account(from)?.address,
          }),
        );
    for (const clients of new Set(payments.clients.values())) {
      const relayers = payments.relayers(clients);
      await relayers
        .repairGaps(gapAfterMs, held(clients.network.name, relayers))
        .catch((err: unknown) =>
          services.log.warn(
            { network: clients.network.name, err: String(err) },
            "could not check the relayers' nonces yet",
          ),
        );
    }
  };
  return every(intervalMs, tick, (err) =>
    services.log.warn({ err: String(err) }, "reconciler tick failed; retrying"),
  );
}

/**
 * Whether a payment may be what holds a relayer's nonce that the chain has been stuck at since
 * `since`, so that nonce is not filled with a self-transfer (the filler, at higher fees, would
 * displace the payment's own transaction from the node's pool, and the payment's replacement
 * would then be refused as underpriced until its authorization expired):
 * - a payment whose transaction is known (`relay`) holds exactly its relayer and nonce;
 * - a payment still being settled by a live process does not know its transaction yet (its
 *   record learns it only when the settlement ends): it may hold any nonce of the network's
 *   relayers if it began before the chain was seen stuck there, until its settling deadline. One
 *   begun later cannot have taken that nonce, so a steady stream of new payments never keeps a
 *   real gap open.
 */
export function mayHoldNonce(
  record: PaymentRecord,
  at: {
    network: string;
    relayer: Address;
    nonce: number;
    since: number;
    now: number;
    settlingDeadlineMs: number;
    relayerOf: (from: string | undefined) => Address | undefined;
  },
): boolean {
  if (record.network !== at.network) return false;
  if (record.relay)
    return (
      record.relay.nonce === at.nonce &&
      sameBytes(at.relayerOf(record.relay.from) ?? "", at.relayer)
    );
  return (
    record.state === "settling" &&
    record.createdAt <= at.since &&
    at.now - record.createdAt < at.settlingDeadlineMs
  );
}

/** A transaction we sent for payments, and what it was. */
type Sent = { hash: Hex; relay: RelayedTransaction };

/**
 * One reconciler pass: the instant its payments are judged at, the replacements it made, and the
 * latest transaction sent for each payment transaction (see `latestTransactions`).
 */
interface Pass {
  now: number;
  replaced: Map<string, Sent | null>;
  latest: Map<string, Sent>;
  /** Each relayer's mined nonce count, read once per pass (the transactions waiting behind a lower nonce each ask). */
  mined: Map<string, Promise<number>>;
}

/** One transaction's identity across its replacements: its relayer, its nonce, what it carries. */
const transactionKey = (relay: RelayedTransaction) =>
  `${(relay.from ?? "").toLowerCase()}:${relay.nonce}:${relay.data.toLowerCase()}`;

/**
 * The latest sending (the highest fees) of each payment transaction among `records`. A batch's
 * payments follow it together: one whose record still names an earlier sending (another pass,
 * another process, or a crash between their saves replaced it) follows the latest instead of
 * replacing the earlier one again, which would split the batch across competing transactions.
 */
export function latestTransactions(records: PaymentRecord[]): Map<string, Sent> {
  const latest = new Map<string, Sent>();
  for (const r of records) {
    if (!r.relay || !r.txHash) continue;
    const key = transactionKey(r.relay);
    const seen = latest.get(key);
    if (!seen || BigInt(r.relay.maxFeePerGas) > BigInt(seen.relay.maxFeePerGas))
      latest.set(key, { hash: r.txHash as Hex, relay: r.relay });
  }
  return latest;
}

/**
 * A settlement transaction still waiting at its nonce: sent again at that nonce with higher fees —
 * the same transaction (a single transfer or a whole batch) while any authorization in it can
 * still happen, a zero-value self-transfer once none can (`cancel`). Only the relayer's lowest
 * unmined nonce can be stuck: a transaction above it waits behind a lower one (a hole, one not
 * mined yet) and is mined once that is; replaced meanwhile it only bid higher pass after pass
 * (31 queued settlements, ~580 replacements, 68 ETH spent when the holes filled). Fees: see
 * `replacementFees`; at its cap the same transaction is sent again unchanged, so a node that
 * dropped it has it back and one that has it refuses it harmlessly.
 */
async function replaceStuck(
  clients: NetworkClients,
  relay: RelayedTransaction,
  cancel: boolean,
  relayers: Relayers,
  pass: Pass,
): Promise<Sent | null> {
  const account = relayers.account(relay.from);
  if (!account) return null; // sent by a relayer key no longer configured: nothing of ours can replace it
  if ((await minedCount(clients, account.address, pass)) !== relay.nonce) return null;
  const sent = {
    maxFeePerGas: BigInt(relay.maxFeePerGas),
    maxPriorityFeePerGas: BigInt(relay.maxPriorityFeePerGas),
  };
  const raised = replacementFees(sent, await clients.public.estimateFeesPerGas());
  const fees = raised ?? sent;
  const next: RelayedTransaction = {
    ...relay,
    maxFeePerGas: String(fees.maxFeePerGas),
    maxPriorityFeePerGas: String(fees.maxPriorityFeePerGas),
    sentAt: Date.now(),
  };
  const signed = await account.signTransaction({
    chainId: clients.network.chainId,
    type: "eip1559",
    nonce: relay.nonce,
    gas: BigInt(relay.gas),
    ...fees,
    ...(cancel
      ? { to: account.address, value: 0n }
      : {
          to: (relay.to as Address | undefined) ?? clients.network.usdc.address,
          data: relay.data as Hex,
        }),
  } as never);
  const sending = clients.public.sendRawTransaction({ serializedTransaction: signed });
  // Unchanged, a refusal ("already known", "underpriced") is the node keeping what it has; the
  // next look is a stuck period away (`sentAt`), not the next pass.
  const hash = raised ? await sending : await sending.catch(() => clients.transactionHash(signed));
  return { hash, relay: next };
}

/** `relayer`'s mined nonce count, read once per pass. */
function minedCount(clients: NetworkClients, relayer: Address, pass: Pass): Promise<number> {
  const key = `${clients.network.chainId}:${relayer.toLowerCase()}`;
  let mined = pass.mined.get(key);
  if (!mined) {
    mined = clients.public.getTransactionCount({ address: relayer, blockTag: "latest" });
    pass.mined.set(key, mined);
  }
  return mined;
}

/**
 * The transaction that used the authorization, from its AuthorizationUsed log (or, given
 * AuthorizationCanceled, that cancelled it): read forward from the block seen before the
 * settlement was sent, in ranges of at most `rangeBlocks` (hosted RPCs cap eth_getLogs ranges,
 * often at 1,000 to 10,000 blocks). A record without that block (written by an older version) is
 * searched over the last ten ranges only.
 */
async function findAuthorizationUse(
  clients: NetworkClients,
  record: PaymentRecord,
  rangeBlocks: number,
  event: typeof AUTHORIZATION_USED | typeof AUTHORIZATION_CANCELED = AUTHORIZATION_USED,
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
      event,
      args: { authorizer: getAddress(auth.from!), nonce: auth.nonce as Hex },
      fromBlock: from,
      toBlock: to,
    });
    if (logs[0]) return logs[0].transactionHash;
  }
  return null;
}

async function reconcile(
  services: Foundation & Pick<Services, "books">,
  payments: Payments,
  found: PaymentRecord,
  pass: Pass,
): Promise<"settled" | "released" | "pending"> {
  let record = found;
  const clients = payments.clients.get(record.network);
  if (!clients) return "pending";
  const auth = record.authorization;
  const from = getAddress(auth.from!);
  const nonce = auth.nonce as Hex;
  const token = clients.network.usdc.address;
  const used = await authorizationUsed(clients, from, nonce);
  if (!used) {
    const block = await clients.public.getBlock({ blockTag: "latest" });
    const expired = block.timestamp >= BigInt(auth.validBefore!);
    // Its process died before its send was recorded (perhaps before it sent at all): sent now.
    if (!expired && record.state === "settling" && !record.relay) {
      const abandoned = await payments.settleAbandoned(record);
      if (abandoned !== "settled") return abandoned === "open" ? "pending" : "released";
      services.log.info(
        { payment: record.id },
        "abandoned payment sent by this process, settled and credited",
      );
      return "settled";
    }
    const key = record.relay ? transactionKey(record.relay) : null;
    const latest = key ? pass.latest.get(key) : undefined;
    if (latest && latest.hash !== record.txHash) {
      record = { ...record, txHash: latest.hash, relay: latest.relay };
      await services.store.savePayment(record);
    }
    // A transaction of ours still waiting at its nonce holds up every later one: replace it
    // (same nonce, higher fees) — a batch once for all its payments, which all then follow the replacement.
    if (key && record.relay && pass.now - record.relay.sentAt >= payments.config.stuckAfterMs) {
      if (!pass.replaced.has(key)) {
        // Cancelled only once none of the transaction's authorizations can happen any more.
        const cancel = block.timestamp >= BigInt(record.relay.validBefore ?? auth.validBefore!);
        const sent = await replaceStuck(
          clients,
          record.relay,
          cancel,
          payments.relayers(clients),
          pass,
        );
        pass.replaced.set(key, sent);
        if (sent)
          services.log.warn(
            {
              payment: record.id,
              nonce: record.relay.nonce,
              tx: sent.hash,
              maxFeePerGas: sent.relay.maxFeePerGas,
              cancel,
            },
            "replaced a stuck settlement transaction",
          );
      }
      const replacement = pass.replaced.get(key);
      if (replacement) {
        await services.store.savePayment({
          ...record,
          txHash: replacement.hash,
          relay: replacement.relay,
        });
        if (!expired) return "pending";
      }
    }
    if (expired) {
      await payments.release(record);
      services.log.info({ payment: record.id }, "pending payment expired unused: released");
      return "released";
    }
    return "pending";
  }
  // The transfer that happened (the original or a replacement): found by its AuthorizationUsed log,
  // else by the transaction we sent.
  const usedBy = await findAuthorizationUse(clients, record, payments.config.logRangeBlocks);
  // Cancelled by its payer (EIP-3009 cancelAuthorization): used for good, by no transfer at all.
  if (
    !usedBy &&
    (await findAuthorizationUse(
      clients,
      record,
      payments.config.logRangeBlocks,
      AUTHORIZATION_CANCELED,
    ))
  )
    return releaseUnpaid(services, payments, record, null);
  const txHash = usedBy ?? (record.txHash as Hex | null);
  if (!txHash) return "pending";
  const receipt = await clients.public.getTransactionReceipt({ hash: txHash });
  const paid = transferInReceipt(receipt, {
    token,
    from,
    to: (record.payTo as Address | undefined) ?? payments.config.payTo,
    value: BigInt(record.value),
    nonce,
  });
  // The token uses an authorization once: the transaction that used it did not pay us, so nothing
  // ever can. Only another's use found by its log is that proof: our own transaction without the
  // transfer (its log not found yet, or a transfer this record does not describe) is an error to
  // look into, kept pending, never quietly closed.
  const ours = clients.relayers.some((relayer) => sameBytes(relayer.address, receipt.from));
  if (!paid && usedBy && !ours) return releaseUnpaid(services, payments, record, usedBy);
  if (!paid) {
    services.log.error(
      { payment: record.id, tx: txHash },
      "authorization used without the expected transfer; not credited",
    );
    return "pending";
  }
  await payments.credit({ ...record, state: "settled", txHash });
  services.log.info({ payment: record.id, tx: txHash }, "pending payment settled and credited");
  return "settled";
}

/**
 * A payment whose authorization was used up without paying us (the payer used its nonce for
 * another transfer, or cancelled it): nothing moved to us and nothing can, so it is released,
 * never credited, and no longer checked. A retry of it meets the chain ("already used"). Our own
 * transaction, if any, can only revert: mined, its nonce is used; still waiting or dropped, the
 * record no longer holds its nonce (`mayHoldNonce`), so a gap there is filled (`repairGaps`).
 */
async function releaseUnpaid(
  services: Foundation,
  payments: Payments,
  record: PaymentRecord,
  usedBy: Hex | null,
): Promise<"released"> {
  await payments.release(record);
  services.log.warn(
    { payment: record.id, tx: usedBy },
    "authorization used or cancelled elsewhere without paying us: released, not credited",
  );
  return "released";
}
