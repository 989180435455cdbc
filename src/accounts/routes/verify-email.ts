import { z } from "zod";
import { ApiError } from "../../http/errors.js";
import { defineRoute } from "../../http/route.js";
import { readVerificationToken } from "../email-verification.js";
import { EMAIL_VERIFIED_CREDITS } from "../tiers.js";

export const verifyEmail = defineRoute({
  method: "get",
  path: "/verify-email",
  summary: "The link in the verification e-mail: marks the address verified and adds 75 credits, once.",
  auth: "public",
  response: z.object({ account_id: z.string(), email_verified: z.literal(true), credits_added: z.number().int(), credits: z.number().int().optional() }),
  query: z.object({ token: z.string().min(1).max(200) }),
  async handler({ services, query }) {
    const accountId = readVerificationToken(services.config.secretKeys, query.token);
    if (!accountId) throw new ApiError("invalid_token", "The verification link is invalid or has expired.", { param: "token" });
    const outcome = await services.store.verifyEmail(accountId, {
      amount: EMAIL_VERIFIED_CREDITS,
      requestId: `verify-email:${accountId}`,
      reason: "e-mail verified",
    });
    if (outcome === "not_found") throw new ApiError("invalid_token", "The verification link is invalid or has expired.", { param: "token" });
    const account = await services.store.getAccount(accountId);
    return {
      body: { account_id: accountId, email_verified: true, credits_added: outcome === "verified" ? EMAIL_VERIFIED_CREDITS : 0, credits: account?.balance },
    };
  },
});
