import { randomBytes } from "node:crypto";
import { sameSecret } from "../lib/same-secret.js";
import type { HttpRequest, HttpResponse } from "./exchange.js";
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/**
 * Marks the status checks' requests to this process's own doors (src/status/components.ts), with
 * the process's `statusProbeToken` as its value: "from loopback with the header" alone let any
 * client of a same-host proxy leave its requests out of the metrics.
 */
export const STATUS_PROBE_HEADER = "x-toolgate-status-probe";

/** How long a scrape waits for each collector (`onScrape`): well inside Prometheus's 10 s scrape timeout. */
const COLLECT_DEADLINE_MS = 1000;

/** Buckets for a request's or a tool's time, in seconds: half a millisecond to a minute. */
const CALL_SECONDS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
];

/**
 * The process's Prometheus metrics, in one registry owned by Services (no global registry, so
 * tests and several gateways in one process never mix their numbers).
 */
export class Metrics {
  readonly registry = new Registry();
  /**
   * This process's status checks' mark (STATUS_PROBE_HEADER), made at start: a check that the
   * round-robin of WEB_CONCURRENCY hands to another process is counted there, a few requests a
   * minute.
   */
  readonly statusProbeToken = randomBytes(16).toString("hex");

  readonly requests = new Counter({
    name: "toolgate_http_requests_total",
    help: "HTTP requests by route, method and status.",
    labelNames: ["route", "method", "status"],
    registers: [this.registry],
  });
  readonly latency = new Histogram({
    name: "toolgate_http_request_duration_seconds",
    help: "HTTP request latency by route.",
    labelNames: ["route", "method"],
    buckets: CALL_SECONDS,
    registers: [this.registry],
  });
  readonly toolCalls = new Counter({
    name: "toolgate_tool_calls_total",
    help: "Tool calls by tool and outcome (ok, or the error code).",
    labelNames: ["tool", "outcome"],
    registers: [this.registry],
  });
  /**
   * A call's time split as its `Server-Timing` answer header splits it (tools/timing.ts): the
   * tool's worker, by tool (every forwarded call, failed or not, REST and MCP alike), and the
   * gateway's own time besides the tool and a payment (successful REST calls: the key check and
   * debit, the body); a payment's own phases are `paymentPhases`. Together they tell an operator
   * whether a slow call was the tool, the chain or the gateway.
   */
  readonly toolTime = new Histogram({
    name: "toolgate_tool_duration_seconds",
    help: "Time a tool's worker took per call (the call forwarded to its answer read whole), by tool.",
    labelNames: ["tool"],
    buckets: CALL_SECONDS,
    registers: [this.registry],
  });
  readonly gatewayTime = new Histogram({
    name: "toolgate_gateway_duration_seconds",
    help: "Time a successful REST tool call spent in the gateway besides its tool and its x402 payment (Server-Timing's gateway).",
    buckets: [
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
    ],
    registers: [this.registry],
  });
  readonly creditsDebited = new Counter({
    name: "toolgate_credits_debited_total",
    help: "Credits debited for tool calls.",
    registers: [this.registry],
  });
  readonly creditsRefunded = new Counter({
    name: "toolgate_credits_refunded_total",
    help: "Credits refunded for failed tool calls.",
    registers: [this.registry],
  });
  readonly payments = new Counter({
    name: "toolgate_payments_total",
    help: "x402 payments by outcome (settled, pending, failed, rejected) and network.",
    labelNames: ["outcome", "network"],
    registers: [this.registry],
  });
  /**
   * Where a new x402 payment's time goes, by phase: `verify` (the chain's one batched read: state
   * and simulation), `settle` (waiting to join a batch, the send and its receipt), `credit` (the
   * account credited and the record saved). What a paid call takes beyond these is the gateway's
   * own HTTP, store and tool work.
   */
  readonly paymentPhases = new Histogram({
    name: "toolgate_payment_phase_seconds",
    help: "Time a new x402 payment spends in each phase (verify, settle, credit), by network.",
    labelNames: ["phase", "network"],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly webhookDeliveries = new Counter({
    name: "toolgate_webhook_deliveries_total",
    help: "Webhook delivery attempts by outcome; dropped: due after its webhook was deleted, so not sent.",
    labelNames: ["outcome"],
    registers: [this.registry],
  });
  readonly webhookInternalErrors = new Counter({
    name: "toolgate_webhook_internal_errors_total",
    help: "Webhook deliveries that could not be attempted for a reason on our side (a secret no SECRET_KEY opens, the store unreachable); retried without using the receiver's retries. Alert on any.",
    registers: [this.registry],
  });
  readonly errors = new Counter({
    name: "toolgate_errors_total",
    help: "Error answers by code (store_unavailable counts Redis outages, chain_unavailable chain RPC errors).",
    labelNames: ["code"],
    registers: [this.registry],
  });
  readonly stalledReadersCut = new Counter({
    name: "toolgate_stalled_readers_cut_total",
    help: "Connections cut off because the client stopped reading its answer for SEND_TIMEOUT_MS (http/stalled-readers.ts).",
    registers: [this.registry],
  });
  /** Read from the store at each scrape (`watchStore`). */
  private storeRequestsSent: () => number = () => 0;
  readonly storeRequests = new Counter({
    name: "toolgate_store_requests_total",
    help: "Requests this process sent to the store (Redis): each a command, a Lua script or a MULTI block, one answer awaited.",
    registers: [this.registry],
    collect: () => {
      this.storeRequests.reset();
      this.storeRequests.inc(this.storeRequestsSent());
    },
  });
  readonly chainRpcErrors = new Counter({
    name: "toolgate_chain_rpc_errors_total",
    help: "Chain RPC requests that failed, by network.",
    labelNames: ["network"],
    registers: [this.registry],
  });
  readonly queueDepth = new Gauge({
    name: "toolgate_queue_depth",
    help: "Waiting work by queue: webhook deliveries (waiting, delayed, active), tool calls queued for a worker slot, x402 payments not yet settled.",
    labelNames: ["queue"],
    registers: [this.registry],
  });
  readonly booksExportLag = new Gauge({
    name: "toolgate_books_export_lag_seconds",
    help: "Age of the oldest ledger entry not yet exported from the store to the books (PostgreSQL), seen by this process's last export pass.",
    registers: [this.registry],
  });
  readonly booksExported = new Counter({
    name: "toolgate_books_exported_entries_total",
    help: "Ledger entries this process inserted into the books.",
    registers: [this.registry],
  });
  readonly booksRecordsDropped = new Gauge({
    name: "toolgate_books_records_dropped",
    help: "Request and payment records this process dropped because the books database stayed unreachable longer than its buffer lasts.",
    registers: [this.registry],
  });
  readonly inFlight = new Gauge({
    name: "toolgate_worker_calls_in_flight",
    help: "Tool calls running on each worker pool.",
    labelNames: ["pool"],
    registers: [this.registry],
  });

  private readonly collectorsLate = new Gauge({
    name: "toolgate_scrape_collectors_late",
    help: "Collectors (gauges read from the store at each scrape) that did not answer within 1 s at this scrape: their gauges show an earlier scrape's values.",
    registers: [this.registry],
  });

  /** Called just before each scrape, for gauges that are read rather than counted. */
  private collectors: (() => Promise<void> | void)[] = [];
  private readonly pendingCollects = new Map<() => Promise<void> | void, Promise<void>>();

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: "toolgate_" });
    // With WEB_CONCURRENCY several processes answer on one port, each with its own numbers: say whose these are.
    new Gauge({
      name: "toolgate_process_pid",
      help: "The id of the gateway process that answered this scrape.",
      registers: [this.registry],
    }).set(process.pid);
  }

  /** Reports the store's request count as `toolgate_store_requests_total`. */
  watchStore(store: { requestsSent(): number }): void {
    this.storeRequestsSent = () => store.requestsSent();
  }

  onScrape(collect: () => Promise<void> | void): void {
    this.collectors.push(collect);
  }

  /**
   * The scrape's text. A collector that reads the store and has not answered within
   * COLLECT_DEADLINE_MS is left behind (its gauges keep their last values, and
   * `toolgate_scrape_collectors_late` says how many were): with Redis paused or gone, the scrape
   * waited on commands that never came back, and the metrics that say so were never read.
   */
  async render(): Promise<string> {
    const timedOut = Symbol("late");
    const outcomes = await Promise.all(
      this.collectors.map((collect) => {
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<typeof timedOut>((resolve) => {
          timer = setTimeout(resolve, COLLECT_DEADLINE_MS, timedOut);
        });
        // A read still pending from an earlier scrape is waited for again, not sent once more:
        // scrapes during an outage do not pile reads up.
        let done = this.pendingCollects.get(collect);
        if (!done) {
          done = Promise.resolve()
            .then(collect)
            .catch(() => undefined)
            .finally(() => this.pendingCollects.delete(collect));
          this.pendingCollects.set(collect, done);
        }
        return Promise.race([done, late]).finally(() => clearTimeout(timer));
      }),
    );
    this.collectorsLate.set(outcomes.filter((o) => o === timedOut).length);
    return this.registry.metrics();
  }

  /**
   * Labelled series looked up once and kept: prom-client validates and hashes a label object on
   * every `inc`/`observe`, work that per call adds up on the hot path. The label values are
   * bounded (route patterns, HTTP methods and statuses, tool names and outcome codes), so are these maps.
   */
  private readonly requestSeries = new Map<
    string,
    { count: Counter.Internal; seconds: Histogram.Internal<"route" | "method"> }
  >();
  private readonly toolCallSeries = new Map<string, Counter.Internal>();
  private readonly toolTimeSeries = new Map<string, Histogram.Internal<"tool">>();

  /** Times one forwarded call of `tool` (a catalogue name, or "custom"). */
  observeToolTime(tool: string, seconds: number): void {
    let series = this.toolTimeSeries.get(tool);
    if (!series) this.toolTimeSeries.set(tool, (series = this.toolTime.labels({ tool })));
    series.observe(seconds);
  }

  /** Counts one tool call by tool and outcome (`ok`, or the error code). */
  countToolCall(tool: string, outcome: string): void {
    const key = `${tool} ${outcome}`;
    let series = this.toolCallSeries.get(key);
    if (!series) this.toolCallSeries.set(key, (series = this.toolCalls.labels({ tool, outcome })));
    series.inc();
  }

  /**
   * Counts a request Node's parser refused before any route saw it (client-errors.ts): an error
   * by its code, and a request of no route and no method (neither may have been read).
   */
  countRefused(status: number, code: string): void {
    this.errors.inc({ code });
    this.requests.inc({ route: "unparsed", method: "unknown", status: String(status) });
  }

  /**
   * Counts and times a finished request by its route pattern (never the raw path: ids would
   * explode the label set); called by the request context's one `close` listener, with 499 for a
   * client that hung up before its answer.
   */
  observeRequest(
    req: HttpRequest & { route?: { path: string }; baseUrl?: string },
    res: HttpResponse,
    status: number,
    seconds: number,
  ): void {
    // The status page's own probes (loopback, marked) would otherwise be most of a quiet
    // component's latency figures.
    const probe = req.headers[STATUS_PROBE_HEADER];
    if (typeof probe === "string" && sameSecret(probe, this.statusProbeToken)) return;
    const route =
      (res.locals.route as string | undefined) ??
      (req.route?.path ? `${req.baseUrl}${req.route.path}` : "unmatched");
    const key = `${route} ${req.method} ${status}`;
    let series = this.requestSeries.get(key);
    if (!series) {
      series = {
        count: this.requests.labels({ route, method: req.method, status: String(status) }),
        seconds: this.latency.labels({ route, method: req.method }),
      };
      this.requestSeries.set(key, series);
    }
    series.count.inc();
    series.seconds.observe(seconds);
  }
}
