import { execFile } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomWallet } from "../../chain-fixtures/chain.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import {
  PAY_TO,
  balanceOf,
  fundedWallet,
  ledgerKinds,
  spawnPaidGateway,
  startChains,
} from "../helpers/x402.js";

/**
 * The official Python x402 client (the `x402` distribution on PyPI, v2, with its EVM "exact"
 * scheme and its `requests` integration) pays a REST call on a real gateway process and a real
 * chain. The client is installed from PyPI into a virtual environment under the OS temp dir,
 * kept between runs (named after the pinned version).
 */
const X402_PYTHON = "2.25.0";
const VENV = join(tmpdir(), `toolgate-x402-python-${X402_PYTHON}`);
const python = join(VENV, "bin", "python");
const run = promisify(execFile);
const PRICE = 2000n;
const SEED = 51_001;
/** randomWallet's key for a seed (chain-fixtures/chain.ts). */
const PAYER_KEY = `0x${(BigInt(SEED) + 0x1000n).toString(16).padStart(64, "0")}`;
let chains: Awaited<ReturnType<typeof startChains>>;
let paid: Awaited<ReturnType<typeof spawnPaidGateway>>;

beforeAll(async () => {
  if (!existsSync(join(VENV, ".installed"))) {
    await run("python3", ["-m", "venv", VENV]);
    await run(
      join(VENV, "bin", "pip"),
      ["install", "--quiet", `x402[evm,clients]==${X402_PYTHON}`],
      { timeout: 600_000 },
    );
    writeFileSync(join(VENV, ".installed"), X402_PYTHON);
  }
  chains = await startChains([]);
  await fundedWallet(chains.base, SEED);
  paid = await spawnPaidGateway("x402py", chains.env);
}, 900_000);
afterAll(async () => {
  await paid?.stop();
  await chains?.stop();
});

const CLIENT = `
import json, os
from eth_account import Account
from x402 import x402ClientSync
from x402.http.clients import x402_requests
from x402.mechanisms.evm.exact import ExactEvmScheme

client = x402ClientSync()
# Our test token is not the canonical USDC address: opt in to it, as the client asks.
client.set_spend_controls({"allowed_assets": [{"network": "eip155:84532", "asset": os.environ["ASSET"]}]})
client.register("eip155:84532", ExactEvmScheme(signer=Account.from_key(os.environ["PAYER_KEY"])))
session = x402_requests(client)
res = session.post(os.environ["URL"], json={"text": "hello world"})
print(json.dumps({"status": res.status_code, "body": res.json(), "payment_response": res.headers.get("PAYMENT-RESPONSE")}))
`;

describe("the official Python x402 client", () => {
  it("pays a REST call: the tool answers, the price moves on chain and the wallet's account is credited and charged once", async () => {
    const payer = randomWallet(SEED);
    const before = await balanceOf(chains.base, PAY_TO);
    const { stdout } = await run(python, ["-c", CLIENT], {
      env: {
        PATH: process.env.PATH,
        PAYER_KEY,
        ASSET: chains.base.usdc,
        URL: `${paid.gw.url}/v1/tools/hash`,
      },
      timeout: 120_000,
    });
    const result = JSON.parse(stdout.trim().split("\n").pop()!);
    expect(result.status).toBe(200);
    expect(result.body.digest).toBe(
      "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9",
    );
    expect(JSON.parse(Buffer.from(result.payment_response, "base64").toString())).toMatchObject({
      success: true,
      network: "eip155:84532",
      payer: payer.address,
    });
    expect(await balanceOf(chains.base, PAY_TO)).toBe(before + PRICE);
    expect(await ledgerKinds(paid.store, walletAccountId(payer.address))).toEqual([
      ["debit", -1],
      ["purchase", 1],
      ["grant", 0],
    ]);
  }, 180_000);
});
