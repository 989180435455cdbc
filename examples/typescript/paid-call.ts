/**
 * Pays for one tool call with x402 from a wallet — no API key, no account. Run:
 *   WALLET_KEY_FILE=./wallet.key npx tsx paid-call.ts
 * (in an ES module project, "type": "module" in package.json, for its top-level await).
 * The file holds the wallet's private key (0x…). The client signs at most MAX_PER_CALL USDC atomic
 * units per call and MAX_PER_SESSION in total. EXTRA_ASSET (network:address, e.g.
 * eip155:84532:0x…) lets it pay with a token other than canonical USDC, like `npm start`'s test token.
 */
import { readFileSync } from "node:fs";
import { privateKeyToAccount } from "viem/accounts";
import { Toolgate } from "toolgate";

const wallet = privateKeyToAccount(
  readFileSync(process.env.WALLET_KEY_FILE ?? "wallet.key", "utf8").trim() as `0x${string}`,
);
const extra = process.env.EXTRA_ASSET?.match(/^(eip155:\d+):(0x[0-9a-fA-F]{40})$/);

const client = new Toolgate({
  wallet,
  spending: {
    maxPerCall: BigInt(process.env.MAX_PER_CALL ?? 10_000), // $0.01
    maxPerSession: BigInt(process.env.MAX_PER_SESSION ?? 100_000), // $0.10
    allowedAssets: extra
      ? [{ network: extra[1] as `eip155:${string}`, asset: extra[2]! }]
      : undefined,
  },
});

const result = await client.tools.callWithDetails("hash", { text: "hello world" });
console.log(`digest ${result.output.digest}`);
console.log(
  `paid ${client.spent} USDC atomic units from ${wallet.address} on ${result.payment?.network}, transaction ${result.payment?.transaction}`,
);
