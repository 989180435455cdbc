import { createServer, type IncomingMessage, type ServerResponse } from "node:http";

/**
 * A JSON-RPC proxy in front of a real node (loopback only), for tests and benches:
 * - it can stop answering: `silenceAfterNextSend()` forwards the next eth_sendRawTransaction(Sync) to
 *   the node (so the transaction really happens), withholds its answer, and from then on answers
 *   nothing — an RPC dying mid-settlement. `resume()` brings it back; `sent` resolves once that
 *   transaction has reached the node;
 * - `breakNextSend()` closes the connection of the next eth_sendRawTransaction(Sync) without
 *   passing it on: a connection lost before the node had the transaction;
 * - `hold(match)` holds every request whose body `match`es from then on (not yet passed on) until
 *   its `release()`: payments kept in verification while a test sends more; `until(test)`
 *   resolves once the bodies held so far pass `test`;
 * - `maxLogRange` makes it refuse eth_getLogs over more blocks than that, as hosted RPC providers
 *   do (JSON-RPC error -32005); `logQueries` counts the eth_getLogs it answered and refused;
 * - it counts what it is asked: `counts.roundTrips` (HTTP requests: a JSON-RPC batch is one),
 *   `counts.calls` (JSON-RPC calls, each call of a batch counted), `counts.methods`, and
 *   `counts.trips`: the methods each round trip carried, in order; `timeline`: each round trip's
 *   methods with when it arrived and when it was answered (ms since the counts were reset);
 * - `setDelay(ms)` holds every request that long before passing it on: a distant RPC;
 * - `withoutMethods` answers those methods "method not found" (-32601, geth's words), as an RPC
 *   that lacks them does; `syncWaitRunsOut` passes an eth_sendRawTransactionSync on as a plain
 *   send (the transaction reaches the node) and answers it with EIP-7966's timeout error (code 4,
 *   the hash as data), as a node whose block came after its wait ended; `syncHangs` passes it on
 *   the same way and never answers it, as anvil under load can (it misses the block it waited for).
 * JSON-RPC batches (arrays) are understood throughout.
 */
/** A request that sends a transaction (the gateway sends each alone, never in a batch). */
const SEND = /"eth_sendRawTransaction(Sync)?"/;

interface RpcCall {
  id: unknown;
  method: string;
  params: unknown[];
}

