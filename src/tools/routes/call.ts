import type { Request, Response } from "express";
import { ApiError } from "../../http/errors.js";
import { authenticate, presentedKey } from "../../http/auth.js";
import { defineRoute, parseInput } from "../../http/route.js";
import { paymentChallenge } from "../../payments/offer.js";
import { toolExtensions } from "../../payments/discovery.js";
import { offerForResource, takePayment } from "../../payments/take-payment.js";
import { findTool } from "../catalogue/index.js";
import type { Forwarder } from "../forward.js";
import { callFingerprint, invokeTool, type ToolCallResult } from "../invoke.js";
import { atomicPrice, formatCredits, formatUsd } from "../pricing.js";

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** The answer of a call, however it was paid for. */
function reply(result: ToolCallResult, extraHeaders: Record<string, string> = {}) {
  return { status: result.status, raw: result.body, headers: { ...result.headers, ...(result.replayed ? { "Idempotent-Replayed": "true" } : {}), ...extraHeaders } };
}

/**
 * The REST door onto the invocation service. A caller pays with an API key (credits), or with
 * no key, with an x402 payment: a call without either is answered 402 with the offer in both
 * protocol generations, and so is a keyed call short of credits.
 */
export function callTool(forwarderFor: (req: Request, res: Response) => Forwarder) {
  return defineRoute({
    method: "post",
    path: "/:name",
    summary: "Call a tool with its JSON input, paid with x-api-key credits or an x402 payment; charged only when the tool succeeds.",
    auth: "public",
    async handler({ services, req, res, params, requestId }) {
      const tool = findTool(params.name!);
      if (!tool) throw new ApiError("tool_not_found", `No tool named ${params.name}. GET /v1/tools lists them.`);
      const idempotencyKey = req.get("idempotency-key") ?? null;
      if (idempotencyKey !== null && !IDEMPOTENCY_KEY.test(idempotencyKey)) {
        throw new ApiError("validation_failed", "Idempotency-Key must be 1 to 255 printable ASCII characters.", { param: "Idempotency-Key" });
      }
      const forward = forwarderFor(req, res);
      const price = atomicPrice(tool.cost, services.config.creditPriceAtomic);
      // The x402 offer is built only when it is needed: keyed calls that can pay never see it.
      const offer = () => offerForResource(services, price, `/v1/tools/${tool.name}`, `${tool.title}: one call (${formatCredits(tool.cost)})`, toolExtensions(tool));

      if (!req.get("x-api-key") && services.payments) {
        const { payment, receiptHeaders: settled } = await takePayment(services, req, {
          offer: offer(),
          priceAtomic: price,
          grant: { credits: tool.cost, type: "one_time", plan: null, planChange: null, description: tool.name },
          // The call is idempotent on its payment: every retry of it runs (or replays) under one key.
          call: { fingerprint: callFingerprint(tool.name, req.body), key: idempotencyKey },
          requiredMessage: `Send an API key, or pay $${formatUsd(price)} in USDC for this call with x402.`,
          // Never take money for a call that cannot run: input, availability…
          beforeVerifying: () => {
            parseInput(tool.input, req.body, "body");
            const unavailable = services.pools.unavailableReason(tool.name);
            if (unavailable) throw new ApiError("tool_unavailable", `The ${tool.name} tool is unavailable: ${unavailable}.`);
          },
          // …nor for one the wallet's account may not make now: its rate-limit slot is taken here
          // (under this request id, which the call's own admission then finds already counted).
          beforeSettling: async (accountId) => void (await authenticate(services, { accountId, hash: null }, requestId)),
        });
        res.locals.accountId = payment.accountId;
        try {
          const call = { tool, input: req.body, key: { accountId: payment.accountId, hash: null }, idempotencyKey: payment.callKey, idempotencyTtlSeconds: payment.retainSeconds, requestId };
          return reply(await invokeTool(services, call, forward), settled);
        } catch (err) {
          // The payment stands (as credits on the wallet's account): say so on the error too.
          throw err instanceof ApiError ? err.withHeaders(settled) : err;
        }
      }

      const key = presentedKey(req);
      res.locals.accountId = key.accountId;
      try {
        return reply(await invokeTool(services, { tool, input: req.body, key, idempotencyKey, requestId }, forward));
      } catch (err) {
        if (services.payments && err instanceof ApiError && err.code === "insufficient_credits") {
          throw paymentChallenge("insufficient_credits", `${err.message} Buy credits, or pay for this call with x402.`, offer(), err.options.details).withHeaders(err.options.headers ?? {});
        }
        throw err;
      }
    },
  });
}
