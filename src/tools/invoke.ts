import { createHash } from "node:crypto";
import stableStringify from "safe-stable-stringify";
import { clip } from "../lib/readable-text.js";
import { TIERS } from "../accounts/tiers.js";
import { eventRecord } from "../events/types.js";
import { admitted, type Admitted } from "../http/auth.js";
import { ApiError, type ErrorCode } from "../http/errors.js";
import { StoreUnavailableError } from "../store/errors.js";
import { newEventId } from "../lib/ids.js";
import type { Services } from "../services.js";
import {
  OPERATION_TTL_SECONDS,
  type AdmitRequest,
  type FailedAnswer,
  type IdempotencyClaim,
  type IdempotencyState,
  type StoredResponse,
} from "../store/types.js";
import type { ToolDefinition } from "./definition.js";
import { isPrivateTool, isUpstreamTool } from "./custom/registry.js";
import type { ForwardOutcome, Forwarder } from "./forward.js";
import { preflight } from "./preflight.js";
import { PoolBusyError } from "./priority-gate.js";
import { untilStoreAnswers } from "../credits/until-store-answers.js";

/**
 * The one path every tool call takes, whichever door it came through (decisions.md D6):
 * validate → admit (key, rate limit, debit: one store round trip) → wait for a worker slot →
 * forward → keep the charge on 2xx, or refund it once with `tool.error` on any failure.
 * A call that fails validation, or whose tool cannot run, is never charged.
 */
export interface ToolCall {
  tool: ToolDefinition;
  input: unknown;
  /** The caller: an API key, or (hash null) an account already identified by its payment. */
  key: { accountId: string; hash: string | null };
  idempotencyKey: string | null;
  /** How long the answer is kept for replays; default IDEMPOTENCY_TTL_SECONDS (a paid call: its payment's retention). */
  idempotencyTtlSeconds?: number;
  requestId: string;
  /** The door counted this call against the rate limit already (MCP counts every message as it arrives). */
  counted?: boolean;
  /**
   * When this execution's hold on its Idempotency-Key may run out (no later than the claim's
   * lease): from then a retry may take the claim over and reuse the debit, so a refund the store
   * has not taken by then is left to that retry (refundDeadline).
   */
  claimHeldUntil?: number;
  /** A keyed x402 call: the hold its key's check put on the key's budget, which its debit takes over (AdmitRequest.budgetHold). */
  budgetHold?: string;
  /**
   * Why the door could not write this answer (a tool's 2xx body), or null: asked before the charge
   * is kept, so an answer the door cannot deliver fails the call inside the gateway (500
   * internal_error, refunded) rather than being charged and lost (MCP's door: `unwritable`).
   */
  unwritable?: (body: Buffer) => string | null;
}

/**
 * What makes two calls "the same request" for idempotency: the tool and the body, as JSON with
 * its keys in order, so a retry its client serialised again (keys in another order) is the same.
 */
export const callFingerprint = (toolName: string, input: unknown) =>
  createHash("sha256")
    .update(`${toolName}\n${stableStringify(input)}`)
    .digest("hex");

export interface ToolCallResult extends StoredResponse {
  replayed: boolean;
  /** Milliseconds the tool's worker took, when this request ran it (not kept with a stored answer). */
  toolMs?: number;
  /** Milliseconds this request's x402 payment took to be taken (checked, verified, settled, credited), when it paid. */
  paymentMs?: number;
}

const IDEMPOTENCY_POLL_MS = 25;

