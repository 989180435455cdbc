import { z } from "zod";
import { ApiError } from "../../http/errors.js";
import { defineRoute } from "../../http/route.js";
import { sendVerificationEmail } from "../email-verification.js";

export const resendVerification = defineRoute({
  method: "post",
  path: "/account/verification-email",
  summary: "Send the verification e-mail again.",
  auth: "key",
  limit: "verification-email",
  successStatus: 202,
  response: z.object({ sent_to: z.string() }),
  async handler({ services, caller }) {
    const { account } = caller;
    if (account.emailVerified)
      throw new ApiError("validation_failed", "The e-mail address is already verified.");
    if (!account.email)
      throw new ApiError("validation_failed", "The account has no e-mail address.");
    // Accepted, then sent (as sign-up sends it): a mail server that does not answer held this
    // answer 30 s and turned it into a 500 internal_error that told the caller nothing more.
    void sendVerificationEmail(services, account.id, account.email).catch((err) =>
      services.log.error({ err, account_id: account.id }, "could not send the verification e-mail"),
    );
    return { status: 202, body: { sent_to: account.email } };
  },
});
