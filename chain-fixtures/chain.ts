/**
 * A real local chain for tests and development: anvil (from @foundry-rs/anvil) started with a
 * given chain id, the project's EIP-3009 token deployed by anvil's first account at its first
 * nonce (so always at the same address), Multicall3 at its canonical address (as on every real
 * chain), and wallets funded with test USDC.
 */
import type { ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { createInterface } from "node:readline";
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  getContractAddress,
  http,
  type Address,
  type Hex,
} from "viem";
import { mnemonicToAccount, privateKeyToAccount } from "viem/accounts";
import { PROGRAM_NOT_FOUND, spawnTied } from "../src/lib/tied-child.js";
import token from "./build/TestUSDC.json" with { type: "json" };
import wallet from "./build/TestSmartWallet.json" with { type: "json" };
import multicall3 from "./multicall3.json" with { type: "json" };
import { rescueStrandedTransactions } from "./stranded-transactions.js";

export const TOKEN_ABI = token.abi;
export const SMART_WALLET_ABI = wallet.abi;
/** anvil's standard test mnemonic: its accounts are everyone's local test wallets. */
/** Multicall3's canonical address, the same on every chain that has it. */
export const MULTICALL3_ADDRESS = multicall3.address as Address;
export const ANVIL_MNEMONIC = "test test test test test test test test test test test junk";
export const anvilAccount = (index: number) =>
  mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: index });
const DEPLOYER = anvilAccount(0);