export async function invokeTool(
  services: Services,
  call: ToolCall,
  forward: Forwarder,
): Promise<ToolCallResult> {
  const { tool, requestId } = call;
  let input: unknown;
  try {
    input = preflight(services, tool, call.input);
  } catch (err) {
    // Authenticate (and count the request) before saying anything about the call; charge nothing.
    // The answer shows the window it was counted in, as every counted answer does.
    const caller = await checkCaller(services, call);
    throw err instanceof ApiError ? err.withHeaders(caller.headers) : err;
  }
  if (!call.idempotencyKey) return execute(services, call, input, forward, null);

  const idempotencyKey = call.idempotencyKey;
  const ttlSeconds = call.idempotencyTtlSeconds ?? services.config.idempotencyTtlSeconds;
  const claim: IdempotencyClaim = {
    fingerprint: callFingerprint(tool.name, call.input),
    requestId,
    leaseMs: idempotencyLeaseMs(services, tool),
    ttlSeconds,
  };
  // The key's claim and the call's admission in one round trip (the store's admitIdempotent),
  // again while another request with this key is executing.
  let claimedAt = Date.now();
  // A duplicate that finds the call under its key running is counted when it arrives, as every
  // request is (refused at once over the limit), not once the answer it waits for comes: the
  // requests waiting were never refused, however many one account sent. Its window as counted then.
  let countedOnArrival: Admitted | null = null;
  let counting = call;
  const admission = await whileInProgress(
    claim.leaseMs,
    async (awaiting) => {
      // The claim's lease runs from when Redis runs the script, so from no earlier than this.
      claimedAt = Date.now();
      try {
        return await services.store.admitIdempotent(
          admitRequest(counting, "tool call", tool.cost),
          idempotencyKey,
          { ...claim, awaiting },
        );
      } catch (err) {
        // As in `execute`: the debit may have happened without us hearing of it.
        if (err instanceof StoreUnavailableError)
          refundWhenBack(
            services,
            refundOf({ ...call, claimHeldUntil: claimedAt + claim.leaseMs }),
          );
        throw err;
      }
    },
    (result) => result.claim,
    async () => {
      if (call.counted) return;
      countedOnArrival = await checkCaller(services, call);
      counting = { ...call, counted: true };
    },
  );
  const state = admission.claim;
  if (state.state === "started") {
    // Executed under the claim's request id: the debit is idempotent per request id, so a retry
    // that takes over the claim of a process that died mid-call is not charged a second time.
    const running = {
      ...counting,
      requestId: state.requestId,
      idempotencyTtlSeconds: ttlSeconds,
      claimHeldUntil: claimedAt + claim.leaseMs,
    };
    if (!admission.admitted) return execute(services, running, input, forward, idempotencyKey);
    return serveAdmitted(
      services,
      running,
      admitted(admission.admitted),
      input,
      forward,
      idempotencyKey,
    );
  }
  const checked = await checkCaller(services, counting);
  const caller: Admitted = countedOnArrival
    ? { ...checked, headers: (countedOnArrival as Admitted).headers }
    : checked;
  if (state.state === "completed") return replayOf(state.response, caller);
  if (state.state === "not_kept") throw answerNotKept().withHeaders(caller.headers);
  if (state.state === "failed") throw failureReplayed(state.failure).withHeaders(caller.headers);
  throw new ApiError(
    "idempotency_conflict",
    "This Idempotency-Key was already used with a different request body.",
    { param: "Idempotency-Key", headers: caller.headers },
  );
}

/**
 * Repeats `attempt` while its claim is another request's, in progress (it waits for that answer,
 * to replay it), for up to the claim's lease; then refuses the request as still in progress.
 * Each attempt names the request it is waiting on: if that one fails, this one is told so
 * ("failed") rather than running the call a second time.
 */
async function whileInProgress<T>(
  leaseMs: number,
  attempt: (awaiting: string | undefined) => Promise<T>,
  claimOf: (result: T) => IdempotencyState,
  onFirstWait?: () => Promise<void>,
): Promise<T> {
  const deadline = Date.now() + leaseMs;
  let awaiting: string | undefined;
  for (let looks = 0; ; looks++) {
    const result = await attempt(awaiting);
    const claim = claimOf(result);
    if (claim.state !== "in_progress") return result;
    if (awaiting === undefined) await onFirstWait?.();
    awaiting = claim.requestId;
    if (Date.now() > deadline) throw stillInProgress();
    await new Promise((r) => setTimeout(r, pollDelayMs(looks)));
  }
}

