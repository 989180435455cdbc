import { z } from "zod";
import { eventRecordSchema } from "../../events/types.js";
import { defineRoute } from "../../http/route.js";

export const listEvents = defineRoute({
  method: "get",
  path: "/events",
  summary:
    "The account's recent events (the last 1,000), newest first, as they were handed to webhook delivery.",
  auth: "key",
  query: z.strictObject({ limit: z.coerce.number().int().min(1).max(1000).default(100) }),
  response: z.object({
    object: z.literal("list"),
    data: z.array(eventRecordSchema.omit({ account_id: true })),
  }),
  async handler({ services, caller, query }) {
    const events = await services.store.listEvents(caller.account.id, query.limit);
    return { body: { object: "list", data: events.map(({ account_id: _, ...e }) => e) } };
  },
});
