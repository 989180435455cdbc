import { z } from "zod";
import {
  countEndpointUse,
  endpointBucket,
  endpointLimitRefusal,
  showWindow,
  windowHeaders,
} from "../../http/endpoint-limits.js";
import { countedAddress } from "../../http/client-address.js";
import { ApiError } from "../../http/errors.js";
import { defineRoute } from "../../http/route.js";
import { boundedEmail } from "../../lib/bounded-formats.js";
import { newAccountId } from "../../lib/ids.js";
import { createAccount } from "../accounts.js";
import { accountView, accountViewSchema, keyView, keyViewSchema } from "../views.js";
import { sendVerificationEmail } from "../email-verification.js";
import { SIGNUP_CREDITS } from "../tiers.js";

const HOUR_MS = 3_600_000;

/** What SMTP carries (RFC 5321 4.5.3.1): a local part of at most 64 octets, domain labels of 63. */
const deliverable = (email: string) => {
  const at = email.lastIndexOf("@");
  return (
    at <= 64 &&
    email
      .slice(at + 1)
      .split(".")
      .every((label) => label.length <= 63)
  );
};

export const signup = defineRoute({
  method: "post",
  path: "/signup",
  summary:
    "Create an account: an API key at once, with 25 credits; 75 more once the e-mail is verified.",
  auth: "public",
  errors: ["email_taken"],
  successStatus: 201,
  response: z.object({
    account: accountViewSchema,
    api_key: z.string().describe("The full key: shown in this answer only."),
    key: keyViewSchema,
  }),
  body: z.strictObject({
    // Trimmed before it is judged (an address pasted with a space or a line break around it was
    // refused as "Invalid email address"); a preprocess keeps the published schema the address's.
    email: z.preprocess(
      (v) => (typeof v === "string" ? v.trim() : v),
      boundedEmail(254).refine(deliverable, {
        error:
          "An e-mail address has at most 64 characters before the @ and 63 in each part of its domain: no mail reaches a longer one.",
      }),
    ),
  }),
  async handler({ services, body, req, res, requestId }) {
    const email = body.email.trim().toLowerCase();
    const limit = services.config.signupsPerHourPerIp;
    // Only sign-ups that create an account count: the slot is taken first (so concurrent
    // attempts cannot overshoot the limit) and given back when no account comes of it.
    // Per address as every per-address limit counts it: an IPv6 client by its /64.
    const address = countedAddress(req.ip);
    const bucket = `signup:${address}`;
    const hit = await services.store.hitRateLimit(bucket, limit, HOUR_MS, requestId);
    const window = windowHeaders(hit, HOUR_MS / 1000);
    if (!hit.allowed) {
      const retryAfter = String(Math.max(1, Math.ceil(hit.resetMs / 1000)));
      const setting = services.config.env === "production" ? "" : " (SIGNUPS_PER_HOUR_PER_IP)";
      throw new ApiError(
        "rate_limited",
        `At most ${limit} sign-ups per hour from one address${setting}.`,
        { headers: { ...window, "RateLimit-Remaining": "0", "Retry-After": retryAfter } },
      );
    }
    showWindow(res, window);
    // 409 email_taken says an address has an account, which the dashboard's sign-in forms never
    // say: refused sign-ups are limited per address too. Taken like the slot above and given
    // back unless the address was taken; once spent, every sign-up from the address is refused
    // alike, so the 429 tells no more than the 409 did.
    const subject = `ip:${address}`;
    const refusedBucket = endpointBucket("signup-refused", subject);
    const refusedHit = await countEndpointUse(services, "signup-refused", subject, requestId);
    if (!refusedHit.allowed) {
      await services.store.releaseRateLimit(bucket, requestId).catch(() => undefined);
      throw endpointLimitRefusal(services, "signup-refused", "client address", refusedHit.resetMs);
    }
    let created;
    try {
      const id = newAccountId();
      if (!(await services.store.claimEmail(email, id, Date.now())))
        throw new ApiError("email_taken", "An account with this e-mail address already exists.", {
          param: "email",
        });
      created = await createAccount(services, {
        id,
        email,
        tier: "free",
        credits: SIGNUP_CREDITS,
        reason: "sign-up grant",
        requestId,
      });
    } catch (err) {
      await Promise.all(
        [
          bucket,
          ...(err instanceof ApiError && err.code === "email_taken" ? [] : [refusedBucket]),
        ].map((b) => services.store.releaseRateLimit(b, requestId).catch(() => undefined)),
      );
      throw err;
    }
    await services.store.releaseRateLimit(refusedBucket, requestId).catch(() => undefined);
    const { account, apiKey, key } = created;
    // Sent beside the answer, not before it: the account and its key exist now, and the key is
    // shown only in this answer. Waiting for a slow or unreachable mail server (nodemailer waits
    // 30 s for a greeting, 2 min for a connection) held the answer past clients' timeouts, and a
    // retry then met 409 email_taken: an account whose key nobody ever saw.
    void sendVerificationEmail(services, account.id, email).catch((err) =>
      services.log.error({ err, account_id: account.id }, "could not send the verification e-mail"),
    );
    return {
      status: 201,
      body: { account: accountView(account), api_key: apiKey, key: keyView(key) },
    };
  },
});