/**
 * 25 ms, doubling to at most 400 ms: a short call's copies are answered at once, and a long one's
 * (an AI tool's lease is minutes) do not ask the store 40 times a second each while they wait.
 */
const pollDelayMs = (looks: number) => Math.min(IDEMPOTENCY_POLL_MS * 2 ** looks, 400);

/** The answer of the execution a request waited on, which failed (and was refunded): the same refusal. */
export const failureReplayed = ({ code, message, param, retryAfter }: FailedAnswer) =>
  new ApiError(code as ErrorCode, message, {
    ...(param ? { param } : {}),
    ...(retryAfter ? { headers: { "Retry-After": retryAfter } } : {}),
  });

/**
 * A retry of a served call whose answer was not kept (IDEMPOTENCY_KEPT_BYTES), named by what made
 * it the same call: its Idempotency-Key, a paid call's payment identifier, or the payment itself.
 */
export const answerNotKept = (
  by: "Idempotency-Key" | "payment identifier" | "payment" = "Idempotency-Key",
) =>
  new ApiError(
    "idempotency_answer_not_kept",
    `The call sent with this ${by} was served and charged, but its answer was not kept: this account's answers kept for replays were at their limit. Nothing was charged for this request; ${by === "payment" ? "pay for the call with a new authorization" : "send the call with a new key"} to run it again.`,
    { param: by === "Idempotency-Key" ? by : "payment" },
  );

/** What a failed call leaves for the requests waiting on its Idempotency-Key. */
const failedAnswer = (failure: ApiError): FailedAnswer => {
  const retryAfter = failure.options.headers?.["Retry-After"];
  const { param } = failure.options;
  return {
    code: failure.code,
    message: failure.message,
    ...(param ? { param } : {}),
    ...(retryAfter ? { retryAfter } : {}),
  };
};

const stillInProgress = () =>
  new ApiError(
    "idempotency_conflict",
    "A request with this Idempotency-Key is still in progress.",
    {
      param: "Idempotency-Key",
    },
  );

/** How long one execution holds its idempotency key: the tool's timeout, the worker-queue wait, and a margin. */
export const idempotencyLeaseMs = (services: Services, tool: ToolDefinition) =>
  timeoutOf(services, tool) + services.config.poolQueueTimeoutMs + 5_000;

/**
 * Claims an idempotency key for one execution, waiting (for up to the claim's lease) while another
 * request holds it: "started" (run it, under the request id given), "completed" (the stored
 * answer), "failed" (the execution it waited on failed), or "conflict" (the key was used for
 * another request).
 */
export async function claimIdempotencyKey(
  services: Services,
  accountId: string,
  key: string,
  claim: IdempotencyClaim,
): Promise<Exclude<IdempotencyState, { state: "in_progress" }>> {
  return whileInProgress(
    claim.leaseMs,
    (awaiting) => services.store.beginIdempotent(accountId, key, { ...claim, awaiting }),
    (state) => state,
  ) as Promise<Exclude<IdempotencyState, { state: "in_progress" }>>;
}

/**
 * A stored answer replayed: the tool's output as first answered, with what this request did and
 * sees now — charged nothing (`X-Credits-Charged: 0`: a client adding the header up counted a
 * replay twice), the balance and the rate limit as they stand (this replay was counted), not as
 * they stood when the answer was stored.
 */
export function replayOf(response: StoredResponse, now: Admitted): ToolCallResult {
  return {
    ...response,
    headers: {
      ...response.headers,
      ...now.headers,
      "X-Credits-Charged": "0",
      "X-Credits-Remaining": String(now.account.balance),
    },
    replayed: true,
  };
}

/**
 * Checks the caller's key, counting the request unless its door already did; charges nothing. The
 * tool is named: a key limited to other tools is refused for the tool before the input is judged.
 */
async function checkCaller(services: Services, call: ToolCall): Promise<Admitted> {
  return admitted(await services.store.admit(admitRequest(call, "", 0)));
}

