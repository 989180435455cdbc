/**
 * x402 paid calls on a local anvil chain, against the chain's own settlement time measured in
 * the same run. The baseline ("chain only") is the floor a relayer cannot beat: pre-signed
 * transferWithAuthorization transactions (nonce, gas and fees fixed before the clock starts) from
 * as many bare relayers as the gateway has keys (up to three),
 * each sent and confirmed both ways the gateway can: one eth_sendRawTransactionSync (EIP-7966,
 * answered with the receipt), and a sendRawTransaction with its receipt read at once, then in
 * quick looks (src/payments/receipt-wait.ts). The faster of the two is the floor the ratios and
 * budgets are taken against. anvil costs more per transaction as its chain grows, so every
 * measured run (the floor's two, sync and plain, and each gateway's) starts from the same chain:
 * reverted to a snapshot taken after the warm-up, the gateways' relayer nonce sequences dropped
 * so they read the chain's count again (`freshChain`). The gateway runs send paid `hash` calls
 * (verify → claim → settle → credit → debit → forward → answer). Both go through the same
 * loopback JSON-RPC proxy, which counts round trips (a JSON-RPC batch is one) and can add a delay
 * to every request, as a distant RPC would.
 *
 * Cases, each with two gateways — settling each payment alone, and batching the payments that
 * arrive within BENCH_BATCH_WINDOW_MS into one Multicall3 transaction: automine at 8 and 32
 * concurrent payers; an RPC 50 ms away (8 and 32); interval mining (a block every 2 s, as on Base
 * and Polygon) with 200 payers paying at once, counting the blocks between a payment's arrival and
 * the block that settled it. Prints rate, p50/p99, RPC round trips and calls per paid call,
 * Redis round trips per paid call (the gateway's `toolgate_store_requests_total`, background work
 * such as the webhook relay included), the gateway's CPU per paid call, transactions per settled payment, each phase's mean
 * time beside the chain's own answer time for the verification's and the send's round trips (at the proxy), the ratios to chain only, which of the two wins each case,
 * and one paid call's RPC round trips in order with their times (RPC 50 ms away).
 * Loopback only; bounded by the counts below and a 60 s limit per call.
 *   BENCH_PAYERS=returning|new (who pays: wallets paying call after call, the default, or a new one each time)
 *   BENCH_BATCHING=off|on (one gateway)  BENCH_CONCURRENCY=8,32  BENCH_LOG=/tmp/dir (gateway logs)
 *   BENCH_GATEWAY_ENV="NAME=value,…" (more gateway settings)
 *   BENCH_GATEWAY_ENTRY=… (the gateway to measure; default dist/src/main.js once built, as in
 *   production, else src/main.ts under tsx)
 *   BENCH_BASELINE_ENTRY=… (another build, e.g. main's dist/src/main.js, measured beside it on the
 *   same chain: automine and timeline runs alternate the two BENCH_ROUNDS times, default 3, and
 *   print each figure's medians and this build / baseline)
 *
 *   npm run bench:paid   (Redis at 127.0.0.1:6379)
 *   BENCH_PAID_CALLS=200 (per automine run)  BENCH_PAID_WARMUP=200 (per gateway, before any run)  BENCH_DELAYED_CALLS=64  BENCH_INTERVAL_PAYERS=200
 *   BENCH_RELAYERS=3 (relayer keys the gateway gets: a pool by default)  BENCH_RPC_DELAY_MS=50
 *   BENCH_REDIS_DELAY_MS=1 (the gateways' Redis that far each way: its round trips show in the times)
 *   BENCH_TIMELINE_CALLS=15  BENCH_BATCH_WINDOW_MS=5  BENCH_ONLY=automine|timeline|delayed|interval  BENCH_PROFILE=/tmp/prof
 *   BENCH_NODE_ARGS="…" (more flags for the gateways' node, e.g. --perf-basic-prof for `perf`)
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import {
  createPublicClient,
  encodeFunctionData,
  http,
  keccak256,
  toHex,
  type Hex,
  type PublicClient,
} from "viem";
import { mnemonicToAccount, privateKeyToAccount } from "viem/accounts";
import {
  ANVIL_MNEMONIC,
  TOKEN_ABI,
  randomWallet,
  startLocalChain,
} from "../chain-fixtures/chain.js";
import { REDIS_URL, dropPrefix, uniquePrefix } from "../test/helpers/redis.js";
import { spawnGateway, spawnService } from "../test/helpers/gateway.js";
import { startRpcProxy } from "../test/helpers/rpc-proxy.js";
import { readServerTiming } from "../test/helpers/server-timing.js";
import { PAY_TO, signAuthorization, v1Header } from "../test/helpers/x402.js";
import { ReceiptWaiter } from "../src/payments/receipt-wait.js";
import { batchingHttp } from "../src/payments/rpc-transport.js";
import { authorizationMessage, transferArgs } from "../src/payments/verify.js";
import type { Authorization } from "../src/payments/wire.js";
import { startDelayedTcp } from "./delayed-tcp.js";
import { BENCH_NODE_ARGS } from "./node-args.js";
import { cpuMicros } from "./process-cpu.js";
import { median, percentile } from "./stats.js";

const CALLS = Number(process.env.BENCH_PAID_CALLS ?? 200);
/**
 * Paid calls each gateway serves before anything is measured. After the four calls it used to warm
 * up with, V8 was still compiling the paid path through the first measured run (its log showed
 * ~380 optimised compilations during a run of 1,000 calls), and its compiler threads count in the
 * gateway's CPU and take cores from the chain (the keyed bench warms up for the same reason).
 */
