/**
 * `client.tools`: the catalogue (`GET /v1/tools`, its search, `GET /v1/tools/categories`,
 * `GET /v1/tools/{name}`) and calls (`POST /v1/tools/{name}`).
 */
import { checkIdempotencyKey } from "../checks.js";
import { FIELDS, listOf, record } from "../shape.js";
import { segment, type Transport } from "../transport.js";
import type {
  QueryOf,
  ToolCategory,
  ToolDescription,
  ToolInput,
  ToolName,
  ToolOutput,
} from "../types.js";

/** `q`: words to search for, best matches first; `category`: one of `categories()`' names. */
export type ToolSearch = QueryOf<"get">;

export interface CallOptions {
  /** Sent as `Idempotency-Key`; one is made for every call when omitted, so retries are charged once. */
  idempotencyKey?: string | undefined;
  signal?: AbortSignal | undefined;
  timeoutMs?: number | undefined;
  maxRetries?: number | undefined;
}

export interface CallResult<O> {
  output: O;
  /** Credits the call cost (`X-Credits-Charged`). */
  creditsCharged: number | undefined;
  /** The account's balance after the call (`X-Credits-Remaining`). */
  creditsRemaining: number | undefined;
  requestId: string | undefined;
  /** True when the gateway replayed a stored answer for the same Idempotency-Key. */
  replayed: boolean;
  /** The x402 settlement receipt (decoded `PAYMENT-RESPONSE`), when the call was paid with the wallet. */
  payment: { success: boolean; transaction: string; network: string; payer: string } | undefined;
  /** Milliseconds the tool's worker took (`Server-Timing: tool`); undefined for a replayed answer. */
  toolMs: number | undefined;
  /** Milliseconds the call's x402 payment took: verified, settled on chain, credited (`Server-Timing: payment`). */
  paymentMs: number | undefined;
  /** Milliseconds the gateway took besides the tool and the payment (`Server-Timing: gateway`). */
  gatewayMs: number | undefined;
}

/** Any other name (an alias, a tool newer than these types); a catalogue name must use its own types. */
type OtherName<S extends string> = S & (S extends ToolName ? never : unknown);

/**
 * The decoded `PAYMENT-RESPONSE`, or undefined when it is not base64 of a JSON object: the call
 * has run and been charged by then, so a receipt that cannot be read never costs the output (as in
 * Python).
 */
function decodeReceipt(value: string): CallResult<unknown>["payment"] {
  try {
    const decoded: unknown = JSON.parse(
      new TextDecoder("utf-8", { fatal: true }).decode(
        Uint8Array.from(atob(value.trim()), (c) => c.charCodeAt(0)),
      ),
    );
    return decoded && typeof decoded === "object" && !Array.isArray(decoded)
      ? (decoded as CallResult<unknown>["payment"])
      : undefined;
  } catch {
    return undefined;
  }
}
const intHeader = (value: string | null) => (value === null ? undefined : Number(value));

/** A `Server-Timing` header (`name;dur=<ms>, …`): each metric's duration by name; one without a duration is left out. */
function serverTiming(header: string | null): Partial<Record<string, number>> {
  const durations: Partial<Record<string, number>> = {};
  for (const metric of (header ?? "").split(",")) {
    const [name, ...params] = metric.split(";").map((part) => part.trim());
    const dur = params.find((param) => param.startsWith("dur="));
    const ms = dur === undefined ? Number.NaN : Number(dur.slice(4));
    if (name && Number.isFinite(ms)) durations[name] = ms;
  }
  return durations;
}

export class Tools {
  constructor(private readonly transport: Transport) {}

  /**
   * Every tool: name, description, input and output JSON Schemas, price, aliases, availability.
   * With `q`, the gateway's ranked search over names, tags and descriptions (best first); with
   * `category`, only that category's tools.
   */
  async list(search: ToolSearch = {}): Promise<ToolDescription[]> {
    const result = await this.transport.request({
      method: "GET",
      path: "/v1/tools",
      query: search,
      idempotent: true,
    });
    return listOf<{ data: ToolDescription[] }>(result, FIELDS.tool).data;
  }

  /** `GET /v1/tools/categories`: each category's name, description and number of tools. */
  async categories(): Promise<ToolCategory[]> {
    const result = await this.transport.request({
      method: "GET",
      path: "/v1/tools/categories",
      idempotent: true,
    });
    return listOf<{ data: ToolCategory[] }>(result, FIELDS.category).data;
  }

  /** One tool by name or alias (404 `tool_not_found` otherwise). */
  async get(name: string): Promise<ToolDescription> {
    const result = await this.transport.request({
      method: "GET",
      path: `/v1/tools/${segment(name)}`,
      idempotent: true,
    });
    return record<ToolDescription>(result, FIELDS.tool);
  }

  /** Calls a tool and returns its output object. */
  call<N extends ToolName>(
    name: N,
    input: ToolInput<N>,
    options?: CallOptions,
  ): Promise<ToolOutput<N>>;
  call<S extends string>(
    name: OtherName<S>,
    input?: Record<string, unknown>,
    options?: CallOptions,
  ): Promise<Record<string, unknown>>;
  async call(name: string, input: unknown, options: CallOptions = {}): Promise<unknown> {
    return (await this.callWithDetails(name as ToolName, input as never, options)).output;
  }

  /** Calls a tool and returns its output with what the call cost and, if paid, the payment receipt. */
  callWithDetails<N extends ToolName>(
    name: N,
    input: ToolInput<N>,
    options?: CallOptions,
  ): Promise<CallResult<ToolOutput<N>>>;
  callWithDetails<S extends string>(
    name: OtherName<S>,
    input?: Record<string, unknown>,
    options?: CallOptions,
  ): Promise<CallResult<Record<string, unknown>>>;
  async callWithDetails(
    name: string,
    input: unknown,
    options: CallOptions = {},
  ): Promise<CallResult<unknown>> {
    // A key given is checked, never dropped: the call is retried, and a retry without its key
    // would be run and charged again.
    checkIdempotencyKey(options.idempotencyKey);
    const { data, response } = await this.transport.request({
      method: "POST",
      path: `/v1/tools/${segment(name)}`,
      // No input is an empty object, as Python sends it: the gateway refuses a call without a body.
      body: input ?? {},
      idempotencyKey: options.idempotencyKey ?? crypto.randomUUID(),
      idempotent: true,
      payable: true,
      signal: options.signal,
      timeoutMs: options.timeoutMs,
      maxRetries: options.maxRetries,
    });
    const receipt =
      response.headers.get("payment-response") ?? response.headers.get("x-payment-response");
    const timing = serverTiming(response.headers.get("server-timing"));
    return {
      output: data,
      creditsCharged: intHeader(response.headers.get("x-credits-charged")),
      creditsRemaining: intHeader(response.headers.get("x-credits-remaining")),
      requestId: response.headers.get("x-request-id") ?? undefined,
      replayed: response.headers.get("idempotent-replayed") === "true",
      payment: receipt ? decodeReceipt(receipt) : undefined,
      toolMs: timing.tool,
      paymentMs: timing.payment,
      gatewayMs: timing.gateway,
    };
  }
}
