import { createHash, timingSafeEqual } from "node:crypto";
import { defineRoute } from "../http/route.js";

/** Compared as digests, in constant time: the token's length is not revealed either. */
const safeEqual = (a: string, b: string) =>
  timingSafeEqual(createHash("sha256").update(a).digest(), createHash("sha256").update(b).digest());

/** Prometheus metrics; behind `METRICS_TOKEN` (a Bearer token) when one is set. */
export const metrics = defineRoute({
  method: "get",
  path: "/metrics",
  summary:
    "Prometheus metrics (text exposition format); a Bearer METRICS_TOKEN when one is configured.",
  auth: "public",
  produces: "text/plain",
  async handler({ services, req }) {
    const token = services.config.metricsToken;
    if (token && !safeEqual(req.get("authorization") ?? "", `Bearer ${token}`))
      return { status: 401, body: { error: "metrics token required" } };
    return {
      text: { contentType: "text/plain; version=0.0.4", body: await services.metrics.render() },
    };
  },
});
