import { z } from "zod";
import { defineRoute } from "../http/route.js";

/**
 * Readiness: the process can reach its store, which every keyed call needs (503 when not). A
 * books export that lags or fails (PostgreSQL down) leaves the process ready — calls are still
 * served and charged — and is named in `warnings`, as on the status page.
 */
export const readyz = defineRoute({
  method: "get",
  path: "/readyz",
  summary:
    "The process can reach its store (503 when it cannot); `warnings` names a degraded books export.",
  auth: "public",
  response: z.object({ status: z.literal("ready"), warnings: z.array(z.string()).optional() }),
  async handler({ services }) {
    try {
      await services.store.ping();
    } catch {
      return { status: 503, body: { status: "unavailable", store: "unreachable" } };
    }
    const books = services.books?.health();
    if (books?.state === "degraded")
      return {
        body: { status: "ready", warnings: [`books export degraded: ${books.detail ?? ""}`] },
      };
    return { body: { status: "ready" } };
  },
});
