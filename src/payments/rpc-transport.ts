/**
 * The JSON-RPC transport of the chain clients: viem's HTTP JSON-RPC client over Node's own HTTP
 * client (rpc-fetch.ts), with the requests made in one turn of the event loop sent together as
 * one JSON-RPC batch.
 *
 * Why not viem's own `http({ batch })`: its batch waits for a `setTimeout(…, 0)`, which Node
 * clamps to 1 ms and runs only in the next timers phase, so every batched request (a
 * verification's reads, each send, each receipt look) waited 1–2 ms before leaving: 3–6 ms
 * on every paid call, measured (`BENCH_ONLY=timeline npm run bench:paid`). Here the batch leaves
 * on `setImmediate`, right after the current turn's callbacks and promise continuations: all the
 * reads a verification starts together still leave as one batch, and nothing waits for a timer.
 * A request that waits for the chain (EIP-7966 `eth_sendRawTransactionSync`, answered once the
 * transaction is in a block) always leaves alone, at once, with `waitTimeout`: in a batch it would
 * hold up every read beside it until the block.
 */
import { createTransport, RpcRequestError, type EIP1193RequestFn, type Transport } from "viem";
import { getHttpRpcClient, type HttpRpcClient } from "viem/utils";
import { rpcFetch } from "./rpc-fetch.js";

interface Queued {
  body: { method: string; params?: unknown; id: number };
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

export interface BatchingHttpOptions {
  /** How long one HTTP request may take (ms). */
  timeout: number;
  /** The most requests in one batch; 0 sends every request alone. */
  batchSize: number;
  /** How long a request that waits for the chain may take (ms); default `timeout`. */
  waitTimeout?: number;
}

/** Methods answered only once the chain has done something: sent alone, never in a batch. */
const WAITS_FOR_CHAIN = new Set(["eth_sendRawTransactionSync"]);

let nextId = 0;

/** A viem transport to `url` whose requests made together leave as one JSON-RPC batch (see above). */
export function batchingHttp(url: string, options: BatchingHttpOptions): Transport<"http"> {
  return () => {
    const rpc = getHttpRpcClient(url, { timeout: options.timeout, fetchFn: rpcFetch() });
    let queue: Queued[] = [];
    const flush = () => {
      const batch = queue;
      queue = [];
      for (let i = 0; i < batch.length; i += options.batchSize)
        void send(rpc, url, batch.slice(i, i + options.batchSize));
    };
    const request = ((args: { method: string; params?: unknown }) =>
      new Promise<unknown>((resolve, reject) => {
        const item = { body: { ...args, id: nextId++ }, resolve, reject };
        if (WAITS_FOR_CHAIN.has(args.method))
          return void send(rpc, url, [item], options.waitTimeout ?? options.timeout);
        if (options.batchSize <= 0) return void send(rpc, url, [item]);
        if (queue.push(item) === 1) setImmediate(flush);
      })) as EIP1193RequestFn;
    return createTransport(
      {
        key: "http",
        name: "HTTP JSON-RPC",
        request,
        // No silent retries: an RPC that stops answering must surface quickly (chain.ts).
        retryCount: 0,
        timeout: options.timeout,
        type: "http",
      },
      { url },
    );
  };
}

/** Sends `items` (one alone as a plain request, several as a batch) and settles each from its own answer, matched by id. */
async function send(
  rpc: HttpRpcClient,
  url: string,
  items: Queued[],
  timeout?: number,
): Promise<void> {
  type Answer = { id?: unknown; result?: unknown; error?: { code: number; message: string } };
  const settle = (item: Queued, answer: Answer | undefined) => {
    if (answer && "result" in answer && !answer.error) return item.resolve(answer.result);
    const error = answer?.error ?? {
      code: -32603,
      message: "the RPC's answer has no reply to this request",
    };
    item.reject(new RpcRequestError({ body: item.body, error, url }));
  };
  try {
    if (items.length === 1)
      return settle(items[0]!, await rpc.request({ body: items[0]!.body, timeout }));
    // viem's client answers a batch with a list (it refuses a short one as a whole); a node
    // that refuses the batch itself answers one error without an id, which is every request's.
    const answers = (await rpc.request({ body: items.map((item) => item.body) })) as Answer[];
    const byId = new Map(answers.map((answer) => [answer.id, answer]));
    const refusal = answers.find((answer) => answer.id == null && answer.error);
    for (const item of items) settle(item, byId.get(item.body.id) ?? refusal);
  } catch (err) {
    for (const item of items) item.reject(err);
  }
}
