import { readdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { startLocalChain } from "../../chain-fixtures/chain.js";

/**
 * A local chain (the tests', the benches', `npm start`'s development chain) leaves nothing on
 * disk. Anvil writes states older than the ones it keeps in memory under ~/.foundry/anvil/tmp, and
 * an anvil that is killed leaves that directory behind: test runs and benches had filled 64 GB
 * of one machine's disk that way.
 */
const STATE_DIR = join(homedir(), ".foundry", "anvil", "tmp");
const stateDirs = () => {
  try {
    return new Set(readdirSync(STATE_DIR));
  } catch {
    return new Set<string>();
  }
};

it("mines over a thousand blocks and leaves no state directory behind", async () => {
  const before = stateDirs();
  const chain = await startLocalChain({ chainId: 84532, usdcName: "USDC", usdcVersion: "2" });
  try {
    const mined = await fetch(chain.rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "anvil_mine", params: ["0x500"] }),
    });
    expect(mined.status).toBe(200);
  } finally {
    await chain.stop();
  }
  expect([...stateDirs()].filter((dir) => !before.has(dir))).toEqual([]);
}, 60_000);