function timeoutOf(services: Services, tool: ToolDefinition): number {
  return services.config.toolTimeouts[tool.name] ?? tool.timeoutMs;
}

async function execute(
  services: Services,
  call: ToolCall,
  input: unknown,
  forward: Forwarder,
  idempotencyKey: string | null,
): Promise<ToolCallResult> {
  let caller: Admitted;
  try {
    caller = admitted(await services.store.admit(admitRequest(call, "tool call", call.tool.cost)));
  } catch (err) {
    // The store went away mid-admission: the debit may have happened without us hearing of it.
    // Refund it (a no-op if it never happened) as soon as the store answers again.
    if (err instanceof StoreUnavailableError) refundWhenBack(services, refundOf(call));
    // A takeover (the only call here with a key) refused (credits, rate limit, key): the claim
    // keeps the request id its first attempt may have been charged under, free for the next retry.
    else if (idempotencyKey)
      await services.store
        .releaseIdempotent(call.key.accountId, idempotencyKey)
        .catch(() => undefined);
    throw err;
  }
  return serveAdmitted(services, call, caller, input, forward, idempotencyKey);
}

/** The admission of `call` (its key checked, its request counted unless its door did): `cost` debited. */
const admitRequest = (call: ToolCall, reason: string, cost: number): AdmitRequest => ({
  accountId: call.key.accountId,
  keyHash: call.key.hash,
  cost,
  requestId: call.requestId,
  tool: call.tool.name,
  reason,
  countRequest: !call.counted,
  ...(call.budgetHold ? { budgetHold: call.budgetHold } : {}),
});

/** What refunds `call`'s debit, if it was made. */
const refundOf = (call: ToolCall) => ({
  accountId: call.key.accountId,
  requestId: call.requestId,
  idempotencyKey: call.idempotencyKey,
  tool: call.tool.name,
  keyHash: call.key.hash,
  retryUntil: refundDeadline(call),
});

/** A second's margin for the clocks of this process and of Redis (the lease is Redis's). */
const CLOCK_MARGIN_MS = 1000;
/** How long the end of a call (its refund, its stored answer) is retried while the store is away. */
const STORE_RETRY_MS = 5 * 60_000;

/**
 * Until when a refund the store did not take may be retried: five minutes, or, for a call under
 * an Idempotency-Key, until its claim may be taken over. A retry that takes the claim over runs
 * under the same request id on the same debit (not charged again); refunding that debit after
 * would serve the retry for nothing. Left alone, the debit is the retry's charge.
 */
const refundDeadline = (call: Pick<ToolCall, "idempotencyKey" | "claimHeldUntil">) =>
  call.idempotencyKey && call.claimHeldUntil !== undefined
    ? call.claimHeldUntil - CLOCK_MARGIN_MS
    : Date.now() + STORE_RETRY_MS;

/** Serves a call once admitted (charged, or free for the caller): kept on 2xx, refunded once otherwise. */
function serveAdmitted(
  services: Services,
  call: ToolCall,
  caller: Admitted,
  input: unknown,
  forward: Forwarder,
  idempotencyKey: string | null,
): Promise<ToolCallResult> {
  // Charged from here on: the call ends kept (2xx) or refunded once, whatever fails, even an
  // exception raised outside this code while serving the request (the guard aborts `crashed`).
  const started = performance.now();
  const admittedAt = Date.now();
  const outcome = services.requestGuard.answering((crashed) =>
    serveCharged(services, call, caller, input, forward, idempotencyKey, crashed),
  );
  if (services.books) recordTiming(services, call, caller, outcome, { started, admittedAt });
  return outcome;
}

/**
 * The call's timing for its request record in the books (status, outcome, latency), written off
 * the hot path; the record's money facts come from the call's ledger entries (books/requests.ts).
 */
