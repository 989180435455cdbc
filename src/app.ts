import { createHash, timingSafeEqual } from "node:crypto";
import express from "express";
import { apiRoutes } from "./api-routes.js";
import { errorHandler, routeNotFound } from "./http/errors.js";
import { requestId, requestLog, requireJsonBody } from "./http/request-context.js";
import { jsonBody } from "./http/json-body.js";
import { noSniff } from "./http/html.js";
import { allowOn, methodNotAllowed } from "./http/method-not-allowed.js";
import { cors } from "./http/cors.js";
import { x402Settle, x402Verify } from "./payments/facilitator.js";
import { x402Supported } from "./payments/supported.js";
import { wellKnownX402 } from "./payments/discovery.js";
import { buildOpenApi } from "./http/openapi.js";
import { mountRoutes } from "./http/route.js";
import type { Services } from "./services.js";
import { createProxyForwarder } from "./tools/forward.js";
import { toolRoutes } from "./tools/routes/index.js";
import { mcpRouter } from "./mcp/route.js";
import { PAGE_PATHS, pagesRouter } from "./pages/index.js";
import { versioning } from "./http/versioning.js";
import { DASHBOARD_PAGE_PATHS, dashboardRouter } from "./dashboard/index.js";

const safeEqual = (a: string, b: string) => timingSafeEqual(createHash("sha256").update(a).digest(), createHash("sha256").update(b).digest());

export function createApp(services: Services): express.Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("trust proxy", services.config.trustProxy);
  app.set("query parser", "simple");
  // The guard first: everything after it runs in the request's scope (http/request-guard.ts).
  app.use(services.requestGuard.middleware, requestId, noSniff, requestLog(services.log), services.metrics.middleware(), cors);

  app.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });
  app.get("/readyz", async (_req, res) => {
    try {
      await services.store.ping();
      res.json({ status: "ready" });
    } catch {
      res.status(503).json({ status: "unavailable", store: "unreachable" });
    }
  });

  app.get("/metrics", async (req, res) => {
    const token = services.config.metricsToken;
    if (token && !safeEqual(req.get("authorization") ?? "", `Bearer ${token}`)) return res.status(401).json({ error: "metrics token required" });
    res.type("text/plain; version=0.0.4").send(await services.metrics.render());
  });

  // Built once: the document depends only on configuration and code.
  const openApi = buildOpenApi(services.config);
  app.get("/openapi.json", (_req, res) => {
    res.setHeader("Cache-Control", "public, max-age=300");
    res.json(openApi);
  });
  app.use(pagesRouter(services, openApi));
  // The dashboard parses its own bodies (sign-in forms, its JSON API) and reads its own cookie.
  app.use(dashboardRouter(services));
  allowOn(app.router, ["/healthz", "/readyz", "/metrics", "/openapi.json", ...PAGE_PATHS, ...DASHBOARD_PAGE_PATHS], ["GET"]);
  // Every answer under a deprecated API version says so; after its sunset, 410.
  app.use(versioning(services.config.apiVersions, `${services.config.publicBaseUrl}/changelog`));

  app.use(requireJsonBody, jsonBody({ limitBytes: services.config.bodyLimitBytes, maxDepth: services.config.bodyMaxDepth }));
  app.use("/api/v1", mountRoutes(services, apiRoutes));
  app.use("/v1/tools", mountRoutes(services, toolRoutes(createProxyForwarder(services.pools.agent))));
  app.use("/mcp", mcpRouter(services));
  app.use("/x402", mountRoutes(services, [x402Supported, x402Verify, x402Settle]));
  app.use("/.well-known", mountRoutes(services, [wellKnownX402]));

  app.use(methodNotAllowed, routeNotFound);
  app.use(errorHandler(services.log, (code) => services.metrics.errors.inc({ code })));
  return app;
}
