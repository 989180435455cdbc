import { createSocket, type Socket as UdpSocket } from "node:dgram";
import { lookup } from "node:dns/promises";
import { createServer, type Socket } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DELIVERY_TIMEOUT_MS, attempt, createDeliveryAgent } from "../../src/webhooks/deliver.js";
import { createHostResolver } from "../../src/webhooks/resolve-host.js";
import { blockedHostReason, guardedLookup } from "../../src/webhooks/ssrf.js";
import { startReceiver } from "../helpers/receiver.js";

/**
 * The SSRF guard's DNS must not let one caller's slow host names stall anyone else's. It used
 * getaddrinfo on libuv's four pool threads, with no deadline of ours: a few webhooks named at
 * hosts whose DNS never answers made every other lookup in the process wait, and other accounts'
 * deliveries fail. Here the guard's resolver is pointed at a DNS server that never answers
 * (slow names) and at one that answers at once, or after 2 s.
 */
const sockets: Socket[] = [];
let silentDns: UdpSocket;
let answeringDns: UdpSocket;
let silentTcp: ReturnType<typeof createServer>;
let rx: Awaited<ReturnType<typeof startReceiver>>;
const udpPort = (s: UdpSocket) => s.address().port;

/** A DNS answer to `query`: one A record (`ipv4`) for an A question, no records for any other. */
function answer(query: Buffer, ipv4: number[]): Buffer {
  let end = 12;
  while (query[end] !== 0) end += query[end]! + 1;
  const question = query.subarray(12, end + 5);
  const isA = query.readUInt16BE(end + 1) === 1;
  const header = Buffer.alloc(12);
  query.copy(header, 0, 0, 2); // the query's id
  header.writeUInt16BE(0x8180, 2); // a response, recursion available, no error
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(isA ? 1 : 0, 6);
  // The question's name (a pointer to offset 12), A, IN, TTL 60, four bytes of address.
  const record = Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, ...ipv4]);
  return Buffer.concat([header, question, ...(isA ? [record] : [])]);
}

beforeAll(async () => {
  silentDns = createSocket("udp4").on("message", () => {}); // takes every query, answers none
  // "public.test" is a public address at once; "late.test" is 127.0.0.1 after 2 s.
  answeringDns = createSocket("udp4").on("message", (query, from) => {
    const late = query.includes(Buffer.from("late"));
    const reply = answer(query, late ? [127, 0, 0, 1] : [93, 184, 216, 34]);
    setTimeout(() => answeringDns.send(reply, from.port, from.address), late ? 2_000 : 0);
  });
  silentTcp = createServer((socket) => void sockets.push(socket)); // takes the connection, says nothing
  await Promise.all([
    new Promise<void>((r) => silentDns.bind(0, "127.0.0.1", r)),
    new Promise<void>((r) => answeringDns.bind(0, "127.0.0.1", r)),
    new Promise<void>((r) => silentTcp.listen(0, "127.0.0.1", r)),
  ]);
  rx = await startReceiver();
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  silentDns.close();
  answeringDns.close();
  silentTcp.close();
  await rx.stop();
});

it("lets a lookup of slow names cost only its own request, and fail with a clear reason after its deadline", async () => {
  const slow = createHostResolver({
    servers: [`127.0.0.1:${udpPort(silentDns)}`],
    timeoutMs: 3_000,
  });
  const fast = createHostResolver({ servers: [`127.0.0.1:${udpPort(answeringDns)}`] });
  const started = Date.now();
  // More slow names in flight than libuv has pool threads (4), at registration and at connection.
  const registrations = Array.from({ length: 8 }, (_, i) =>
    blockedHostReason(new URL(`https://a${i}.slow.test/`), false, slow),
  );
  const connections = Array.from(
    { length: 8 },
    (_, i) =>
      new Promise<Error | null>((resolve) =>
        guardedLookup(false, slow)(`c${i}.slow.test`, { all: true }, (err) => resolve(err)),
      ),
  );
  await new Promise((r) => setTimeout(r, 200));

  // Meanwhile: a name another DNS server answers, a lookup on the pool threads (what every other
  // part of the process uses), and a delivery to a receiver (localhost needs no DNS at all).
  const t = Date.now();
  expect(await blockedHostReason(new URL("https://public.test/"), false, fast)).toBeNull();
  expect((await lookup("127.0.0.1", { all: true })).length).toBe(1);
  await Promise.all(Array.from({ length: 8 }, () => lookup("localhost")));
  const delivered = await attempt(
    createDeliveryAgent(true, slow),
    `https://localhost:${rx.port}/hook`,
    {},
    "{}",
  );
  expect(delivered).toMatchObject({ status: 200, error: null });
  expect(Date.now() - t).toBeLessThan(1_000);

  // The slow names fail after the deadline: refused at registration (as any name that does not
  // resolve to a public address), and at connection with an error that says what happened.
  expect(await Promise.all(registrations)).toEqual(
    Array.from({ length: 8 }, (_, i) => `a${i}.slow.test does not resolve to a public address`),
  );
  // EAI_AGAIN, as dns.lookup said it: a failure worth retrying, which callers already name.
  expect(
    (await Promise.all(connections)).map((err) => [
      (err as NodeJS.ErrnoException).code,
      err?.message,
    ]),
  ).toEqual(
    Array.from({ length: 8 }, (_, i) => [
      "EAI_AGAIN",
      `DNS did not answer for c${i}.slow.test within 3 s`,
    ]),
  );
  expect(Date.now() - started).toBeGreaterThanOrEqual(3_000);
  expect(Date.now() - started).toBeLessThan(4_000);
}, 15_000);

it("keeps localhost refused unless private targets are allowed, without asking DNS", async () => {
  const slow = createHostResolver({
    servers: [`127.0.0.1:${udpPort(silentDns)}`],
    timeoutMs: 3_000,
  });
  const t = Date.now();
  expect(await blockedHostReason(new URL("https://localhost/"), false, slow)).toBe(
    "localhost does not resolve to a public address",
  );
  expect(await blockedHostReason(new URL("https://app.localhost./"), false, slow)).toBe(
    "app.localhost. does not resolve to a public address",
  );
  expect(await blockedHostReason(new URL("https://localhost:8443/"), true, slow)).toBeNull();
  expect(await blockedHostReason(new URL("https://[::1]/"), false, slow)).toBe(
    "::1 is in the loopback range",
  );
  expect(Date.now() - t).toBeLessThan(500);
});

it("starts the receiver's 10 s once our own DNS has answered", async () => {
  const late = createHostResolver({ servers: [`127.0.0.1:${udpPort(answeringDns)}`] });
  const port = (silentTcp.address() as { port: number }).port;
  const result = await attempt(
    createDeliveryAgent(true, late),
    `https://late.test:${port}/`,
    {},
    "{}",
  );
  expect(result.error).toBe("no answer within 10 s");
  expect(result.durationMs).toBeGreaterThanOrEqual(DELIVERY_TIMEOUT_MS + 2_000 - 100);
  expect(result.durationMs).toBeLessThan(DELIVERY_TIMEOUT_MS + 3_500);
}, 20_000);