export async function startRpcProxy(
  upstream: string,
  options: {
    maxLogRange?: number;
    delayMs?: number;
    withoutMethods?: string[];
    syncWaitRunsOut?: boolean;
    syncHangs?: boolean;
  } = {},
) {
  const logQueries = { answered: 0, refused: 0 };
  const counts = {
    roundTrips: 0,
    calls: 0,
    methods: {} as Record<string, number>,
    trips: [] as string[][],
  };
  let origin = performance.now();
  const timeline: { methods: string[]; at: number; answeredAt: number }[] = [];
  let delayMs = options.delayMs ?? 0;
  const post = async (body: string) =>
    (
      await fetch(upstream, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      })
    ).text();
  const rpc = async (method: string, params: unknown[]) =>
    (
      JSON.parse(await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }))) as {
        result: string;
      }
    ).result;
  const blockOf = async (tag: unknown) =>
    typeof tag === "string" && tag.startsWith("0x")
      ? BigInt(tag)
      : tag === "earliest"
        ? 0n
        : BigInt(await rpc("eth_blockNumber", []));
  /** The refusal of an over-wide eth_getLogs, or null to pass the call on. */
  const refuseLogs = async (call: RpcCall): Promise<object | null> => {
    if (options.maxLogRange === undefined || call.method !== "eth_getLogs") return null;
    const filter = call.params[0] as { fromBlock?: unknown; toBlock?: unknown };
    const span =
      (await blockOf(filter.toBlock ?? "latest")) -
      (await blockOf(filter.fromBlock ?? "latest")) +
      1n;
    if (span <= BigInt(options.maxLogRange)) {
      logQueries.answered++;
      return null;
    }
    logQueries.refused++;
    return {
      jsonrpc: "2.0",
      id: call.id,
      error: { code: -32005, message: `query exceeds max block range ${options.maxLogRange}` },
    };
  };
  const refuseMissing = (call: RpcCall): object | null =>
    options.withoutMethods?.includes(call.method)
      ? {
          jsonrpc: "2.0",
          id: call.id,
          error: {
            code: -32601,
            message: `the method ${call.method} does not exist/is not available`,
          },
        }
      : null;
  /** The answer to a single call or a batch: refusals made here, the rest from the node, in the asked order. */
  const answer = async (body: string): Promise<string> => {
    const parsed = JSON.parse(body) as RpcCall | RpcCall[];
    const calls = Array.isArray(parsed) ? parsed : [parsed];
    const refusals = await Promise.all(calls.map(async (c) => refuseMissing(c) ?? refuseLogs(c)));
    const passed = calls.filter((_, i) => !refusals[i]);
    if (passed.length === calls.length) return post(body);
    const fromNode = passed.length
      ? (JSON.parse(await post(JSON.stringify(passed))) as object[])
      : [];
    const answers = refusals.map((refusal) => refusal ?? fromNode.shift()!);
    return JSON.stringify(Array.isArray(parsed) ? answers : answers[0]);
  };
  /**
   * A lone eth_sendRawTransactionSync (the gateway's transport always sends it alone) as the node
   * `syncWaitRunsOut` or `syncHangs` plays: passed on as a plain send (the transaction reaches the
   * node), then answered with EIP-7966's timeout error, or not at all (null: hold the request).
   */
  const playSync = async (body: string): Promise<string | null> => {
    const sent = JSON.parse(
      await post(body.replace('"eth_sendRawTransactionSync"', '"eth_sendRawTransaction"')),
    ) as { id: unknown; result?: unknown };
    if (options.syncHangs) return null;
    if (!("result" in sent)) return JSON.stringify(sent);
    return JSON.stringify({
      jsonrpc: "2.0",
      id: sent.id,
      error: {
        code: 4,
        message: "The transaction was added to the transaction pool but wasn't processed in 0s",
        data: sent.result,
      },
    });
  };
  let silent = false;
  let armed = false;
  let breakArmed = false;
  let refuseArmed = false;
  /** Requests held by `hold`, each let go by calling it; null when none are held. */
  let holding: {
    match: (body: string) => boolean;
    bodies: string[];
    waiting: (() => void)[];
    watchers: (() => void)[];
  } | null = null;
  let markSent!: () => void;
  const sent = new Promise<void>((resolve) => (markSent = resolve));
  const held: ServerResponse[] = [];
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    if (silent) return void held.push(res);
    const isSend = SEND.test(body);
    if (breakArmed && isSend) {
      breakArmed = false;
      return void req.socket.destroy();
    }
    if (refuseArmed && isSend) {
      // The node's own refusal of a transaction it will not take (nothing is broadcast).
      refuseArmed = false;
      res.writeHead(200, { "content-type": "application/json" });
      const { id } = JSON.parse(body) as RpcCall;
      return void res.end(
        JSON.stringify({
          jsonrpc: "2.0",
          id,
          error: { code: -32003, message: "insufficient funds for gas * price + value" },
        }),
      );
    }
    if (holding?.match(body)) {
      const holder = holding;
      await new Promise<void>((resolve) => {
        holder.bodies.push(body);
        holder.waiting.push(resolve);
        for (const watch of holder.watchers) watch();
      });
    }
    counts.roundTrips++;
    const at = performance.now() - origin;
    let methods: string[] = [];
    let lone = false;
    try {
      const parsed = JSON.parse(body) as RpcCall | RpcCall[];
      lone = !Array.isArray(parsed);
      const calls = Array.isArray(parsed) ? parsed : [parsed];
      methods = calls.map((c) => c.method);
      if (counts.trips.length < 10_000) counts.trips.push(methods);
      for (const call of calls) {
        counts.calls++;
        counts.methods[call.method] = (counts.methods[call.method] ?? 0) + 1;
      }
    } catch {
      // Not JSON: the node answers it as it would.
    }
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
    const played =
      (options.syncHangs || options.syncWaitRunsOut) &&
      lone &&
      methods[0] === "eth_sendRawTransactionSync";
    const text = await (played ? playSync(body) : answer(body)).catch((err: Error) =>
      JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32603, message: err.message } }),
    );
    if (text === null) return void held.push(res);
    if (isSend && armed) {
      armed = false;
      silent = true;
      markSent();
      return void held.push(res);
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(text);
    if (timeline.length < 10_000)
      timeline.push({ methods, at, answeredAt: performance.now() - origin });
  });
  const hold = (match: (body: string) => boolean) => {
    const holder = {
      match,
      bodies: [] as string[],
      waiting: [] as (() => void)[],
      watchers: [] as (() => void)[],
    };
    holding = holder;
    return {
      until: (test: (bodies: string[]) => boolean) =>
        new Promise<void>((resolve) => {
          const check = () => test(holder.bodies) && resolve();
          holder.watchers.push(check);
          check();
        }),
      release() {
        if (holding === holder) holding = null;
        for (const go of holder.waiting.splice(0)) go();
      },
    };
  };
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    sent,
    logQueries,
    counts,
    timeline,
    resetCounts() {
      origin = performance.now();
      timeline.length = 0;
      counts.roundTrips = 0;
      counts.calls = 0;
      counts.methods = {};
      counts.trips = [];
    },
    setDelay(ms: number) {
      delayMs = ms;
    },
    silenceAfterNextSend() {
      armed = true;
    },
    breakNextSend() {
      breakArmed = true;
    },
    /** The next send is refused by "the node" (a JSON-RPC error): nothing is broadcast. */
    refuseNextSend() {
      refuseArmed = true;
    },
    hold,
    resume() {
      silent = false;
      for (const res of held.splice(0)) res.destroy();
    },
    stop: () =>
      new Promise<void>((resolve) => {
        for (const res of held.splice(0)) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
