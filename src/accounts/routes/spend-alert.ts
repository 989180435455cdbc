import { z } from "zod";
import { ApiError } from "../../http/errors.js";
import { defineRoute } from "../../http/route.js";
import { accountView, accountViewSchema } from "../views.js";

/**
 * The account's spend alert: `spend.threshold_reached` fires (webhooks, the events list) once per
 * calendar month (UTC), when the month's spend reaches the threshold. Setting it — even to the
 * same value — re-arms it for the current month; removing it stops it.
 */
export const setSpendAlert = defineRoute({
  method: "put",
  path: "/account/spend-alert",
  summary:
    "Set the account's spend alert: spend.threshold_reached fires once a month when the month's spend reaches `credits`.",
  auth: "key",
  unrestrictedKey: true,
  body: z.strictObject({
    credits: z
      .number()
      .int()
      .min(1)
      .max(1_000_000_000)
      .describe("The month's spend (credits kept by calls) at which the alert fires."),
  }),
  response: accountViewSchema,
  async handler({ services, caller, body }) {
    const account = await services.store.setSpendAlert(caller.account.id, {
      credits: body.credits,
    });
    if (!account) throw new ApiError("not_found", "No such account.");
    return { body: accountView(account) };
  },
});

export const removeSpendAlert = defineRoute({
  method: "delete",
  path: "/account/spend-alert",
  summary: "Remove the account's spend alert.",
  auth: "key",
  unrestrictedKey: true,
  response: accountViewSchema,
  async handler({ services, caller }) {
    // Decided in the store's one step, not from the account as the call found it: of two DELETEs
    // at once, one removes the alert and the other is 404, as a DELETE after it is.
    const outcome = await services.store.removeSpendAlert(caller.account.id);
    switch (outcome.status) {
      case "not_found":
        throw new ApiError("not_found", "No such account.");
      case "not_set":
        throw new ApiError("not_found", "The account has no spend alert.");
      case "removed":
        return { body: accountView(outcome.account) };
    }
  },
});
