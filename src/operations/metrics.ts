import { ApiError } from "../http/errors.js";
import { defineRoute } from "../http/route.js";
import { sameSecret } from "../lib/same-secret.js";

/** Prometheus metrics; behind `METRICS_TOKEN` (a Bearer token) when one is set. */
export const metrics = defineRoute({
  method: "get",
  path: "/metrics",
  summary:
    "Prometheus metrics (text exposition format); a Bearer METRICS_TOKEN when one is configured.",
  auth: "public",
  errors: ["metrics_token_required"],
  // Open when no METRICS_TOKEN is set, that token as a Bearer one when it is: the document cannot
  // know which, so it offers both (the MetricsToken scheme says when it applies).
  security: [{}, { MetricsToken: [] }],
  produces: "text/plain",
  async handler({ services, req }) {
    const token = services.config.metricsToken;
    if (token && !sameSecret(req.get("authorization") ?? "", `Bearer ${token}`))
      // In the one error shape, as every refusal is (it was a bare {"error": "…"} string).
      throw new ApiError(
        "metrics_token_required",
        "GET /metrics needs the METRICS_TOKEN: send Authorization: Bearer <token>.",
        { headers: { "WWW-Authenticate": 'Bearer realm="metrics"' } },
      );
    return {
      text: { contentType: "text/plain; version=0.0.4", body: await services.metrics.render() },
    };
  },
});
