import type { Socket } from "node:net";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { call, startGateway, type TestGateway } from "../helpers/gateway.js";
import { signAuthorization, startChains, v1Header } from "../helpers/x402.js";

/**
 * A new wallet's first paid call opens the wallet's account and takes the account's first
 * rate-limit slot in one Redis round trip: both are started in one turn of the loop, so they leave
 * the store's socket in one write, the account's script first. Observed on the gateway's own
 * connection to Redis, write by write.
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

describe("a new wallet's first paid call", () => {
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
    }
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
