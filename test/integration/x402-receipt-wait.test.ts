import { describe, expect, it } from "vitest";
import { anvilAccount } from "../../chain-fixtures/chain.js";
import { call } from "../helpers/gateway.js";
import { startHandMiner } from "../helpers/hand-miner.js";
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
    const miner = await startHandMiner(base.rpcUrl, 30);
    try {
      const started = performance.now();
      const res = await pay();
      const took = performance.now() - started;
      expect(res.status).toBe(200);
      expect(res.headers.get("x-payment-response")).toBeTruthy();
      // Waiting for the next poll would take 5 s; the quick looks find it within a few tens of ms.
      expect(took).toBeLessThan(2_500);
    } finally {
      await miner.stop();
    }
  }, 60_000);
});
