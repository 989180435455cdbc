import { createHash, timingSafeEqual } from "node:crypto";
import express from "express";
import { apiRoutes } from "./api-routes.js";
import { errorHandler, routeNotFound } from "./http/errors.js";
import { requestContext, requireJsonBody } from "./http/request-context.js";
import { jsonBody } from "./http/json-body.js";
import { allowOn, methodNotAllowed } from "./http/method-not-allowed.js";
import { x402Settle, x402Verify } from "./payments/facilitator.js";
import { x402Supported } from "./payments/supported.js";
import { wellKnownX402 } from "./payments/discovery.js";
import { buildOpenApi } from "./http/openapi.js";
import { mountRoutes, routeHandler } from "./http/route.js";
import type { Services } from "./services.js";
import { createProxyForwarder } from "./tools/forward.js";
import { callTool, toolReadRoutes } from "./tools/routes/index.js";
import { mcpRouter } from "./mcp/route.js";
import { PAGE_PATHS, pagesRouter } from "./pages/index.js";
import { versioning } from "./http/versioning.js";

const safeEqual = (a: string, b: string) => timingSafeEqual(createHash("sha256").update(a).digest(), createHash("sha256").update(b).digest());

export function createApp(services: Services): express.Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("trust proxy", services.config.trustProxy);
  app.set("query parser", "simple");
  // The guard first: everything after it runs in the request's scope (http/request-guard.ts).
  app.use(services.requestGuard.middleware, requestContext(services.requestLog, services.metrics));

  // Every answer under a deprecated API version says so; after its sunset, 410.
  const apiVersioning = versioning(services.config.apiVersions, `${services.config.publicBaseUrl}/changelog`);
  const json = [requireJsonBody, jsonBody({ limitBytes: services.config.bodyLimitBytes, maxDepth: services.config.bodyMaxDepth })];
  // The keyed tool call is the gateway's hot path: it is matched first, so no other route is
  // tried for it, and it runs only what it needs.
  const toolCall = callTool(createProxyForwarder(services.pools.agent));
  app.post("/v1/tools/:name", apiVersioning, json, routeHandler(services, toolCall, "/v1/tools"));

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

  // Built once, when first asked for (not at start-up): the document depends only on configuration and code.
  let openApi: ReturnType<typeof buildOpenApi> | null = null;
  const openApiDocument = () => (openApi ??= buildOpenApi(services.config));
  app.get("/openapi.json", (_req, res) => {
    res.setHeader("Cache-Control", "public, max-age=300");
    res.json(openApiDocument());
  });
  app.use(pagesRouter(services, openApiDocument));
  allowOn(app.router, ["/healthz", "/readyz", "/metrics", "/openapi.json", ...PAGE_PATHS], ["GET"]);
  app.use(apiVersioning, json);
  app.use("/api/v1", mountRoutes(services, apiRoutes));
  app.use("/v1/tools", mountRoutes(services, toolReadRoutes, [toolCall]));
  app.use("/mcp", mcpRouter(services));
  app.use("/x402", mountRoutes(services, [x402Supported, x402Verify, x402Settle]));
  app.use("/.well-known", mountRoutes(services, [wellKnownX402]));

  app.use(methodNotAllowed, routeNotFound);
  app.use(errorHandler(services.log, (code) => services.metrics.errors.inc({ code })));
  return app;
}
