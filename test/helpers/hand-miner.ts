import { createPublicClient, http } from "viem";

/**
 * Mines a real anvil by hand: automine off, one block `afterMs` after a transaction reaches the
 * node's pool, as a chain with block times would leave it waiting. `afterMs` may change while it
 * runs; `stop` lets the loop end and turns automine back on.
 */
export interface HandMiner {
  afterMs: number;
  stop(): Promise<void>;
}

export async function startHandMiner(rpcUrl: string, afterMs: number): Promise<HandMiner> {
  const client = createPublicClient({ transport: http(rpcUrl) });
  const node = (method: string, params: unknown[] = []) =>
    client.request({ method: method as never, params: params as never });
  await node("evm_setAutomine", [false]);
  let mining = true;
  const miner: HandMiner = {
    afterMs,
    async stop() {
      mining = false;
      await loop;
      await node("evm_setAutomine", [true]);
    },
  };
  const loop = (async () => {
    while (mining) {
      const { pending } = (await node("txpool_status")) as { pending: string };
      if (BigInt(pending) > 0n) {
        await new Promise((r) => setTimeout(r, miner.afterMs));
        await node("evm_mine");
      } else await new Promise((r) => setTimeout(r, 2));
    }
  })();
  return miner;
}
