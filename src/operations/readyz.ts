import { z } from "zod";
import { defineRoute } from "../http/route.js";

/** Readiness: the process can reach its store, which every keyed call needs (503 when not). */
export const readyz = defineRoute({
  method: "get",
  path: "/readyz",
  summary: "The process can reach its store (503 when it cannot).",
  auth: "public",
  response: z.object({ status: z.literal("ready") }),
  async handler({ services }) {
    try {
      await services.store.ping();
      return { body: { status: "ready" } };
    } catch {
      return { status: 503, body: { status: "unavailable", store: "unreachable" } };
    }
  },
});
