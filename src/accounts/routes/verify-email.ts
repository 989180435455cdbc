import { z } from "zod";
import { ApiError } from "../../http/errors.js";
import { defineRoute } from "../../http/route.js";
import { readVerificationToken } from "../email-verification.js";
import { EMAIL_VERIFIED_CREDITS } from "../tiers.js";
import { renderNotice, wantsHtml } from "../../pages/notice.js";
import type { Services } from "../../services.js";

export const verifyEmail = defineRoute({
  method: "get",
  path: "/verify-email",
  summary:
    "The link in the verification e-mail: marks the address verified and adds 75 credits, once. A browser gets a page; Accept: application/json gets JSON.",
  auth: "public",
  limit: "verify-email",
  errors: ["invalid_token"],
  response: z.object({
    account_id: z.string(),
    email_verified: z.literal(true),
    credits_added: z.number().int(),
    credits: z.number().int().optional(),
  }),
  query: z.object({ token: z.string().min(1).max(200) }),
  errorPage: (err, basePath) =>
    renderNotice({
      ok: false,
      basePath,
      title: "This link does not work",
      // A link cut short or run together with other text fails the query's own check.
      message: `${err.code === "validation_failed" ? "The verification link is incomplete; copy all of it from the e-mail." : err.message} Ask for a new one with POST /api/v1/account/verification-email.`,
      next: { href: "/docs#tag-account", label: "How to send it again" },
    }),
  async handler(ctx) {
    const reply = await verify(ctx);
    if (!wantsHtml(ctx.req)) return reply;
    const { body } = reply;
    return {
      html: renderNotice({
        ok: true,
        basePath: ctx.services.config.basePath,
        title: "Your e-mail address is verified",
        message:
          body.credits_added > 0
            ? `${body.credits_added} credits were added; your balance is ${body.credits}.`
            : "It was already verified; nothing more to add.",
        next: { href: "/docs", label: "Read the API reference" },
      }),
    };
  },
});

/** Marks the address verified (75 credits, once); throws `invalid_token` for a bad link. */
async function verify({ services, query }: { services: Services; query: { token: string } }) {
  const accountId = readVerificationToken(services.config.secretKeys, query.token);
  if (!accountId)
    throw new ApiError("invalid_token", "The verification link is invalid or has expired.", {
      param: "token",
    });
  const outcome = await services.store.verifyEmail(accountId, {
    amount: EMAIL_VERIFIED_CREDITS,
    requestId: `verify-email:${accountId}`,
    reason: "e-mail verified",
  });
  if (outcome === "not_found")
    throw new ApiError("invalid_token", "The verification link is invalid or has expired.", {
      param: "token",
    });
  const account = await services.store.getAccount(accountId);
  return {
    body: {
      account_id: accountId,
      email_verified: true as const,
      credits_added: outcome === "verified" ? EMAIL_VERIFIED_CREDITS : 0,
      credits: account?.balance,
    },
  };
}