const WARMUP_CALLS = Number(process.env.BENCH_PAID_WARMUP ?? 200);
const DELAYED_CALLS = Number(process.env.BENCH_DELAYED_CALLS ?? 64);
const INTERVAL_PAYERS = Number(process.env.BENCH_INTERVAL_PAYERS ?? 200);
const RELAYERS = Number(process.env.BENCH_RELAYERS ?? 3);
const RPC_DELAY_MS = Number(process.env.BENCH_RPC_DELAY_MS ?? 50);
/** Paid calls made one at a time, RPC RPC_DELAY_MS away, for the gateway's own time per phase. */
const TIMELINE_CALLS = Number(process.env.BENCH_TIMELINE_CALLS ?? 15);
/** The batching gateway's X402_BATCH_WINDOW_MS (the other gateway settles each payment alone). */
const BATCH_WINDOW_MS = Number(process.env.BENCH_BATCH_WINDOW_MS ?? 5);
/**
 * BENCH_PAYERS=returning|new: who pays in the automine and delayed runs (and in the chain-only
 * floor, the same way). returning (default): max(concurrency, ⌈n / 50⌉) wallets in turn, as agents
 * paying for call after call; each pays at most 50 times, under the 60 requests a minute of its
 * account's tier (a verified payment counts against the paying wallet's account). new: a new wallet
 * for every payment, each also creating the wallet's account (a first payment's extra cost).
 */
const PAYERS = process.env.BENCH_PAYERS === "new" ? "new" : "returning";
/** Payments a returning payer makes in one run: under the Free tier's 60 requests a minute. */
const CALLS_PER_PAYER = 50;
/** BENCH_ONLY=automine|timeline|delayed|interval: run that case alone (delayed includes the timeline). */
const ONLY = process.env.BENCH_ONLY;
/** BENCH_BATCHING=off|on: only that gateway (default both). */
const BATCHING = process.env.BENCH_BATCHING;
/** BENCH_CONCURRENCY=8,32: the concurrent payers of the automine and delayed cases. */
const CONCURRENCIES = (process.env.BENCH_CONCURRENCY ?? "8,32").split(",").map(Number);
/** BENCH_GATEWAY_ENV="NAME=value,NAME2=value": more settings for the gateways (an A/B of one setting: two runs). */
const GATEWAY_ENV = Object.fromEntries(
  (process.env.BENCH_GATEWAY_ENV ?? "")
    .split(",")
    .filter((pair) => pair.includes("="))
    .map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)]),
);
/** The gateway measured: the compiled build production runs, when there is one. */
const BUILT = new URL("../dist/src/main.js", import.meta.url).pathname;
const GATEWAY_ENTRY =
  process.env.BENCH_GATEWAY_ENTRY ?? (existsSync(BUILT) ? BUILT : "src/main.ts");
/** BENCH_BASELINE_ENTRY: another build measured beside this one, in alternating rounds. */
const BASELINE_ENTRY = process.env.BENCH_BASELINE_ENTRY ?? null;
/** BENCH_ROUNDS: automine and timeline runs per gateway (alternating builds); 3 with a baseline. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (BASELINE_ENTRY ? 3 : 1));
/**
 * BENCH_REDIS_DELAY_MS: the gateways reach Redis through a relay that holds every chunk this long
 * each way (bench/delayed-tcp.ts), as a Redis in another zone: each Redis round trip a paid call
 * waits for shows in its time as twice this (the timeline's "own time" above all). 0: direct.
 */
const REDIS_DELAY_MS = Number(process.env.BENCH_REDIS_DELAY_MS ?? 0);
/** BENCH_LOG=/tmp/gw: each gateway's log lines are written there when the bench ends. */
const LOG_DIR = process.env.BENCH_LOG;
/** A paid call not answered in this long counts as failed (the bench stays bounded). */
const CALL_TIMEOUT_MS = 60_000;
const PRICE = 2000n;
/** Relayer keys for the gateway: anvil accounts 9, 6, 5, 4, 3 (8 is paid, 0 deploys and funds). */
const RELAYER_INDEXES = [9, 6, 5, 4, 3];
/** The chain-only baseline's senders: anvil accounts 7, 1, 2. */
const BASELINE_INDEXES = [7, 1, 2];
const keyOf = (index: number) =>
  toHex(mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: index }).getHdKey().privateKey!);

interface Run {
  rps: number;
  latencies: number[];
  /** The chain's (anvil's) CPU per item over the run, ms: what each payment cost the node. */
  chainCpuMs: number;
}

/** A process's CPU time so far, ms. */
const cpuMsOf = (pid: number) => cpuMicros(pid) / 1000;

