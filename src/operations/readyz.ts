import { z } from "zod";
import { defineRoute } from "../http/route.js";

/** What /readyz answers: ready (200), or not, saying what it cannot reach or that it is stopping (503). */
const ready = z.object({ status: z.literal("ready"), warnings: z.array(z.string()).optional() });
const storeDown = z.object({ status: z.literal("unavailable"), store: z.literal("unreachable") });
const shuttingDown = z.object({ status: z.literal("shutting_down") });
const notReady = z.union([storeDown, shuttingDown]);

/**
 * Readiness: the process can reach its store, which every keyed call needs (503 when not), and is
 * not shutting down (503 during SHUTDOWN_DELAY_SECONDS, while it still serves the rest). A
 * books export that lags or fails (PostgreSQL down) leaves the process ready — calls are still
 * served and charged — and is named in `warnings`, as on the status page.
 */
export const readyz = defineRoute({
  method: "get",
  path: "/readyz",
  summary:
    "The process can reach its store and is not shutting down (503 when it cannot or is); `warnings` names a degraded books export.",
  auth: "public",
  response: ready,
  otherAnswers: {
    503: {
      description:
        "Not ready: the store cannot be reached, or the process is shutting down. The readiness answer, not the error shape.",
      body: notReady,
    },
  },
  async handler({ services }) {
    // Asked first: a stopping process is taken out whatever its store does.
    if (services.readiness.draining)
      return {
        status: 503,
        body: { status: "shutting_down" } satisfies z.infer<typeof shuttingDown>,
      };
    try {
      await services.store.ping();
    } catch {
      // The probe's own answer, in the 200's shape, not the API's error shape: readiness probes
      // and the operators' tooling read `status` (and `store`, what is unreachable) from it, and
      // an orchestrator polls on its own period, so there is no Retry-After. The document says so
      // (`otherAnswers`) rather than this answer changing under the probes that read it.
      return {
        status: 503,
        body: { status: "unavailable", store: "unreachable" } satisfies z.infer<typeof storeDown>,
      };
    }
    const books = services.books?.health();
    if (books?.state === "degraded")
      return {
        body: {
          status: "ready",
          warnings: [`books export degraded: ${books.detail ?? ""}`],
        } satisfies z.infer<typeof ready>,
      };
    return { body: { status: "ready" } satisfies z.infer<typeof ready> };
  },
});
