import { randomBytes } from "node:crypto";
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  publicActions,
  toHex,
  type Address,
  type Hex,
  type LocalAccount,
} from "viem";
import { authorizationMessage, transferArgs } from "../../src/payments/verify.js";
import type { Authorization } from "../../src/payments/wire.js";
import {
  ANVIL_MNEMONIC,
  TOKEN_ABI,
  anvilAccount,
  randomWallet,
  startLocalChain,
  type LocalChain,
} from "../../chain-fixtures/chain.js";
import { mnemonicToAccount } from "viem/accounts";
import { PERIOD_MS } from "../../src/accounts/tiers.js";
import { tierLimits } from "../../src/store/index.js";
import { createRedisStore } from "../../src/store/redis.js";
import type { Store } from "../../src/store/types.js";
import { afterAll, beforeAll } from "vitest";
import {
  dropPrefix,
  spawnGateway,
  startGateway,
  uniquePrefix,
  type TestGateway,
} from "./gateway.js";
import { REDIS_URL } from "./redis.js";
import { freePort } from "./redis-server.js";
import { startRpcProxy } from "./rpc-proxy.js";

/** Two anvil chains standing in for Base Sepolia and Polygon Amoy, and the gateway settings that point at them. */
export const RELAYER = anvilAccount(9);
export const PAY_TO = anvilAccount(8).address;
/** The private key of anvil account `index` (9 unless said: the relayer of most tests). */
export const relayerKey = (index = 9) =>
  toHex(mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: index }).getHdKey().privateKey!);

/** `blockTime`: interval mining (a block every that many seconds) instead of a block per transaction. */
export async function startChains(fund: Address[], options: { blockTime?: number } = {}) {
  const [base, polygon] = await Promise.all([
    startLocalChain({ chainId: 84532, usdcName: "USDC", usdcVersion: "2", fund, ...options }),
    startLocalChain({ chainId: 80002, usdcName: "USDC", usdcVersion: "2", fund, ...options }),
  ]);
  const env = {
    X402_NETWORKS: "base-sepolia,polygon-amoy",
    BASE_SEPOLIA_RPC_URL: base.rpcUrl,
    BASE_SEPOLIA_USDC_ADDRESS: base.usdc,
    POLYGON_AMOY_RPC_URL: polygon.rpcUrl,
    POLYGON_AMOY_USDC_ADDRESS: polygon.usdc,
    X402_PAY_TO: PAY_TO,
    X402_RELAYER_PRIVATE_KEY: relayerKey(),
  };
  return { base, polygon, env, stop: () => Promise.all([base.stop(), polygon.stop()]) };
}

/** Whether the EIP-3009 authorization `(from, nonce)` has been used on `chain` (the token's own record). */
export async function authorizationUsed(
  chain: LocalChain,
  from: Address,
  nonce: string,
): Promise<boolean> {
  const client = createPublicClient({ transport: http(chain.rpcUrl) });
  return (await client.readContract({
    address: chain.usdc,
    abi: TOKEN_ABI,
    functionName: "authorizationState",
    args: [from, nonce as Hex],
  })) as boolean;
}

/**
 * Uses a signed authorization directly on `chain`, from another account (not through the
 * gateway, nor any RPC proxy of the test): a payment the gateway has no record of, already spent.
 * `fees` outbid a settlement waiting in the pool (a front-runner).
 */
export async function useOnChain(
  chain: LocalChain,
  payload: { authorization: unknown; signature: unknown },
  fees?: { maxPriorityFeePerGas: bigint; maxFeePerGas: bigint },
): Promise<void> {
  const outsider = createWalletClient({ account: anvilAccount(6), transport: http(chain.rpcUrl) });
  await outsider.writeContract({
    address: chain.usdc,
    abi: TOKEN_ABI,
    functionName: "transferWithAuthorization",
    args: transferArgs(
      authorizationMessage(payload.authorization as Authorization),
      payload.signature as Hex,
    ),
    chain: null,
    ...(fees ? { gas: 200_000n, ...fees } : {}),
  } as never);
  await new Promise((r) => setTimeout(r, 200));
}

/**
 * A wallet on the Base Sepolia stand-in as `x402-fetch` (v1) wants one: a viem wallet client with
 * the public actions, its chain named as the v1 network is.
 */
export function v1ClientWallet(chain: LocalChain, payer: LocalAccount) {
  const baseSepolia = defineChain({
    id: 84532,
    name: "base-sepolia",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [chain.rpcUrl] } },
  });
  return createWalletClient({
    account: payer,
    chain: baseSepolia,
    transport: http(chain.rpcUrl),
  }).extend(publicActions);
}

export async function balanceOf(chain: LocalChain, who: Address): Promise<bigint> {
  const client = createPublicClient({ transport: http(chain.rpcUrl) });
  return (await client.readContract({
    address: chain.usdc,
    abi: TOKEN_ABI,
    functionName: "balanceOf",
    args: [who],
  })) as bigint;
}

export interface AuthorizationInput {
  account: LocalAccount;
  chain: LocalChain;
  to?: Address;
  value: bigint;
  validAfter?: bigint;
  validBefore?: bigint;
  nonce?: Hex;
  /** Sign for another token or chain than the one paid on (the wrong-asset / wrong-chain cases). */
  domain?: { chainId?: number; verifyingContract?: Address; name?: string };
  signer?: LocalAccount;
}

