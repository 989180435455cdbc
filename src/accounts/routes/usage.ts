import { z } from "zod";
import { defineRoute } from "../../http/route.js";
import { ledgerEntryView, ledgerEntryViewSchema, listOf } from "../views.js";

export const pageQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(50),
  cursor: z.string().max(64).optional(),
});

export const usage = defineRoute({
  method: "get",
  path: "/usage",
  summary: "The account's ledger: every credit change, newest first, paginated.",
  auth: "key",
  query: pageQuery,
  response: listOf(ledgerEntryViewSchema),
  async handler({ services, caller, query }) {
    const page = await services.store.ledger(caller.account.id, query);
    return {
      body: {
        object: "list",
        data: page.items.map(ledgerEntryView),
        next_cursor: page.nextCursor,
      },
    };
  },
});
