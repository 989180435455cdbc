import { z } from "zod";
import { defineRoute } from "../http/route.js";

/** Liveness: the process is up and serving HTTP (asks nothing else). */
export const healthz = defineRoute({
  method: "get",
  path: "/healthz",
  summary: "The process is up.",
  auth: "public",
  response: z.object({ status: z.literal("ok") }),
  async handler() {
    return { body: { status: "ok" } };
  },
});