export interface LocalChain {
  chainId: number;
  rpcUrl: string;
  usdc: Address;
  /** Mints test USDC (atomic units) to an address. */
  fund(to: Address, amount: bigint): Promise<void>;
  /** Deploys an ERC-1271 wallet owned by `owner`. */
  deploySmartWallet(owner: Address): Promise<Address>;
  process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * The anvil binary: ANVIL_BINARY if set, else the npm package of this platform (an optional
 * dependency: the registry this project installs from carries the Linux x64 build), else `anvil`
 * on the PATH (a Foundry install).
 */
function anvilBinary(): string {
  if (process.env.ANVIL_BINARY) return process.env.ANVIL_BINARY;
  const platform = `@foundry-rs/anvil-${process.platform === "win32" ? "win32" : process.platform}-${process.arch === "x64" ? "amd64" : process.arch}`;
  try {
    return createRequire(import.meta.url).resolve(
      `${platform}/bin/anvil${process.platform === "win32" ? ".exe" : ""}`,
    );
  } catch {
    return "anvil";
  }
}

export async function startLocalChain(options: {
  chainId: number;
  usdcName: string;
  usdcVersion: string;
  fund?: Address[];
  amount?: bigint;
  /**
   * Interval mining, as on Base and Polygon (`anvil --block-time`): a block every `blockTime`
   * seconds. Switched on once the token is deployed and the wallets funded, so setting up does
   * not wait a block per transaction.
   */
  blockTime?: number;
}): Promise<LocalChain> {
  const binary = anvilBinary();
  // Tied to this process: a gateway or test run that dies (even by SIGKILL) takes its chain along.
  const child = spawnTied(
    binary,
    [
      "--port",
      "0",
      "--host",
      "127.0.0.1",
      "--chain-id",
      String(options.chainId),
      "--mnemonic",
      ANVIL_MNEMONIC,
      // Anvil keeps recent states in memory and writes older ones under ~/.foundry/anvil/tmp, a
      // directory left behind whenever anvil is killed: test runs and benches filled 64 GB of disk
      // that way on one machine. Nothing here reads state that old.
      "--max-persisted-states",
      "0",
    ],
    { stdout: "pipe", stderr: "ignore" },
  );
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGTERM");
      reject(new Error("anvil did not start within 20 s"));
    }, 20_000);
    createInterface({ input: child.stdout! }).on("line", (line) => {
      const match = /Listening on 127\.0\.0\.1:(\d+)/.exec(line);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(
        new Error(
          code === PROGRAM_NOT_FOUND
            ? `${binary} not found — install Foundry's anvil or set ANVIL_BINARY`
            : `anvil exited with ${code}`,
        ),
      );
    });
  });
  const rpcUrl = `http://127.0.0.1:${port}`;
  const chain = defineChain({
    id: options.chainId,
    name: `local-${options.chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  // A local chain answers at once: its receipts are looked for every 50 ms (viem's default is 4 s),
  // so funding a wallet (a mint and its receipt) takes milliseconds, not most of a second.
  const publicClient = createPublicClient({ chain, transport: http(rpcUrl), pollingInterval: 50 });
  const deployer = createWalletClient({
    chain,
    transport: http(rpcUrl),
    account: DEPLOYER,
  });
  const usdc = getContractAddress({ from: DEPLOYER.address, nonce: 0n });

  const fund = async (to: Address, amount: bigint) => {
    const hash = await deployer.writeContract({
      address: usdc,
      abi: token.abi,
      functionName: "mint",
      args: [to, amount],
    });
    await publicClient.waitForTransactionReceipt({ hash, timeout: 60_000 });
  };
  /**
   * Mints to many wallets at set-up: every mint signed here with its own nonce and sent without
   * waiting for the one before (anvil mines each as it comes, in nonce order), then the receipts
   * read once all are sent. One request per mint instead of five or six and a receipt poll: 400
   * wallets on two chains took minutes on a loaded machine, one at a time.
   */
  const mintAll = async (addresses: Address[], amount: bigint) => {
    if (addresses.length === 0) return;
    let nonce = await publicClient.getTransactionCount({
      address: DEPLOYER.address,
      blockTag: "pending",
    });
    const fees = await publicClient.estimateFeesPerGas();
    const hashes: Hex[] = [];
    for (let i = 0; i < addresses.length; i += 50) {
      const batch = addresses.slice(i, i + 50).map((to) =>
        deployer.writeContract({
          address: usdc,
          abi: token.abi,
          functionName: "mint",
          args: [to, amount],
          nonce: nonce++,
          gas: 200_000n,
          maxFeePerGas: fees.maxFeePerGas * 2n,
          maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
        }),
      );
      hashes.push(...(await Promise.all(batch)));
    }
    for (const hash of hashes) {
      const receipt = await publicClient.waitForTransactionReceipt({ hash, timeout: 60_000 });
      if (receipt.status !== "success") throw new Error(`minting test USDC failed in ${hash}`);
    }
  };
  try {
    // Multicall3's runtime code at its canonical address (see multicall3.json for where it comes from).
    await publicClient.request({
      method: "anvil_setCode" as never,
      params: [MULTICALL3_ADDRESS, multicall3.runtimeBytecode] as never,
    });
    const deployHash = await deployer.deployContract({
      abi: token.abi,
      bytecode: token.bytecode as Hex,
      args: [options.usdcName, options.usdcVersion],
    });
    await publicClient.waitForTransactionReceipt({ hash: deployHash, timeout: 60_000 });
    await mintAll(options.fund ?? [], options.amount ?? 1_000_000_000n);
    if (options.blockTime)
      await publicClient.request({
        method: "evm_setIntervalMining" as never,
        params: [options.blockTime] as never,
      });
  } catch (err) {
    child.kill("SIGTERM"); // a chain that could not be set up is not left running
    throw err;
  }
  const rescuer = rescueStrandedTransactions(rpcUrl);
  return {
    chainId: options.chainId,
    rpcUrl,
    usdc,
    fund,
    async deploySmartWallet(owner) {
      const hash = await deployer.deployContract({
        abi: wallet.abi,
        bytecode: wallet.bytecode as Hex,
        args: [owner],
      });
      return (await publicClient.waitForTransactionReceipt({ hash })).contractAddress!;
    },
    process: child,
    async stop() {
      rescuer.stop();
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/** A fresh random wallet (for tests that need many distinct payers). */
export function randomWallet(seed: number) {
  const key = `0x${(BigInt(seed) + 0x1000n).toString(16).padStart(64, "0")}` as Hex;
  return privateKeyToAccount(key);
}