function recordTiming(
  services: Services,
  { tool, requestId }: ToolCall,
  caller: Admitted,
  outcome: Promise<ToolCallResult>,
  { started, admittedAt }: { started: number; admittedAt: number },
): void {
  const record = (status: number, code: string) =>
    services.books!.recordRequest({
      accountId: caller.account.id,
      requestId,
      at: admittedAt,
      tool: tool.name,
      keyId: caller.keyId,
      status,
      outcome: code,
      latencyMs: performance.now() - started,
    });
  outcome.then(
    (result) => record(result.status, "ok"),
    (err: unknown) => {
      const failure = err instanceof ApiError ? err : null;
      record(failure?.status ?? 500, failure?.code ?? "internal_error");
    },
  );
}

async function serveCharged(
  services: Services,
  { tool, key, requestId, idempotencyTtlSeconds, claimHeldUntil, unwritable }: ToolCall,
  caller: Admitted,
  input: unknown,
  forward: Forwarder,
  idempotencyKey: string | null,
  crashed: AbortSignal,
): Promise<ToolCallResult> {
  const { store, pools, config } = services;
  const accountId = caller.account.id;
  const refundUntil = refundDeadline({ idempotencyKey, claimHeldUntil });
  // Open until kept or refunded: if this process dies first, a survivor refunds it
  // (credits/open-charges.ts). A free call has nothing to refund.
  const open = caller.charged
    ? services.openCharges.track({
        accountId,
        requestId,
        idempotencyKey,
        tool: tool.name,
        keyHash: key.hash,
        // With no Idempotency-Key nothing can take the debit over: a survivor refunds it whenever
        // it finds it (the process's record of it lasts an hour). Five minutes, the store-retry
        // bound, left a lone process down longer than that keeping its callers' credits.
        refundUntil: idempotencyKey ? refundUntil : Date.now() + OPERATION_TTL_SECONDS * 1000,
      })
    : null;
  const closeOpen = async () => open?.close();
  let outcome: ForwardOutcome;
  let toolMs: number | undefined;
  /** Served by the shared workers (not an account's dedicated pool): what the status page's provider health reads. */
  let sharedPool = false;
  try {
    // A Business account bound to its own pool sends the catalogue's calls there and nowhere else
    // (see dedicated-workers.ts). A custom or operator tool goes to its own endpoint whoever calls
    // it: the pool is a workers deployment serving the catalogue's tools only, and a custom tool's
    // input is for its endpoint alone.
    const route = pools.route(tool.pool, isUpstreamTool(tool) ? null : caller.account);
    sharedPool = route.forward === null;
    const release = await route.gate.acquire(
      TIERS[caller.account.tier].priority,
      config.poolQueueTimeoutMs,
      accountId,
    );
    const forwarded = performance.now();
    try {
      outcome = await (route.forward ?? forward)({
        origin: route.origin,
        path: `/tools/${tool.name}`,
        input,
        requestId,
        timeoutMs: timeoutOf(services, tool),
        signal: crashed,
      });
    } finally {
      release();
      toolMs = performance.now() - forwarded;
      services.metrics.observeToolTime(metricsName(tool), toolMs / 1000);
    }
  } catch (err) {
    if (err instanceof PoolBusyError) {
      const busy = new ApiError(
        "worker_pool_busy",
        "Every worker for this tool is busy; retry shortly.",
        { headers: { "Retry-After": "1" } },
      );
      await refundOnce(services, {
        accountId,
        requestId,
        idempotencyKey,
        tool: tool.name,
        keyHash: key.hash,
        reason: "worker pool busy",
        errorCode: null,
        failure: busy,
        retryUntil: refundUntil,
        afterRefund: closeOpen,
      });
      throw busy.withHeaders(caller.headers);
    }
    services.log.error(
      { err, request_id: requestId, tool: tool.name },
      "a charged call failed inside the gateway",
    );
    outcome = { kind: "gateway_error", message: (err as Error)?.message ?? String(err) };
  }

  const notWritten =
    unwritable && outcome.kind === "response" && outcome.status >= 200 && outcome.status < 300
      ? unwritable(outcome.body)
      : null;
  if (notWritten) {
    services.log.error(
      { request_id: requestId, tool: tool.name, reason: notWritten },
      "a charged call's answer could not be written; refunding it",
    );
    outcome = { kind: "gateway_error", message: notWritten };
  }

  if (outcome.kind === "response" && outcome.status >= 200 && outcome.status < 300) {
    // Kept in Redis before the answer goes out. A survivor took this process for dead (it was
    // silent too long) and refunded the call: the answer is withheld, as the refund says.
    if (open && !(await open.keep())) {
      services.metrics.countToolCall(metricsName(tool), "shutting_down");
      throw failureOf(tool, { kind: "interrupted" }).withHeaders(caller.headers);
    }
    const result: StoredResponse = {
      status: 200,
      body: outcome.body.toString("utf8"),
      headers: {
        ...caller.headers,
        "X-Credits-Charged": String(tool.cost),
        "X-Credits-Remaining": String(caller.account.balance),
      },
    };
    if (idempotencyKey) {
      const complete = () =>
        store
          .completeIdempotent(accountId, idempotencyKey, result, {
            ttlSeconds: idempotencyTtlSeconds ?? config.idempotencyTtlSeconds,
            accountLimitBytes: config.idempotencyKeptBytes,
          })
          .then((kept) => {
            if (!kept)
              services.log.info(
                { account_id: accountId, request_id: requestId, tool: tool.name },
                "a served call's answer was not kept for its Idempotency-Key: the account's kept answers are at IDEMPOTENCY_KEPT_BYTES",
              );
          });
      // Stored beside the answer, not before it: the write leaves in the same turn of the loop as
      // the answer (one Redis round trip off the call's way), and on this process's one
      // connection it runs before any later command, a replay's included. Served and charged, the
      // caller gets the answer even if the store cannot keep it for replays right now (a 503
      // would hide a call that was charged): it is stored once the store is back; until then a
      // retry with the key waits, then reruns it under the same request id, reusing its debit
      // (one charge either way), as after a crash between the answer and its copy.
      void complete().catch((err: unknown) => {
        services.log.warn(
          { err, account_id: accountId, request_id: requestId },
          "could not store a served call's answer for its Idempotency-Key; retrying",
        );
        untilStoreAnswers(
          services.log,
          "the stored answer of a served call",
          { account_id: accountId, request_id: requestId, tool: tool.name },
          Date.now() + STORE_RETRY_MS,
          complete,
        );
      });
    }
    services.metrics.countToolCall(metricsName(tool), "ok");
    if (sharedPool && isProviderTool(tool)) services.providerHealth.served(tool.name);
    if (caller.charged) services.metrics.creditsDebited.inc(tool.cost);
    return { ...result, replayed: false, toolMs };
  }

  const failure = failureOf(tool, outcome);
  services.metrics.countToolCall(metricsName(tool), failure.code);
  if (sharedPool && isProviderTool(tool) && providerFailed(outcome))
    services.providerHealth.providerFailed(tool.name, accountId);
  const callerError = failure.code === "validation_failed";
  await refundOnce(services, {
    accountId,
    requestId,
    idempotencyKey,
    tool: tool.name,
    keyHash: key.hash,
    reason: `tool failed: ${failure.code}`,
    errorCode: callerError ? null : failure.code,
    failure,
    retryUntil: refundUntil,
    afterRefund: closeOpen,
  });
  throw failure.withHeaders(caller.headers);
}

