import { createPublicClient, http } from "viem";

/**
 * Anvil (1.7, automine) can strand a transaction: when one sender's transactions reach it out of
 * nonce order at the same moment, a transaction whose nonce is already the sender's next can stay
 * in the pool's *queued* part for ever (foundry-rs/foundry#10122). No later block takes it: mining
 * by hand does not, sending the same bytes again is refused as already imported. A real node
 * promotes it to the next block. Seen here once in ~1,500 bursts of five sends, and in CI as a
 * paid call answered 503 after the 30 s receipt wait.
 *
 * While automine is on, this looks at the pool every `everyMs` and re-imports a sender whose
 * lowest queued transaction has been ready for two looks in a row: it reads the sender's pooled
 * transactions' raw bytes, removes them from the pool, and sends the same bytes again in nonce
 * order, so every hash stays the same and the node mines them as it should have. A queued
 * transaction behind a real nonce gap is never touched (its nonce is above the sender's next).
 */
export function rescueStrandedTransactions(rpcUrl: string, everyMs = 500): { stop(): void } {
  // Requests made together leave as one JSON-RPC batch.
  const client = createPublicClient({ transport: http(rpcUrl, { batch: true }) });
  const node = (method: string, params: unknown[] = []) =>
    client.request({ method: method as never, params: params as never }) as Promise<unknown>;
  let stopped = false;
  let suspects = new Set<string>();
  const tick = async () => {
    const [automine, status] = await Promise.all([
      node("anvil_getAutomine"),
      node("txpool_status") as Promise<{ queued: string }>,
    ]);
    if (automine !== true || BigInt(status.queued) === 0n) {
      suspects = new Set();
      return;
    }
    const content = (await node("txpool_content")) as PoolContent;
    const senders = Object.keys(content.queued);
    const next = await Promise.all(
      senders.map((s) => node("eth_getTransactionCount", [s, "latest"]) as Promise<string>),
    );
    const found = strandedHashes(content, new Map(senders.map((s, i) => [s, BigInt(next[i]!)])));
    for (const [sender, hash] of found)
      if (suspects.has(hash)) await reimport(node, sender, content);
    suspects = new Set(found.values());
  };
  const loop = async () => {
    while (!stopped) {
      await tick().catch(() => {}); // a chain stopping or restarting: look again next time
      await new Promise((r) => setTimeout(r, everyMs).unref());
    }
  };
  void loop();
  return {
    stop() {
      stopped = true;
    },
  };
}

/** `txpool_content`: sender → nonce (decimal) → transaction, in its pending and queued parts. */
export interface PoolContent {
  pending: Record<string, Record<string, { hash: string }>>;
  queued: Record<string, Record<string, { hash: string }>>;
}

/** A sender's pooled transactions, lowest nonce first. */
const inNonceOrder = (byNonce: Record<string, { hash: string }>) =>
  Object.keys(byNonce)
    .sort((a, b) => Number(BigInt(a) - BigInt(b)))
    .map((nonce) => ({ nonce: BigInt(nonce), hash: byNonce[nonce]!.hash }));

/**
 * Sender → the hash of its lowest queued transaction, for each sender whose lowest queued
 * transaction is ready (its nonce the sender's next, `next`) with nothing of that sender pending.
 */
export function strandedHashes(
  content: PoolContent,
  next: Map<string, bigint>,
): Map<string, string> {
  const found = new Map<string, string>();
  for (const [sender, byNonce] of Object.entries(content.queued)) {
    if (Object.keys(content.pending[sender] ?? {}).length > 0) continue;
    const lowest = inNonceOrder(byNonce)[0];
    if (lowest && lowest.nonce === next.get(sender)) found.set(sender, lowest.hash);
  }
  return found;
}

async function reimport(
  node: (method: string, params?: unknown[]) => Promise<unknown>,
  sender: string,
  content: PoolContent,
): Promise<void> {
  const pooled = inNonceOrder({ ...content.pending[sender], ...content.queued[sender] });
  const raws = await Promise.all(pooled.map((t) => node("eth_getRawTransactionByHash", [t.hash])));
  if (raws.some((raw) => !raw)) return; // mined or gone meanwhile: nothing is stranded
  await node("anvil_removePoolTransactions", [sender]);
  for (const raw of raws) await node("eth_sendRawTransaction", [raw]).catch(() => {});
}
