import { z } from "zod";
import { eventsPage } from "../../books/events.js";
import { EVENT_TYPES, eventRecordSchema, type EventType } from "../../events/types.js";
import { defineRoute } from "../../http/route.js";
import { listOf } from "../views.js";
import { BOOKS_WAIT_MS, pageOf, timeRangeOf } from "./usage.js";
import { queryInteger } from "../../http/query-integer.js";
import { queryTime } from "../../http/query-time.js";

export const listEvents = defineRoute({
  method: "get",
  path: "/events",
  summary:
    "The account's events, newest first, paginated (keyset: next_cursor); filter by type and time. Read from the books (PostgreSQL) merged with the events not yet exported; without the books, the last 1,000.",
  auth: "key",
  errors: ["invalid_range", "invalid_cursor", "books_unavailable"],
  query: z.strictObject({
    limit: queryInteger({ min: 1, max: 1000, default: 100 }),
    cursor: z.string().max(80).optional().describe("The next_cursor of the previous page."),
    type: z
      .enum(EVENT_TYPES as [EventType, ...EventType[]])
      .optional()
      .describe("Only events of this type."),
    from: queryTime("Events at or after this time (ISO 8601)."),
    to: queryTime("Events before this time (ISO 8601)."),
  }),
  response: listOf(eventRecordSchema.omit({ account_id: true })),
  async handler({ services, caller, query }) {
    const db = services.books ? await services.books.ready(BOOKS_WAIT_MS) : null;
    const page = await pageOf(
      eventsPage(
        services.store,
        db,
        caller.account.id,
        {
          type: query.type,
          ...timeRangeOf(query),
        },
        { cursor: query.cursor, limit: query.limit },
      ),
    );
    return {
      body: {
        object: "list",
        data: page.items.map(({ account_id: _, ...e }) => e),
        next_cursor: page.nextCursor,
      },
    };
  },
});