/** A catalogue tool whose provider the status page shows ("Provider of …"). */
const isProviderTool = (tool: ToolDefinition) => tool.pool === "provider" && !isUpstreamTool(tool);

/**
 * Whether the call failed because its provider did: the workers said so (`provider_unhealthy`:
 * unreachable, its 5xx, its refusal of the gateway's credentials or quota), or no answer came
 * within the tool's deadline — the workers' own wait for the provider starts later than the
 * gateway's and ends after it, so a provider that hangs is only ever seen as this timeout. Not
 * what the caller asked (an answer its schema refuses, an input the provider finds invalid).
 */
const providerFailed = (outcome: ForwardOutcome): boolean =>
  outcome.kind === "timeout" ||
  (outcome.kind === "response" && workerErrorOf(outcome.body).providerUnhealthy);

/** Accounts name their own tools: counted together as "custom", so they cannot grow the metrics' label set without bound. */
const metricsName = (tool: ToolDefinition) => (isPrivateTool(tool) ? "custom" : tool.name);

/**
 * The `error` of a worker's (or an account's endpoint's, or a dedicated pool's) answer, as far as
 * it can be passed on: strings only, and bounded. The answer is not ours: a number for a message
 * threw here, past the refund (500, charged), and a megabyte of message was relayed whole.
 */
