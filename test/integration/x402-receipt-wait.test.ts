import { createPublicClient, http } from "viem";
import { describe, expect, it } from "vitest";
import { anvilAccount } from "../../chain-fixtures/chain.js";
import { call } from "../helpers/gateway.js";
import { paidGatewayFixture, signAuthorization, v1Header } from "../helpers/x402.js";

/**
 * A settlement's receipt is read as soon as the chain has it: a transaction mined a few
 * milliseconds after its send (anvil's automine mines just after answering the send; a
 * sequencer preconfirms as fast) is not left waiting for the next block-number poll, here set to
 * 5 s (X402_POLL_MS) so that such a wait would show.
 */
const PRICE = 2000n;
const PAYER = anvilAccount(2);
const fixture = paidGatewayFixture({ fund: [PAYER.address], env: { X402_POLL_MS: "5000" } });

describe("settlement receipt wait", () => {
  it("a transaction mined 30 ms after its send is answered well within one polling interval", async () => {
    const { base } = fixture.chains;
    const chain = createPublicClient({ transport: http(base.rpcUrl) });
    const rpc = (method: string, params: unknown[] = []) =>
      chain.request({ method: method as never, params: params as never });
    // A first payment (automine) starts the relayer's nonce sequence and gas cache.
    const pay = async () =>
      call(`${fixture.gw.url}/v1/tools/hash`, {
        method: "POST",
        body: { text: "receipt" },
        headers: {
          "x-payment": v1Header(
            "base-sepolia",
            await signAuthorization({ account: PAYER, chain: base, value: PRICE }),
          ),
        },
      });
    expect((await pay()).status).toBe(200);

    // The next one is mined by hand, 30 ms after it reaches the node: its first receipt read misses.
    await rpc("evm_setAutomine", [false]);
    try {
      const miner = (async () => {
        for (const until = Date.now() + 20_000; Date.now() < until; ) {
          const status = (await rpc("txpool_status")) as { pending: string };
          if (BigInt(status.pending) > 0n) {
            await new Promise((r) => setTimeout(r, 30));
            await rpc("evm_mine");
            return;
          }
          await new Promise((r) => setTimeout(r, 2));
        }
      })();
      const started = performance.now();
      const res = await pay();
      const took = performance.now() - started;
      await miner;
      expect(res.status).toBe(200);
      expect(res.headers.get("x-payment-response")).toBeTruthy();
      // Waiting for the next poll would take 5 s; the quick looks find it within a few tens of ms.
      expect(took).toBeLessThan(2_500);
    } finally {
      await rpc("evm_setAutomine", [true]);
    }
  }, 60_000);
});
