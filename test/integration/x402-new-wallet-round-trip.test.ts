import type { Socket } from "node:net";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { call, startGateway, type TestGateway } from "../helpers/gateway.js";
import { signAuthorization, startChains, v1Header } from "../helpers/x402.js";

/**
 * A new wallet's first paid call opens the wallet's account, takes the account's first
 * rate-limit slot and claims the payment in one Redis round trip: all are started in one turn of
 * the loop, so they leave the store's socket in one write, the account's script first; a
 * returning wallet's slot and claim, likewise. Observed on the gateway's own connection to Redis,
 * write by write.
 */
const PRICE = 2000n;
const payers = Array.from({ length: 4 }, () => privateKeyToAccount(generatePrivateKey()));
let chains: Awaited<ReturnType<typeof startChains>>;
let gw: TestGateway;
/** What the store wrote to Redis, one string per socket write. */
const writes: string[] = [];
beforeAll(async () => {
  chains = await startChains(payers.map((p) => p.address));
  gw = await startGateway({ env: { ...chains.env, STATUS_CHECK_INTERVAL_MS: "600000" } });
  const socket = (gw.services.store as unknown as { redis: Redis }).redis.stream as Socket & {
    _write: Socket["_write"];
    _writev: NonNullable<Socket["_writev"]>;
  };
  const write = socket._write.bind(socket);
  const writev = socket._writev.bind(socket);
  socket._write = (chunk, encoding, done) => {
    writes.push(String(chunk));
    write(chunk, encoding, done);
  };
  socket._writev = (chunks, done) => {
    writes.push(chunks.map((c) => String(c.chunk)).join(""));
    writev(chunks, done);
  };
}, 60_000);
afterAll(async () => {
  await gw?.stop();
  await chains?.stop();
});

const pay = async (payer: (typeof payers)[number]) =>
  call(`${gw.url}/v1/tools/hash`, {
    method: "POST",
    body: { text: "a new wallet" },
    headers: {
      "x-payment": v1Header(
        "base-sepolia",
        await signAuthorization({ account: payer, chain: chains.base, value: PRICE }),
      ),
    },
  });

/** The start of the key of a payment record of `payer`'s (its id: chain, token, payer, nonce). */
const claimOf = (payer: (typeof payers)[number]) =>
  `{payments}:payment:${chains.base.chainId}:${chains.base.usdc}:${payer.address}`.toLowerCase();

describe("a wallet's paid call", () => {
  it("opens the wallet's account and takes its first rate-limit slot in one write to Redis, the account first", async () => {
    // The first payment loads the store's scripts into Redis (a first EVALSHA is answered NOSCRIPT).
    expect((await pay(payers[0]!)).status).toBe(200);
    for (const payer of payers.slice(1, 3)) {
      writes.length = 0;
      const res = await pay(payer);
      expect(res.status).toBe(200);
      // Counted once, by the slot taken before settling: a Free account allows 60 a minute.
      expect(res.headers.get("ratelimit-remaining")).toBe("59");
      const account = walletAccountId(payer.address);
      const opened = `wallet ${payer.address.toLowerCase()}`; // the account's opening credit's reason
      const counted = `{${account}}:rl`; // the admission's rate-limit log
      const first = writes.findIndex((w) => w.includes(opened));
      expect(first).toBeGreaterThanOrEqual(0);
      expect(writes.findIndex((w) => w.includes(counted))).toBe(first);
      expect(writes[first]!.indexOf(opened)).toBeLessThan(writes[first]!.indexOf(counted));
      // …and the payment's claim goes in that same write, after them.
      expect(writes[first]!.indexOf(claimOf(payer))).toBeGreaterThan(
        writes[first]!.indexOf(counted),
      );
    }
  }, 60_000);

  it("a returning wallet's rate-limit slot and its payment's claim leave in one write", async () => {
    const payer = payers[1]!;
    writes.length = 0;
    const res = await pay(payer);
    expect([res.status, res.headers.get("ratelimit-remaining")]).toEqual([200, "58"]);
    const counted = `{${walletAccountId(payer.address)}}:rl`;
    const write = writes.find((w) => w.includes(counted));
    expect(write).toBeDefined();
    expect(write!.indexOf(claimOf(payer))).toBeGreaterThan(write!.indexOf(counted));
  }, 60_000);

  it("is served, and counted once, when its rate-limit slot was asked before the account existed", async () => {
    // The account's script held back (as a Cluster redirect or a NOSCRIPT re-send would): the
    // slot is asked first, finds no account, and is asked again once the account is open.
    const { store } = gw.services;
    const open = store.createAccount;
    store.createAccount = async (...args) => {
      await new Promise((r) => setTimeout(r, 50));
      return open.apply(store, args);
    };
    try {
      const res = await pay(payers[3]!);
      expect([res.status, res.headers.get("ratelimit-remaining")]).toEqual([200, "59"]);
    } finally {
      store.createAccount = open;
    }
  }, 60_000);
});