function workerErrorOf(body: Buffer): {
  code?: string;
  message?: string;
  param?: string;
  retryAfter?: number;
  providerUnhealthy: boolean;
} {
  let error: unknown;
  try {
    error = (JSON.parse(body.toString("utf8")) as { error?: unknown } | null)?.error;
  } catch {
    return { providerUnhealthy: false }; // not a worker's JSON
  }
  if (typeof error !== "object" || error === null) return { providerUnhealthy: false };
  const { code, message, param, retry_after, provider_unhealthy } = error as Record<
    string,
    unknown
  >;
  const text = (value: unknown, max: number) =>
    typeof value === "string" && value !== "" ? clip(value, max) : undefined;
  return {
    code: text(code, MAX_WORKER_PARAM),
    message: text(message, MAX_WORKER_MESSAGE),
    param: text(param, MAX_WORKER_PARAM),
    // Whole seconds, at most a minute, whoever answered (an account's endpoint too).
    retryAfter:
      typeof retry_after === "number" && Number.isFinite(retry_after)
        ? Math.min(60, Math.max(1, Math.ceil(retry_after)))
        : undefined,
    providerUnhealthy: provider_unhealthy === true,
  };
}
const MAX_WORKER_MESSAGE = 1000;
const MAX_WORKER_PARAM = 200;

/** What a worker's answer means for the caller; the worker's own message is passed on. */
export function failureOf(tool: ToolDefinition, outcome: ForwardOutcome): ApiError {
  if (outcome.kind === "timeout")
    return new ApiError(
      "tool_timeout",
      `The ${tool.name} tool did not answer in time; the call was not charged.`,
    );
  if (outcome.kind === "unreachable")
    return new ApiError(
      "worker_unavailable",
      `The ${tool.name} tool's workers are unreachable; the call was not charged.`,
      // The bundled workers are restarted after a crash in 1.5–3 s: a client retrying at once (the
      // libraries back off from 0.5 s without it) would spend its retries on the outage.
      { headers: { "Retry-After": "2" } },
    );
  if (outcome.kind === "interrupted")
    return new ApiError(
      "shutting_down",
      `The gateway restarted before the ${tool.name} tool answered; the call was not charged. Retry it.`,
      { headers: { "Retry-After": "1" } },
    );
  if (outcome.kind === "gateway_error")
    return new ApiError(
      "internal_error",
      `The ${tool.name} call failed inside the gateway; it was not charged.`,
    );
  const error = workerErrorOf(outcome.body);
  // After a semicolon, a sentence ended whether or not the worker (or an operator's endpoint)
  // ended it, and begun in lower case unless it begins with a name ("failed; Could not…" read
  // oddly); with no message, the first sentence ends there ("failed; The call…" read oddly too).
  const detail = error.message
    ? `; ${error.message.replace(/^[A-Z](?=[a-z])/, (c) => c.toLowerCase()).replace(/(?<![.!?])$/, ".")}`
    : ".";
  if (outcome.status === 422)
    return new ApiError(
      "validation_failed",
      error.message ?? "The tool refused its input.",
      error.param ? { param: error.param } : {},
    );
  // The tool's provider throttling the gateway (a 429 upstream): a retry after a while succeeds,
  // as when every worker is busy, so the same answer, with the provider's wait (never the
  // tool_unavailable a client does not retry, nor a 502 it cannot tell from breakage).
  if (outcome.status === 503 && error.code === "provider_busy")
    return new ApiError(
      "worker_pool_busy",
      `The ${tool.name} tool is busy${detail} The call was not charged.`,
      { headers: { "Retry-After": String(error.retryAfter ?? 5) } },
    );
  if (outcome.status === 503 && error.code === "tool_unavailable")
    return new ApiError(
      "tool_unavailable",
      `The ${tool.name} tool is unavailable${detail} The call was not charged.`,
    );
  if (outcome.status === 504)
    return new ApiError(
      "tool_timeout",
      `The ${tool.name} tool timed out${detail} The call was not charged.`,
    );
  return new ApiError(
    "tool_failed",
    `The ${tool.name} tool failed${detail} The call was not charged.`,
  );
}