/** An EIP-3009 authorization signed the way x402 clients sign it. */
export async function signAuthorization(input: AuthorizationInput) {
  const now = BigInt(Math.floor(Date.now() / 1000));
  const authorization = {
    from: input.account.address,
    to: input.to ?? PAY_TO,
    value: input.value.toString(),
    validAfter: (input.validAfter ?? 0n).toString(),
    validBefore: (input.validBefore ?? now + 300n).toString(),
    nonce: input.nonce ?? toHex(randomBytes(32)),
  };
  const signature = await (input.signer ?? input.account).signTypedData({
    domain: {
      name: input.domain?.name ?? "USDC",
      version: "2",
      chainId: input.domain?.chainId ?? input.chain.chainId,
      verifyingContract: input.domain?.verifyingContract ?? input.chain.usdc,
    },
    // Spelled out here, not imported from src/payments/verify.ts: the signer states EIP-3009 on its
    // own, so a mistake in the gateway's copy of the types cannot hide behind the same mistake.
    types: {
      TransferWithAuthorization: [
        { name: "from", type: "address" },
        { name: "to", type: "address" },
        { name: "value", type: "uint256" },
        { name: "validAfter", type: "uint256" },
        { name: "validBefore", type: "uint256" },
        { name: "nonce", type: "bytes32" },
      ],
    },
    primaryType: "TransferWithAuthorization",
    message: {
      ...authorization,
      value: BigInt(authorization.value),
      validAfter: BigInt(authorization.validAfter),
      validBefore: BigInt(authorization.validBefore),
      nonce: authorization.nonce as Hex,
    },
  });
  return { authorization, signature };
}

export const v1Header = (network: string, payload: { authorization: unknown; signature: string }) =>
  Buffer.from(JSON.stringify({ x402Version: 1, scheme: "exact", network, payload })).toString(
    "base64",
  );

/** A v2 PAYMENT-SIGNATURE; `paymentId` names the payment with the x402 payment-identifier extension. */
export const v2Header = (
  accepted: unknown,
  payload: { authorization: unknown; signature: string },
  paymentId?: string,
) =>
  Buffer.from(
    JSON.stringify({
      x402Version: 2,
      accepted,
      payload,
      ...(paymentId
        ? { extensions: { "payment-identifier": { info: { required: false, id: paymentId } } } }
        : {}),
    }),
  ).toString("base64");

/** A fresh wallet (randomWallet's, by seed) holding `amount` test USDC on `chain`. */
export async function fundedWallet(chain: LocalChain, seed: number, amount = 1_000_000n) {
  const wallet = randomWallet(seed);
  await chain.fund(wallet.address, amount);
  return wallet;
}

/** An account's ledger as [kind, amount] pairs, newest first. */
export const ledgerKinds = async (store: Store, accountId: string) =>
  (await store.ledger(accountId, { limit: 1000 })).items.map((e) => [e.kind, e.amount]);

/**
 * A real gateway process with x402 on the test chains (`env` adds to or overrides `chainEnv`), on
 * its own Redis prefix, and a store on that prefix for assertions; `stop` ends and cleans both.
 */
export async function spawnPaidGateway(
  name: string,
  chainEnv: Record<string, string>,
  env: Record<string, string> = {},
) {
  const prefix = uniquePrefix(name);
  const gw = await spawnGateway(prefix, { ...chainEnv, ...env });
  const store = createRedisStore({
    url: REDIS_URL,
    keyPrefix: prefix,
    tiers: tierLimits(),
    periodMs: PERIOD_MS,
  });
  return {
    gw,
    store,
    async stop() {
      await gw.stop();
      await store.close();
      await dropPrefix(prefix);
    },
  };
}

export interface PaidGatewayFixture {
  chains: Awaited<ReturnType<typeof startChains>>;
  gw: TestGateway;
  /** The RPC proxy in front of the Base chain (`proxy: true` only): cut it to make settlements pending. */
  proxy: Awaited<ReturnType<typeof startRpcProxy>>;
}

/**
 * The setup most x402 test files share, registered as the file's beforeAll / afterAll: two anvil
 * chains (with `fund` wallets holding test USDC), optionally an RPC proxy in front of the Base
 * chain with short RPC timeouts, and an in-process gateway with x402 on them (`env` adds to its
 * settings). Its fields are filled before the first test runs: read them inside tests.
 * `publicUrl`: the gateway listens on a port chosen beforehand and names it as its PUBLIC_BASE_URL
 * (what a browser's origin, or a Sign-In with Ethereum domain, must match).
 */
export function paidGatewayFixture(
  options: {
    fund?: Address[];
    proxy?: boolean;
    env?: Record<string, string>;
    publicUrl?: boolean;
  } = {},
): PaidGatewayFixture {
  const fixture = {} as PaidGatewayFixture;
  beforeAll(async () => {
    fixture.chains = await startChains(options.fund ?? []);
    const viaProxy: Record<string, string> = {};
    if (options.proxy) {
      fixture.proxy = await startRpcProxy(fixture.chains.base.rpcUrl);
      Object.assign(viaProxy, {
        BASE_SEPOLIA_RPC_URL: fixture.proxy.url,
        X402_RPC_TIMEOUT_MS: "1500",
        X402_RECEIPT_TIMEOUT_MS: "1500",
      });
    }
    const port = options.publicUrl ? await freePort() : 0;
    const listen: Record<string, string> = port
      ? { PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}` }
      : {};
    fixture.gw = await startGateway({
      env: { ...fixture.chains.env, ...viaProxy, ...listen, ...options.env },
    });
  }, 60_000);
  afterAll(async () => {
    await fixture.gw?.stop();
    await fixture.proxy?.stop();
    await fixture.chains?.stop();
  });
  return fixture;
}