async function timed<T>(
  items: T[],
  concurrency: number,
  run: (item: T) => Promise<void>,
  chainPid: number,
): Promise<Run> {
  const latencies: number[] = [];
  let next = 0;
  const chainBefore = cpuMsOf(chainPid);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) {
        const item = items[next++]!;
        const t = performance.now();
        await run(item);
        latencies.push(performance.now() - t);
      }
    }),
  );
  return {
    rps: items.length / ((performance.now() - started) / 1000),
    chainCpuMs: (cpuMsOf(chainPid) - chainBefore) / items.length,
    latencies: latencies.sort((a, b) => a - b),
  };
}

const p = (r: Run, q: number) => percentile(r.latencies, q);
const row = (name: string, r: Run) =>
  `  ${name.padEnd(38)} ${r.rps.toFixed(1).padStart(8)} ${p(r, 50).toFixed(1).padStart(9)} ${p(r, 99).toFixed(1).padStart(9)} ${r.chainCpuMs.toFixed(2).padStart(13)}`;
const header = () =>
  `  ${"".padEnd(38)} ${"per s".padStart(8)} ${"p50 ms".padStart(9)} ${"p99 ms".padStart(9)} ${"chain CPU ms".padStart(13)}`;

/** The mean time from arrival to answer of the round trips whose methods `pick` takes (NaN: none). */
function meanAnswerMs(
  timeline: { methods: string[]; at: number; answeredAt: number }[],
  pick: (methods: string[]) => boolean,
): number {
  const taken = timeline.filter((trip) => pick(trip.methods));
  return taken.reduce((sum, trip) => sum + trip.answeredAt - trip.at, 0) / taken.length;
}