/**
 * The refund of an admission whose outcome is unknown, retried in the background until the store
 * answers (the refund is idempotent: `not_charged` when no debit happened). If the process dies
 * too, the debit stays recorded in the ledger, and a retry with the same Idempotency-Key takes it
 * over instead of paying again.
 */
function refundWhenBack(
  services: Services,
  call: {
    accountId: string;
    requestId: string;
    idempotencyKey: string | null;
    tool: string;
    keyHash: string | null;
    retryUntil: number;
  },
): void {
  untilStoreAnswers(
    services.log,
    "the refund of an admission made while the store was failing",
    { account_id: call.accountId, request_id: call.requestId, tool: call.tool },
    call.retryUntil,
    async () => {
      const result = await services.store.refund(call.accountId, {
        requestId: call.requestId,
        idempotencyKey: call.idempotencyKey,
        tool: call.tool,
        keyHash: call.keyHash,
        reason: "store unavailable during admission",
      });
      if (result.status === "refunded") services.metrics.creditsRefunded.inc(result.amount);
    },
  );
}

/**
 * Gives the call's credits back, at most once, with `tool.error` written in the same atomic
 * step (none for the caller's own input errors) and the call's Idempotency-Key forgotten, so a
 * retry runs again. Retried briefly: a refund must not be lost to a blip.
 */
async function refundOnce(
  services: Services,
  {
    accountId,
    requestId,
    idempotencyKey,
    tool,
    keyHash,
    reason,
    errorCode,
    failure,
    retryUntil,
    afterRefund,
  }: {
    accountId: string;
    requestId: string;
    idempotencyKey: string | null;
    tool: string;
    keyHash: string | null;
    reason: string;
    errorCode: string | null;
    /** The answer the caller gets, also told to the requests waiting on the call's Idempotency-Key. */
    failure: ApiError;
    retryUntil: number;
    /** Once the refund has landed (the call's open record is closed then, not before). */
    afterRefund: () => Promise<void>;
  },
): Promise<void> {
  const events = errorCode
    ? [
        eventRecord(newEventId(), "tool.error", accountId, {
          tool_name: tool,
          credits_charged: 0,
          error_code: errorCode,
          request_id: requestId,
        }),
      ]
    : [];
  const refund = async () => {
    const refunded = await services.store.refund(
      accountId,
      {
        requestId,
        reason,
        idempotencyKey,
        tool,
        keyHash,
        ...(idempotencyKey ? { failure: failedAnswer(failure) } : {}),
      },
      events,
    );
    if (refunded.status === "refunded") services.metrics.creditsRefunded.inc(refunded.amount);
    await afterRefund();
  };
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      return await refund();
    } catch (err) {
      if (attempt < 3) await new Promise((r) => setTimeout(r, 100 * attempt));
      else
        services.log.warn(
          { err, account_id: accountId, request_id: requestId },
          "refund failed; retrying it until the store answers",
        );
    }
  }
  // The caller is told the call was not charged: that must become true once the store is back,
  // however long it is away (test/integration/store-outage-mid-call.test.ts).
  untilStoreAnswers(
    services.log,
    "the refund of a failed call",
    { account_id: accountId, request_id: requestId, tool },
    retryUntil,
    refund,
  );
}
