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
  let stopped = false;
  let suspects = new Set<string>();
  const tick = async () => {
    const [automine, status] = await rpcBatch(rpcUrl, [
      ["anvil_getAutomine", []],
      ["txpool_status", []],
    ]);
    if (automine !== true || BigInt((status as { queued: string }).queued) === 0n) {
      suspects = new Set();
      return;
    }
    const content = (await rpc(rpcUrl, "txpool_content", [])) as PoolContent;
    const senders = Object.keys(content.queued);
    const next = (await rpcBatch(
      rpcUrl,
      senders.map((s) => ["eth_getTransactionCount", [s, "latest"]]),
    )) as string[];
    const found = strandedHashes(content, new Map(senders.map((s, i) => [s, BigInt(next[i]!)])));
    for (const [sender, hash] of found)
      if (suspects.has(hash)) await reimport(rpcUrl, sender, content);
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
    const lowest = Object.keys(byNonce).sort((a, b) => Number(BigInt(a) - BigInt(b)))[0];
    if (lowest !== undefined && BigInt(lowest) === next.get(sender))
      found.set(sender, byNonce[lowest]!.hash);
  }
  return found;
}

async function reimport(rpcUrl: string, sender: string, content: PoolContent): Promise<void> {
  const byNonce = { ...content.pending[sender], ...content.queued[sender] };
  const hashes = Object.keys(byNonce)
    .sort((a, b) => Number(BigInt(a) - BigInt(b)))
    .map((n) => byNonce[n]!.hash);
  const raws = (await rpcBatch(
    rpcUrl,
    hashes.map((h) => ["eth_getRawTransactionByHash", [h]]),
  )) as (string | null)[];
  if (raws.some((raw) => !raw)) return; // mined or gone meanwhile: nothing is stranded
  await rpc(rpcUrl, "anvil_removePoolTransactions", [sender]);
  for (const raw of raws) await rpc(rpcUrl, "eth_sendRawTransaction", [raw]).catch(() => {});
}

async function rpc(rpcUrl: string, method: string, params: unknown[]): Promise<unknown> {
  return (await rpcBatch(rpcUrl, [[method, params]]))[0];
}

async function rpcBatch(rpcUrl: string, calls: [string, unknown[]][]): Promise<unknown[]> {
  if (calls.length === 0) return [];
  const res = await fetch(rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(
      calls.map(([method, params], id) => ({ jsonrpc: "2.0", id, method, params })),
    ),
  });
  const answers = (await res.json()) as { id: number; result?: unknown; error?: unknown }[];
  return calls.map((_, id) => {
    const answer = answers.find((a) => a.id === id);
    if (!answer || answer.error)
      throw new Error(`${calls[id]![0]}: ${JSON.stringify(answer?.error)}`);
    return answer.result;
  });
}
