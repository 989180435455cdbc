import { z } from "zod";
import { ApiError } from "../../http/errors.js";
import { defineRoute } from "../../http/route.js";
import { InvalidCursorError, type Page } from "../../store/types.js";
import { ledgerEntryView, ledgerEntryViewSchema, listOf } from "../views.js";

export const pageQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(50),
  cursor: z.string().max(64).optional(),
});

/** A store page; a cursor the list never handed out is 400 `invalid_cursor`, never a restart from the top. */
export async function pageOf<T>(load: Promise<Page<T>>): Promise<Page<T>> {
  try {
    return await load;
  } catch (err) {
    if (err instanceof InvalidCursorError) throw new ApiError("invalid_cursor", "The cursor is not one this list handed out; use a next_cursor value, or omit it to start from the top.", { param: "cursor" });
    throw err;
  }
}

export const usage = defineRoute({
  method: "get",
  path: "/usage",
  summary: "The account's ledger: every credit change, newest first, paginated.",
  auth: "key",
  query: pageQuery,
  response: listOf(ledgerEntryViewSchema),
  async handler({ services, caller, query }) {
    const page = await pageOf(services.store.ledger(caller.account.id, query));
    return {
      body: {
        object: "list",
        data: page.items.map(ledgerEntryView),
        next_cursor: page.nextCursor,
      },
    };
  },
});
