/**
 * A local chain as a long-running service (docker compose profile "dev"): anvil on PORT with
 * CHAIN_ID, the test token deployed at 0x5FbDB2315678afecb367f032d93F642f64180aa3, and anvil's
 * ten standard accounts funded with 1,000 test USDC each. Point `<NETWORK>_RPC_URL` at it.
 */
import { createServer } from "node:http";
import { anvilAccount, startLocalChain } from "./chain.js";

const chainId = Number(process.env.CHAIN_ID ?? 84532);
const port = Number(process.env.PORT ?? 8545);
const chain = await startLocalChain({
  chainId,
  usdcName: "USDC",
  usdcVersion: "2",
  fund: Array.from({ length: 10 }, (_, i) => anvilAccount(i).address),
});
// anvil listens on loopback inside the container; relay JSON-RPC from the service's port.
createServer(async (req, res) => {
  let body = "";
  for await (const chunk of req) body += chunk;
  const upstream = await fetch(chain.rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  res.writeHead(upstream.status, { "content-type": "application/json" });
  res.end(await upstream.text());
}).listen(port, "0.0.0.0", () =>
  console.log(JSON.stringify({ msg: "chain listening", chainId, port, usdc: chain.usdc })),
);
for (const signal of ["SIGTERM", "SIGINT"] as const)
  process.once(signal, () => chain.stop().then(() => process.exit(0)));
