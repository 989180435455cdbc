import { countedAddress } from "../../http/client-address.js";
import { ApiError } from "../../http/errors.js";
import { authenticate, presentedKey } from "../../http/auth.js";
import type { Services } from "../../services.js";
import { isPrivateTool } from "../custom/registry.js";
import type { ToolDefinition } from "../definition.js";
import { defineRoute } from "../../http/route.js";
import { paymentChallenge } from "../../payments/offer.js";
import { toolOfferExtensions } from "../../payments/discovery.js";
import { countsAsRefused, offerForResource } from "../../payments/take-payment.js";
import { carriesPayment, readPaymentHeader } from "../../payments/wire.js";
import { callPaidTool } from "../paid-call.js";
import { toolNotFound } from "../lookup.js";
import { invokeTool, type ToolCallResult } from "../invoke.js";
import { atomicPrice } from "../../lib/money.js";
import { formatCredits } from "../pricing.js";
import { callToolDocument } from "./call-document.js";
import { headerOf, type HttpRequest, type HttpResponse } from "../../http/exchange.js";
import { idempotencyKeyOf } from "../../http/idempotency-key.js";
import { callTiming } from "../timing.js";

/** The answer of a call, however it was paid for, with where its time went (tools/timing.ts). */
function reply(
  services: Services,
  res: HttpResponse,
  result: ToolCallResult,
  extraHeaders?: Record<string, string>,
) {
  const startedAt = res.locals.startedAt as bigint | undefined;
  const timing = startedAt === undefined ? null : callTiming(startedAt, result);
  if (timing) services.metrics.gatewayTime.observe(timing.gatewayMs / 1000);
  const headers = {
    ...result.headers,
    ...(result.replayed ? { "Idempotent-Replayed": "true" } : {}),
    ...extraHeaders,
    ...(timing ? { "Server-Timing": timing.header } : {}),
  };
  return { status: result.status, raw: result.body, headers };
}

/**
 * The tool a call names: a public one (catalogue, operator), else — for a keyed call — one of the
 * account's own tools. A keyed caller naming neither is authenticated before hearing "not found",
 * so nobody learns which tools an account has without one of its keys. Public tools cost no
 * store read here: a catalogue call keeps its one round trip.
 */
async function resolveTool(
  services: Services,
  req: HttpRequest,
  name: string,
  requestId: string,
): Promise<ToolDefinition> {
  const known = services.upstream.findPublic(name);
  if (known) return known;
  if (req.headers["x-api-key"]) {
    const key = presentedKey(req);
    // Whatever the lookup finds or refuses, only the account's own key hears of it (counted, with
    // the tier's window on the answer).
    const own = await services.upstream.find(name, key.accountId).catch(async (err: unknown) => {
      const caller = await authenticate(services, key, requestId);
      throw err instanceof ApiError ? err.withHeaders(caller.headers) : err;
    });
    if (own) return own;
    const caller = await authenticate(services, key, requestId);
    throw toolNotFound(name).withHeaders(caller.headers);
  }
  throw toolNotFound(name);
}

/**
 * The account a key names is the request log's account (set before the call, so every later
 * refusal and failure names it) until the key turns out to be none of its keys: a made-up key
 * naming another account's id (`tg_live_<its id>_…`) otherwise put that account on the 401.
 */
function forgetUnprovenAccount(res: HttpResponse, err: unknown): void {
  if (err instanceof ApiError && err.code === "invalid_api_key") delete res.locals.accountId;
}

/**
 * The REST door onto the invocation service. A caller pays with an API key (credits), or with
 * an x402 payment: a call without either is answered 402 with the offer in both protocol
 * generations, and so is a keyed call short of credits — which may then pay it, key and all.
 */
export const callTool = defineRoute({
  method: "post",
  path: "/:name",
  summary:
    "Call a tool with its JSON input, paid with x-api-key credits or an x402 payment; charged only when the tool succeeds.",
  auth: "public",
  countsItself: true,
  document: callToolDocument,
  handler: ({ services, req, res, params, requestId }) =>
    serveToolCall(services, req, res, params.name!, requestId),
});