async function main() {
  const chain = await startLocalChain({
    chainId: 84532,
    usdcName: "USDC",
    usdcVersion: "2",
  });
  const proxy = await startRpcProxy(chain.rpcUrl);
  const redisAt = new URL(REDIS_URL);
  const redisRelay =
    REDIS_DELAY_MS > 0
      ? await startDelayedTcp(
          { host: redisAt.hostname, port: Number(redisAt.port || 6379) },
          REDIS_DELAY_MS,
        )
      : null;
  // anvil itself, for its CPU: it runs under a watchdog (src/lib/tied-child.ts), its parent.
  const watchdog = chain.process.pid!;
  const chainPid = Number(
    readFileSync(`/proc/${watchdog}/task/${watchdog}/children`, "latin1").trim().split(" ")[0],
  );
  const direct = createPublicClient({ transport: http(chain.rpcUrl) });
  let seed = 50_000;
  const funded = async (n: number) => {
    const wallets = Array.from({ length: n }, () => randomWallet(seed++));
    for (const w of wallets) await chain.fund(w.address, BigInt(CALLS_PER_PAYER) * PRICE);
    return wallets;
  };
  const sign = (w: ReturnType<typeof randomWallet>) =>
    signAuthorization({ account: w, chain, value: PRICE });
  /** n signed payments, from the payers BENCH_PAYERS says (each its own authorization and nonce). */
  const payments = async (n: number, concurrency: number) => {
    const wallets = await funded(
      PAYERS === "new" ? n : Math.min(n, Math.max(concurrency, Math.ceil(n / CALLS_PER_PAYER))),
    );
    return Promise.all(Array.from({ length: n }, (_, i) => sign(wallets[i % wallets.length]!)));
  };

  // The floor: pre-signed transfers from bare relayers, as many as the gateway's pool has (up to
  // three: anvil accounts 7, 1, 2), each taking every n-th transfer in nonce order, sent and
  // awaited. One sender alone would measure its own nonce queue: 32 sends in flight arrive out of
  // order, and the node holds each one behind a gap until the one before it comes.
  const bare = BASELINE_INDEXES.slice(0, Math.max(1, RELAYERS)).map((i) =>
    privateKeyToAccount(keyOf(i)),
  );
  // Over the gateway's own transport (src/payments/rpc-transport.ts): its receipt looks share
  // JSON-RPC batches as the gateway's do.
  const viaProxy = createPublicClient({
    transport: batchingHttp(proxy.url, { timeout: CALL_TIMEOUT_MS, batchSize: 100 }),
    pollingInterval: 50,
  });
  const receipts = new ReceiptWaiter(viaProxy as PublicClient);
  const chainOnly = async (n: number, concurrency: number, sync: boolean): Promise<Run> => {
    const payloads = await payments(n, concurrency);
    // The same calldata the gateway's settlement sends (src/payments/verify.ts transferArgs).
    const data = payloads.map(({ authorization, signature }) =>
      encodeFunctionData({
        abi: TOKEN_ABI,
        functionName: "transferWithAuthorization",
        args: transferArgs(
          authorizationMessage(authorization as Authorization),
          signature as Hex,
        ) as never,
      }),
    );
    const gas =
      ((await direct.estimateGas({
        account: bare[0]!.address,
        to: chain.usdc,
        data: data[0]!,
      })) *
        3n) /
      2n;
    const fees = await direct.estimateFeesPerGas();
    const first = await Promise.all(
      bare.map((b) => direct.getTransactionCount({ address: b.address, blockTag: "pending" })),
    );
    const signed = await Promise.all(
      data.map((d, i) =>
        bare[i % bare.length]!.signTransaction({
          chainId: chain.chainId,
          type: "eip1559",
          to: chain.usdc,
          data: d,
          gas,
          nonce: first[i % bare.length]! + Math.floor(i / bare.length),
          ...fees,
        }),
      ),
    );
    // No transfer of this run can be in a block the chain has before it starts.
    const before = await direct.getBlockNumber({ cacheTime: 0 });
    return timed(
      signed,
      concurrency,
      async (tx) => {
        if (sync) {
          // anvil under load can give up its own wait ("Transaction confirmation timeout") with the
          // transaction in its pool: then its receipt is read, as the gateway does (relayers.ts).
          const answered = await viaProxy
            .sendRawTransactionSync({ serializedTransaction: tx })
            .then(
              () => true,
              () => false,
            );
          if (!answered)
            await receipts.wait(keccak256(tx), {
              receiptTimeoutMs: CALL_TIMEOUT_MS,
              afterBlock: before,
            });
          return;
        }
        const hash = await viaProxy.sendRawTransaction({
          serializedTransaction: tx,
        });
        // Read as the gateway reads its own (src/payments/receipt-wait.ts): the floor is the chain's, not a polling interval.
        await receipts.wait(hash, { receiptTimeoutMs: CALL_TIMEOUT_MS, afterBlock: before });
      },
      chainPid,
    );
  };

  /** The floor: the faster of the chain's two ways of sending. */
  const fasterOf = (runs: { sync: Run; plain: Run }) =>
    runs.sync.rps >= runs.plain.rps ? runs.sync : runs.plain;
  /** The chain alone, sending both ways (rows to print); the faster is the floor. */
  const chainFloor = async (n: number, concurrency: number) => {
    await freshChain();
    const sync = await chainOnly(n, concurrency, true);
    await freshChain();
    const plain = await chainOnly(n, concurrency, false);
    return { sync, plain, floor: fasterOf({ sync, plain }) };
  };
  const floorRows = (runs: { sync: Run; plain: Run }, suffix = "") => {
    console.log(row(`chain only, sync send${suffix}`, runs.sync));
    console.log(row(`chain only, send + receipt${suffix}`, runs.plain));
  };

  const relayers = RELAYER_INDEXES.slice(0, Math.max(1, RELAYERS)).map(keyOf);
  const relayerAddresses = relayers.map((k) => privateKeyToAccount(k).address);
  const sentByRelayers = async () =>
    (
      await Promise.all(
        relayerAddresses.map((a) => direct.getTransactionCount({ address: a, blockTag: "latest" })),
      )
    ).reduce((s, n) => s + n, 0);

  const prefix = uniquePrefix("benchpaid");
  const workers = await spawnService("src/workers/main.ts", "workers listening", {
    PORT: "0",
    LOG_LEVEL: "info",
  });
  workers.child.stdout!.resume();
  /**
   * anvil spends more per transaction the longer its chain grows (1.7, 2.9, 3.8 ms of CPU per
   * transfer over three runs of 600; the same again after an evm_revert), so a run measured late
   * met a slower chain than one measured early, and the ratios to chain only moved from run to
   * run (0.44 in one, 1.46 in the next). Each measured run starts from the chain as it was after
   * the warm-up: reverted to its snapshot (which a revert uses up: taken again). The gateways'
   * relayer nonce sequences in Redis ran ahead of the reverted chain: dropped, so each reads the
   * chain's count at its next send (relayers.ts `takeNonce`). Only between runs: nothing is in
   * flight then.
   */
  let snapshot: unknown = null;
  const freshChain = async () => {
    if (snapshot === null) return;
    await direct.request({ method: "evm_revert" as never, params: [snapshot] as never });
    snapshot = await direct.request({ method: "evm_snapshot" as never });
    await dropPrefix(`${prefix}{relayers}:nonce:`);
  };
  /** A gateway on the proxy; `windowMs` > 0 settles in Multicall3 batches. Both share the relayer keys and their nonce sequences. */
  const startPaidGateway = async (windowMs: number, entry = GATEWAY_ENTRY) => {
    const gw = await spawnGateway(
      prefix,
      {
        WORKERS_URL: workers.url,
        X402_NETWORKS: "base-sepolia",
        BASE_SEPOLIA_RPC_URL: proxy.url,
        BASE_SEPOLIA_USDC_ADDRESS: chain.usdc,
        X402_PAY_TO: PAY_TO,
        ...(relayers.length === 1
          ? { X402_RELAYER_PRIVATE_KEY: relayers[0] }
          : { X402_RELAYER_PRIVATE_KEYS: relayers.join(",") }),
        X402_BATCH_WINDOW_MS: String(windowMs),
        ...(redisRelay ? { REDIS_URL: `redis://127.0.0.1:${redisRelay.port}` } : {}),
        ...GATEWAY_ENV,
      },
      BENCH_NODE_ARGS,
      entry,
    );
    gw.child.stdout!.resume();
    return gw;
  };
  type Gateway = Awaited<ReturnType<typeof startPaidGateway>>;
  /** `mode`: how it settles; `baseline`: the BENCH_BASELINE_ENTRY build (its name says so). */
  const gateways: { name: string; mode: string; baseline: boolean; gw: Gateway }[] = [];
  const modes: [string, number][] = [];
  if (BATCHING !== "on") modes.push(["batching off", 0]);
  if (BATCHING !== "off") modes.push([`batching ${BATCH_WINDOW_MS} ms`, BATCH_WINDOW_MS]);
  for (const [mode, windowMs] of modes) {
    gateways.push({ name: mode, mode, baseline: false, gw: await startPaidGateway(windowMs) });
    if (BASELINE_ENTRY)
      gateways.push({
        name: `${mode}, baseline`,
        mode,
        baseline: true,
        gw: await startPaidGateway(windowMs, BASELINE_ENTRY),
      });
  }
  /** The gateways in round `round`'s order: reversed every other round, so neither build always goes first. */
  const inRound = (round: number) => (round % 2 === 0 ? gateways : [...gateways].reverse());
  /** The name of the gateway settling by `mode`, of this build or the baseline's. */
  const nameOf = (mode: string, baseline: boolean) =>
    gateways.find((g) => g.mode === mode && g.baseline === baseline)!.name;
  const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;

  const gatewayCpuMs = (gateway: Gateway) => cpuMsOf(gateway.child.pid!);

  const PHASES = ["verify", "settle", "credit"] as const;
  /**
   * From the gateway's /metrics so far: the requests it has sent to Redis (commands, scripts,
   * MULTI blocks), and the seconds and count of each phase of its new payments.
   */
  const gatewayMetrics = async (gateway: Gateway) => {
    const text = await (await fetch(`${gateway.url}/metrics`)).text();
    const phase = (name: string, part: "sum" | "count") =>
      Number(
        new RegExp(
          `^toolgate_payment_phase_seconds_${part}\\{phase="${name}"[^}]*\\} (\\S+)`,
          "m",
        ).exec(text)?.[1] ?? 0,
      );
    return {
      store: Number(/^toolgate_store_requests_total (\d+)/m.exec(text)?.[1] ?? NaN),
      phases: PHASES.map((p) => ({ sum: phase(p, "sum"), count: phase(p, "count") })),
    };
  };

  /** One paid `hash` call, answered within CALL_TIMEOUT_MS (or thrown). */
  const paidCall = async (gateway: Gateway, payment: string) => {
    const res = await fetch(`${gateway.url}/v1/tools/hash`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-payment": payment },
      body: '{"text":"bench"}',
      signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
    });
    return { status: res.status, headers: res.headers, text: await res.text() };
  };

  /** Paid calls through a gateway, with the RPC work they caused. */
  const throughGateway = async (gateway: Gateway, n: number, concurrency: number) => {
    const headers = (await payments(n, concurrency)).map((p) => v1Header("base-sepolia", p));
    const txBefore = await sentByRelayers();
    proxy.resetCounts();
    const metricsBefore = await gatewayMetrics(gateway);
    const cpuBefore = gatewayCpuMs(gateway);
    let failed = 0;
    const receipts: string[] = [];
    // Each served call's Server-Timing: the payment (verified, settled, credited), the tool, the rest.
    const timings = { payment: [] as number[], tool: [] as number[], gateway: [] as number[] };
    const run = await timed(
      headers,
      concurrency,
      async (h) => {
        const res = await paidCall(gateway, h).catch(() => null);
        if (res?.status !== 200) return void failed++;
        receipts.push(res.headers.get("x-payment-response")!);
        const timing = readServerTiming(res.headers.get("server-timing"));
        for (const [name, ms] of Object.entries(timings))
          if (timing[name] !== undefined) ms.push(timing[name]);
      },
      chainPid,
    );
    const cpuMs = (gatewayCpuMs(gateway) - cpuBefore) / n;
    const metricsAfter = await gatewayMetrics(gateway);
    const redisRoundTrips = (metricsAfter.store - metricsBefore.store) / n;
    // Mean milliseconds a new payment spent in each phase over this run.
    const phaseMs = metricsAfter.phases.map(
      (after, i) =>
        (1000 * (after.sum - metricsBefore.phases[i]!.sum)) /
        (after.count - metricsBefore.phases[i]!.count),
    );
    const rpc = {
      roundTrips: proxy.counts.roundTrips / n,
      calls: proxy.counts.calls / n,
      methods: { ...proxy.counts.methods },
      // How long the chain took to answer, as the proxy saw it (arrival to answer): the part of
      // a phase spent at the node, the rest of it being spent in the gateway.
      answerMs: {
        verify: meanAnswerMs(proxy.timeline, (m) => m.includes("eth_call")),
        send: meanAnswerMs(proxy.timeline, (m) => m.includes("eth_sendRawTransactionSync")),
      },
    };
    const settled = n - failed;
    const txPerPayment = settled ? ((await sentByRelayers()) - txBefore) / settled : NaN;
    return { run, failed, rpc, txPerPayment, receipts, cpuMs, redisRoundTrips, phaseMs, timings };
  };
  /** JSON-RPC calls per paid call by method, most first. */
  const perMethod = (methods: Record<string, number>, n: number) =>
    Object.entries(methods)
      .sort((a, b) => b[1] - a[1])
      .map(([m, c]) => `${m} ${(c / n).toFixed(2)}`)
      .join(", ");
  /** The medians of the answers' Server-Timing metrics; `gateway` is its own time besides the payment and the tool. */
  const serverTimings = (timings: Record<string, number[]>) =>
    `${Object.entries(timings)
      .map(([name, ms]) => `${name} ${ms.length ? median(ms).toFixed(1) : "none"}`)
      .join(", ")} (gateway: its own time besides the payment and the tool)`;
  const rpcLine = (r: Awaited<ReturnType<typeof throughGateway>>, n: number) => {
    const methods = perMethod(r.rpc.methods, n);
    return `    per paid call: ${r.rpc.roundTrips.toFixed(2)} RPC round trips, ${r.rpc.calls.toFixed(2)} JSON-RPC calls (${methods}); ${r.txPerPayment.toFixed(2)} transactions per settled payment; ${r.redisRoundTrips.toFixed(1)} Redis round trips (commands, scripts, MULTI blocks; background work included); gateway CPU ${r.cpuMs.toFixed(1)} ms; failed: ${r.failed}\n    a payment's phases (mean ms): ${PHASES.map((p, i) => `${p} ${r.phaseMs[i]!.toFixed(1)}`).join(", ")} (settle: joining a batch, the send and its receipt); the chain's answer (mean ms, arrival to answer at the proxy, any delay it adds included) with the verification's eth_call ${r.rpc.answerMs.verify.toFixed(1)}, a sync send ${r.rpc.answerMs.send.toFixed(1)}\n    its answers' Server-Timing (p50 ms): ${serverTimings(r.timings)}`;
  };

  let failures = 0;
  /** Each gateway's figures in the case being run; `verdict` names the faster and empties it. */
  let outcomes: { name: string; rps: number; p50: number }[] = [];
  const isBaseline = (name: string) => gateways.some((g) => g.name === name && g.baseline);
  const verdicts: string[] = [];
  const verdict = (what: string, unit: string) => {
    // Settling alone against batching, for this build (a baseline build is compared on its own line).
    const ranked = outcomes.filter((o) => !isBaseline(o.name)).sort((a, b) => b.rps - a.rps);
    outcomes = [];
    if (ranked.length < 2) return;
    const [best, next] = ranked as [(typeof ranked)[0], (typeof ranked)[0]];
    verdicts.push(
      `  ${what}: ${best.name} (${best.rps.toFixed(1)} ${unit}, p50 ${best.p50.toFixed(0)} ms) over ${next.name} (${next.rps.toFixed(1)} ${unit}, p50 ${next.p50.toFixed(0)} ms)`,
    );
  };
  try {
    // Warm up once (connections, the first gas estimate, JIT) so no run pays for starting.
    for (const { gw } of gateways) await throughGateway(gw, WARMUP_CALLS, 8);
    snapshot = await direct.request({ method: "evm_snapshot" as never });
    console.log(
      `\nToolgate bench — x402 paid calls on anvil, gateway ${GATEWAY_ENTRY}${BASELINE_ENTRY ? ` and baseline ${BASELINE_ENTRY} (${ROUNDS} alternating rounds)` : ""} with ${relayers.length} relayer key(s), batching off and with a ${BATCH_WINDOW_MS} ms window${redisRelay ? `, Redis +${REDIS_DELAY_MS} ms each way` : ""}`,
    );

    if (!ONLY || ONLY === "automine")
      for (const concurrency of CONCURRENCIES) {
        const chain = await chainFloor(CALLS, concurrency);
        const runs: {
          name: string;
          of: string;
          paid: Awaited<ReturnType<typeof throughGateway>>;
        }[] = [];
        for (let round = 0; round < ROUNDS; round++)
          for (const { name, gw } of inRound(round)) {
            await freshChain();
            runs.push({
              name: ROUNDS > 1 ? `${name} (${round + 1})` : name,
              of: name,
              paid: await throughGateway(gw, CALLS, concurrency),
            });
          }
        const base = chain.floor;
        console.log(
          `\nautomine, ${CALLS} payments per run, ${concurrency} at a time (each run from the same chain), ${PAYERS === "new" ? "a new wallet for each" : `from ${Math.min(CALLS, Math.max(concurrency, Math.ceil(CALLS / CALLS_PER_PAYER)))} returning payers`}`,
        );
        console.log(header());
        floorRows(chain);
        for (const { name, paid } of runs) {
          failures += paid.failed;
          console.log(row(`paid call, ${name}`, paid.run));
          console.log(
            `    ratio to chain only: ${(paid.run.rps / base.rps).toFixed(2)}; gateway adds p50 +${(p(paid.run, 50) - p(base, 50)).toFixed(1)} ms, p99 +${(p(paid.run, 99) - p(base, 99)).toFixed(1)} ms`,
          );
          console.log(rpcLine(paid, CALLS));
        }
        for (const { name } of gateways) {
          const own = runs.filter((r) => r.of === name).map((r) => r.paid);
          outcomes.push({
            name,
            rps: median(own.map((r) => r.run.rps)),
            p50: median(own.map((r) => p(r.run, 50))),
          });
        }
        if (BASELINE_ENTRY)
          for (const [mode] of modes) {
            const of = (baseline: boolean) =>
              runs.filter((r) => r.of === nameOf(mode, baseline)).map((r) => r.paid);
            const [mine, theirs] = [of(false), of(true)];
            const figure = (pick: (r: (typeof mine)[0]) => number) => {
              const [a, b] = [median(mine.map(pick)), median(theirs.map(pick))];
              return `${a.toFixed(1)} / ${b.toFixed(1)} (${ratio(a, b)})`;
            };
            console.log(
              `  this build / baseline, ${mode}, medians of ${ROUNDS} rounds: paid calls/s ${figure((r) => r.run.rps)}; p50 ms ${figure((r) => p(r.run, 50))}; gateway adds p50 +${median(mine.map((r) => p(r.run, 50) - p(base, 50))).toFixed(1)} / +${median(theirs.map((r) => p(r.run, 50) - p(base, 50))).toFixed(1)} ms; gateway CPU per paid call ms ${figure((r) => r.cpuMs)}; Redis round trips ${figure((r) => r.redisRoundTrips)}`,
            );
          }
        verdict(`automine, ${concurrency} at a time`, "per s");
      }

    // One paid call alone, RPC RPC_DELAY_MS away: every round trip it made, in order, with times;
    // then the medians over TIMELINE_CALLS such calls of the gateway's own time before, between
    // and after its round trips (the part of a paid call that is not the RPC's).
    if (!ONLY || ONLY === "delayed" || ONLY === "timeline") {
      /** Each gateway's total own time per round (the sum of the medians). */
      const ownTotals = new Map<string, number[]>(gateways.map((g) => [g.name, []]));
      for (let round = 0; round < ROUNDS; round++)
        for (const { name: gateway, gw } of inRound(round)) {
          const name = ROUNDS > 1 ? `${gateway} (${round + 1})` : gateway;
          const headers = await Promise.all(
            (await funded(TIMELINE_CALLS)).map(async (w) =>
              v1Header("base-sepolia", await sign(w)),
            ),
          );
          proxy.setDelay(RPC_DELAY_MS);
          const own: number[][] = [];
          let last: { status: number; total: number; trips: typeof proxy.timeline } | null = null;
          for (const h of headers) {
            proxy.resetCounts();
            const t = performance.now();
            const res = await paidCall(gw, h);
            const total = performance.now() - t;
            if (res.status !== 200) failures++;
            // The reconciler's nonce-gap reads (one eth_getTransactionCount per relayer key per
            // tick) run beside the calls; they are not the call's.
            const trips = proxy.timeline.filter(
              (trip) => !trip.methods.every((m) => m === "eth_getTransactionCount"),
            );
            const edges = [0, ...trips.flatMap((trip) => [trip.at, trip.answeredAt]), total];
            own.push(edges.flatMap((e, i) => (i % 2 === 0 ? [edges[i + 1]! - e] : [])));
            last = { status: res.status, total, trips };
          }
          proxy.setDelay(0);
          console.log(
            `\none paid call, ${name}, RPC +${RPC_DELAY_MS} ms: ${last!.status} in ${last!.total.toFixed(1)} ms; its RPC round trips (ms from the call's start):`,
          );
          for (const trip of last!.trips)
            console.log(
              `  ${trip.at.toFixed(1).padStart(7)} → ${trip.answeredAt.toFixed(1).padStart(7)}  ${trip.methods.join(", ")}`,
            );
          // Medians over the calls that made the usual round trips (a call that also resynced a
          // nonce or looked for a receipt has more gaps, which do not line up with the others).
          const fewest = Math.min(...own.map((g) => g.length));
          const usual = own.filter((gaps) => gaps.length === fewest);
          const medians = usual[0]!.map((_, i) => median(usual.map((g) => g[i]!)));
          const total = medians.reduce((a, b) => a + b, 0);
          ownTotals.get(gateway)!.push(total);
          console.log(
            `  the gateway's own time around those round trips, median of ${usual.length} of ${own.length} calls (ms): ${medians.map((m) => m.toFixed(1)).join(" | ")}; total ${total.toFixed(1)}`,
          );
        }
      if (BASELINE_ENTRY)
        for (const [mode] of modes) {
          const [a, b] = [false, true].map((baseline) =>
            median(ownTotals.get(nameOf(mode, baseline))!),
          ) as [number, number];
          console.log(
            `\nthis build / baseline, ${mode}: the gateway's own time per paid call (RPC +${RPC_DELAY_MS} ms, one at a time), median of ${ROUNDS} rounds' totals: ${a.toFixed(1)} / ${b.toFixed(1)} ms (${ratio(a, b)})`,
          );
        }
    }

    // A distant RPC: every request (a batch is one) held RPC_DELAY_MS by the proxy.
    if (!ONLY || ONLY === "delayed")
      for (const concurrency of CONCURRENCIES) {
        const direct = await chainFloor(DELAYED_CALLS, concurrency);
        proxy.setDelay(RPC_DELAY_MS);
        const far = await chainFloor(DELAYED_CALLS, concurrency);
        const slowBase = far.floor;
        console.log(
          `\nRPC +${RPC_DELAY_MS} ms per request, automine, ${DELAYED_CALLS} payments, ${concurrency} at a time`,
        );
        console.log(header());
        floorRows(direct, ", no delay");
        floorRows(far, `, +${RPC_DELAY_MS} ms`);
        // The chain's confirmation: the quicker of its two ways, as near as the RPC can be.
        const budget = Math.min(p(direct.sync, 50), p(direct.plain, 50)) + 3 * RPC_DELAY_MS;
        for (const { name, gw } of gateways) {
          await freshChain();
          const slow = await throughGateway(gw, DELAYED_CALLS, concurrency);
          failures += slow.failed;
          console.log(row(`paid call, ${name}`, slow.run));
          console.log(
            `    ratio to chain only (+${RPC_DELAY_MS} ms): ${(slow.run.rps / slowBase.rps).toFixed(2)}; paid p50 ${p(slow.run, 50).toFixed(1)} ms vs chain confirmation + 3 × ${RPC_DELAY_MS} ms = ${budget.toFixed(1)} ms: ${p(slow.run, 50) <= budget ? "within" : "over"}`,
          );
          console.log(rpcLine(slow, DELAYED_CALLS));
          outcomes.push({ name, rps: slow.run.rps, p50: p(slow.run, 50) });
        }
        verdict(`RPC +${RPC_DELAY_MS} ms, ${concurrency} at a time`, "per s");
        proxy.setDelay(0);
      }

    // Interval mining: everyone pays at once, blocks every 2 s (payers funded before it starts).
    if (!ONLY || ONLY === "interval")
      for (const { name, gw: gateway } of gateways) {
        await direct.request({ method: "evm_setAutomine" as never, params: [true] as never });
        await freshChain();
        const payers = await funded(INTERVAL_PAYERS);
        await direct.request({
          method: "evm_setIntervalMining" as never,
          params: [2] as never,
        });
        const headers = await Promise.all(
          payers.map(async (w) => v1Header("base-sepolia", await sign(w))),
        );
        const arrival = await direct.getBlockNumber({ cacheTime: 0 });
        const txBefore = await sentByRelayers();
        proxy.resetCounts();
        const blocks: number[] = [];
        const reasons = new Map<string, number>();
        const cpuBefore = gatewayCpuMs(gateway);
        let failed = 0;
        const run = await timed(
          headers,
          headers.length,
          async (h) => {
            const res = await paidCall(gateway, h).catch((err: Error) => ({
              status: 0,
              headers: new Headers(),
              text: JSON.stringify({ error: { code: err.name } }),
            }));
            const text = res.text;
            if (res.status !== 200) {
              failed++;
              const why =
                `${res.status} ${(JSON.parse(text) as { error?: { code?: string } }).error?.code ?? ""}`.trim();
              reasons.set(why, (reasons.get(why) ?? 0) + 1);
              return;
            }
            const tx = (
              JSON.parse(
                Buffer.from(res.headers.get("x-payment-response")!, "base64").toString(),
              ) as {
                transaction: Hex;
              }
            ).transaction;
            blocks.push(
              Number((await direct.getTransactionReceipt({ hash: tx })).blockNumber - arrival),
            );
          },
          chainPid,
        );
        failures += failed;
        blocks.sort((a, b) => a - b);
        const settled = INTERVAL_PAYERS - failed;
        console.log(
          `\ninterval mining (a block every 2 s), ${INTERVAL_PAYERS} payers at once, ${name}`,
        );
        console.log(header());
        console.log(row(`paid call, ${name}`, run));
        console.log(
          `  blocks from arrival to settlement: p50 ${percentile(blocks, 50)}, max ${blocks.at(-1)}; within 2 blocks: ${blocks.filter((b) => b <= 2).length}/${INTERVAL_PAYERS}; failed: ${failed}${reasons.size ? ` (${[...reasons].map(([why, n]) => `${n} × ${why}`).join(", ")})` : ""}`,
        );
        console.log(
          `  per paid call: ${(proxy.counts.roundTrips / INTERVAL_PAYERS).toFixed(2)} RPC round trips, ${(proxy.counts.calls / INTERVAL_PAYERS).toFixed(2)} JSON-RPC calls (${perMethod(proxy.counts.methods, INTERVAL_PAYERS)}); ${(((await sentByRelayers()) - txBefore) / settled).toFixed(2)} transactions per settled payment; gateway CPU ${((gatewayCpuMs(gateway) - cpuBefore) / INTERVAL_PAYERS).toFixed(1)} ms`,
        );
        outcomes.push({ name, rps: run.rps, p50: p(run, 50) });
      }
    if (!ONLY || ONLY === "interval") verdict("interval mining (2 s blocks)", "per s");
    if (verdicts.length)
      console.log(`\nwhich wins (${relayers.length} relayer key(s)):\n${verdicts.join("\n")}`);
    if (failures) process.exitCode = 1;
  } finally {
    for (const { gw } of gateways) await gw.stop();
    if (LOG_DIR) {
      // Made here if missing: a write that threw would skip the stops below and leave processes behind.
      mkdirSync(LOG_DIR, { recursive: true });
      for (const [i, { gw }] of gateways.entries())
        writeFileSync(`${LOG_DIR}/gateway-${i}.log`, `${gw.output.join("\n")}\n`);
    }
    await workers.stop();
    await proxy.stop();
    await redisRelay?.stop();
    await chain.stop();
    await dropPrefix(prefix);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
