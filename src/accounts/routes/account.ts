import { defineRoute } from "../../http/route.js";
import { accountView, accountViewSchema } from "../views.js";

export const getAccount = defineRoute({
  method: "get",
  path: "/account",
  summary: "The calling account: e-mail, tier, credit balance, limits and features.",
  auth: "key",
  response: accountViewSchema,
  async handler({ caller }) {
    return { body: accountView(caller.account) };
  },
});