/**
 * One call of the tool `name`, on Node's request and response (express's through `callTool`, or
 * Node's own through the keyed lane, tools/routes/keyed-lane.ts); `req.body` is the parsed input.
 */
export async function serveToolCall(
  services: Services,
  req: HttpRequest,
  res: HttpResponse,
  name: string,
  requestId: string,
): Promise<{ status: number; raw: string; headers: Record<string, string> }> {
  const tool = await resolveTool(services, req, name, requestId);
  let idempotencyKey: string | null;
  try {
    idempotencyKey = idempotencyKeyOf(req);
  } catch (invalid) {
    // A keyed call is counted against its account, as every keyed call is (and an account's own
    // tool was found for the account the key names, before the key was checked: a 422 here
    // would tell a made-up key that the account has a tool of that name).
    if (!req.headers["x-api-key"] || !(invalid instanceof ApiError)) throw invalid;
    const caller = await authenticate(services, presentedKey(req), requestId);
    throw invalid.withHeaders(caller.headers);
  }
  const forward = services.upstream.forwarderFor(tool, services.pools.proxy(req, res));
  // The price and the x402 offer are worked out only when needed: keyed calls that can pay never see them.
  const price = () => atomicPrice(tool.cost, services.config.creditPriceAtomic);
  const offer = () =>
    offerForResource(
      services,
      price(),
      `/v1/tools/${tool.name}`,
      `${tool.title}: one call (${formatCredits(tool.cost)})`,
      toolOfferExtensions(tool),
    );

  // Paid with x402: without a key, or by a keyed caller that sends a payment (what x402 clients
  // do after a 402 insufficient_credits, keeping the key) — credited to the key's account then.
  // A keyed call without one costs only the two header reads here.
  const keyed = Boolean(req.headers["x-api-key"]);
  if (services.payments && (!keyed || (carriesPayment(req.headers) && !isPrivateTool(tool)))) {
    const key = keyed ? presentedKey(req) : undefined;
    if (key) res.locals.accountId = key.accountId;
    // A keyless caller is known by its address only (express's req.ip, as limits count it: keyless
    // calls never take the keyed lane); its refused payments are limited, as each cost a chain
    // round trip.
    const address = key ? null : countedAddress((req as { ip?: string }).ip);
    if (address !== null && carriesPayment(req.headers)) services.payments.refused.check(address);
    let settled: Record<string, string> = {};
    try {
      const result = await callPaidTool(
        services,
        {
          tool,
          input: req.body,
          offer: offer(),
          priceAtomic: price(),
          read: () => readPaymentHeader((header) => headerOf(req, header)),
          idempotencyKey,
          key,
          requestId,
          onPaid: (paid) => {
            res.locals.accountId = paid.payment.accountId;
            settled = paid.receiptHeaders;
          },
        },
        forward,
      );
      return reply(services, res, result, settled);
    } catch (err) {
      forgetUnprovenAccount(res, err);
      if (address !== null && countsAsRefused(err))
        // The refusal is the answer: a store that cannot count it does not replace it. Counted
        // there, it shows that limiter's window.
        settled = {
          ...settled,
          ...(await services.payments.refused.count(address, requestId).catch(() => ({}))),
        };
      // Once paid, the payment stands (as credits on the paying account): say so on the error too.
      throw err instanceof ApiError ? err.withHeaders(settled) : err;
    }
  }

  const key = presentedKey(req);
  res.locals.accountId = key.accountId;
  try {
    return reply(
      services,
      res,
      await invokeTool(
        services,
        { tool, input: req.body, key, idempotencyKey, requestId },
        forward,
      ),
    );
  } catch (err) {
    forgetUnprovenAccount(res, err);
    if (
      services.payments &&
      !isPrivateTool(tool) &&
      err instanceof ApiError &&
      err.code === "insufficient_credits"
    ) {
      throw paymentChallenge(
        "insufficient_credits",
        `${err.message} Buy credits, or pay for this call with x402.`,
        offer(),
        err.options.details,
      ).withHeaders(err.options.headers ?? {});
    }
    throw err;
  }
}
