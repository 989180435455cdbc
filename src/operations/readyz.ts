import { z } from "zod";
import { defineRoute } from "../http/route.js";

/** What /readyz answers: ready (200), or not, saying what it cannot reach (503). */
const ready = z.object({ status: z.literal("ready"), warnings: z.array(z.string()).optional() });
const notReady = z.object({ status: z.literal("unavailable"), store: z.literal("unreachable") });

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
  response: ready,
  otherAnswers: {
    503: {
      description:
        "Not ready: the store cannot be reached. The readiness answer, not the error shape.",
      body: notReady,
    },
  },
  async handler({ services }) {
    try {
      await services.store.ping();
    } catch {
      // The probe's own answer, in the 200's shape, not the API's error shape: readiness probes
      // and the operators' tooling read `status` (and `store`, what is unreachable) from it, and
      // an orchestrator polls on its own period, so there is no Retry-After. The document says so
      // (`otherAnswers`) rather than this answer changing under the probes that read it.
      return {
        status: 503,
        body: { status: "unavailable", store: "unreachable" } satisfies z.infer<typeof notReady>,
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
