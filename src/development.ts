import { createHmac, randomBytes } from "node:crypto";
import { createAccountRecord, issueKey } from "./accounts/accounts.js";
import { hashApiKey } from "./accounts/api-keys.js";
import type { Config } from "./config.js";
import type { Services } from "./services.js";
import { type AccountRecord, isRevoked, type Store } from "./store/types.js";

/**
 * What development mode (`npm start` with nothing set) makes up, made up so that every process
 * of one deployment, and every restart on the same Redis, agrees on it:
 *
 * - the secret key: created once and kept in the store (SET NX), so a webhook secret sealed or
 *   a link signed by one process is opened by every other;
 * - the admin key, the development account and its key: derived from that secret key, so they
 *   are the same on every process and after a restart, without storing a key in clear.
 *
 * In memory, all of it lasts as long as the process. Production sets SECRET_KEY and
 * ADMIN_API_KEY and seeds nothing.
 */

/** The keyring to use: SECRET_KEY when given, else the deployment's development key from the store. */
export async function resolveSecretKeys(config: Config, store: Store): Promise<string[]> {
  if (config.secretKeys.length > 0) return config.secretKeys;
  return [await store.keepFirst("development-secret-key", randomBytes(32).toString("hex"))];
}

const derive = (secret: string, purpose: string) =>
  createHmac("sha256", secret).update(`toolgate development\0${purpose}`).digest();

/** `length` characters of `alphabet` drawn from a derived digest (a small modulo bias is harmless here). */
function derivedString(secret: string, purpose: string, alphabet: string, length: number): string {
  const bytes = Buffer.concat([derive(secret, `${purpose}\0a`), derive(secret, `${purpose}\0b`)]);
  return Array.from(bytes.subarray(0, length), (b) => alphabet[b % alphabet.length]).join("");
}

export const developmentAdminKey = (secret: string) =>
  `tg_admin_${derive(secret, "admin key").toString("hex").slice(0, 40)}`;

const DEV_EMAIL = "dev@localhost";
const DEV_CREDITS = 1000;
const SEED_LOCK_MS = 15_000;

/**
 * The development account (Pro tier, 1,000 credits) and its key: created on the first start,
 * found again on later ones (with Redis), under a lock so two processes starting together
 * create it once. A key revoked by hand is issued again.
 */
export async function developmentAccount(
  services: Services,
): Promise<{ account: AccountRecord; apiKey: string; created: boolean }> {
  const secret = services.config.secretKeys[0]!;
  const id = `acct_${derivedString(secret, "account id", "0123456789abcdefghijklmnopqrstuvwxyz", 16)}`;
  const keySecret = derivedString(
    secret,
    "api key",
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    32,
  );
  const { store } = services;
  const deadline = Date.now() + SEED_LOCK_MS;
  let token: string | null = null;
  while (!(token = await store.acquireLock("development-account", SEED_LOCK_MS))) {
    if (Date.now() > deadline)
      throw new Error("another process held the development account's lock for 15 s");
    await new Promise((r) => setTimeout(r, 100));
  }
  try {
    let account = await store.getAccount(id);
    const created = !account;
    account ??= await createAccountRecord(services, {
      id,
      email: DEV_EMAIL,
      tier: "pro",
      credits: DEV_CREDITS,
      reason: "development seed",
    });
    // Its address is claimed as sign-up claims one, so the dashboard's e-mailed sign-in link finds
    // the account (unclaimed, the form said a link was on its way and none was sent). Claimed on
    // later starts too, for an account seeded before this was done; a no-op when already held.
    await store.claimEmail(DEV_EMAIL, id, Date.now());
    const apiKey = `tg_live_${id.slice(5)}_${keySecret}`;
    const keys = await store.listKeys(id);
    const active = keys.some((k) => k.hash === hashApiKey(apiKey) && !isRevoked(k));
    if (!active) await issueKey(services, id, "development", keySecret);
    return { account, apiKey, created };
  } finally {
    await store.releaseLock("development-account", token);
  }
}

/** Where state lives, for the banner: the Redis address without its credentials. */
function describeStore(config: Config): string {
  if (!config.redisUrl) return "in memory: nothing is kept when the process stops";
  const url = new URL(config.redisUrl);
  url.username = "";
  url.password = "";
  return `Redis at ${url.href.replace(/\/$/, "")} (key prefix ${config.redisKeyPrefix}): kept across restarts and shared by every process on it`;
}

export function developmentBanner(
  config: Config,
  dev: { account: AccountRecord; apiKey: string; created: boolean },
  adminKeyDerived: boolean,
  chainRpcUrl: string | null,
): string {
  const base = config.publicBaseUrl;
  const pay = chainRpcUrl
    ? `  x402: a local chain standing in for base-sepolia runs at ${chainRpcUrl}; anvil's standard test accounts\n` +
      `    hold 1,000 test USDC each. Pay for a call from one (no API key):\n` +
      `    CHAIN_RPC_URL=${chainRpcUrl} TOOLGATE_URL=${base} npm run pay -- hash '{"text":"hello"}'\n`
    : config.x402
      ? `  x402: on (${config.x402.networks.map((n) => n.name).join(", ")})\n`
      : config.devChain
        ? "  x402: off (no local chain: install Foundry's anvil or set ANVIL_BINARY)\n"
        : "  x402: off (DEV_CHAIN=0: no local chain started)\n";
  return (
    `\nToolgate is running in development mode at ${base}.\n` +
    `  State: ${describeStore(config)}.\n` +
    `  Development account ${dev.account.id} (${dev.created ? "created" : "reused"}; ${dev.account.tier} tier, ${dev.account.balance} credits):\n` +
    `    x-api-key: ${dev.apiKey}\n` +
    `  Admin key: ${adminKeyDerived ? config.adminApiKey : "the ADMIN_API_KEY you set"}\n` +
    `  Try: curl -s ${base}/api/v1/account -H 'x-api-key: ${dev.apiKey}'\n` +
    pay +
    "\n"
  );
}
