import express from "express";
import { errorHandler, routeNotFound } from "./http/errors.js";
import { requestId, requestLog, requireJsonBody } from "./http/request-context.js";
import { jsonBody } from "./http/json-body.js";
import { noSniff } from "./http/html.js";
import { cors } from "./http/cors.js";
import { mountRoutes } from "./http/route.js";
import type { Services } from "./services.js";
import { versioning } from "./http/versioning.js";
import { methodNotAllowed } from "./http/method-not-allowed.js";
import { DOORS, openApiFor, type Door } from "./routes.js";

export function createApp(services: Services): express.Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("trust proxy", services.config.trustProxy);
  app.set("query parser", "simple");
  // The guard first: everything after it runs in the request's scope (http/request-guard.ts).
  app.use(services.requestGuard.middleware, requestId, noSniff, requestLog(services.log), services.metrics.middleware(), cors);

  const openApi = openApiFor(services.config);
  const mount = (door: Door) => app.use(door.prefix || "/", "routes" in door ? mountRoutes(services, door.routes) : door.router(services, openApi));
  // Doors that take no JSON body first (probes, pages); then API versioning and the JSON body.
  for (const door of DOORS.filter((d) => d.beforeBody)) mount(door);
  // Every answer under a deprecated API version says so; after its sunset, 410.
  app.use(versioning(services.config.apiVersions, `${services.config.publicBaseUrl}/changelog`));
  app.use(requireJsonBody, jsonBody({ limitBytes: services.config.bodyLimitBytes, maxDepth: services.config.bodyMaxDepth }));
  for (const door of DOORS.filter((d) => !d.beforeBody)) mount(door);

  app.use(methodNotAllowed, routeNotFound);
  app.use(errorHandler(services.log, (code) => services.metrics.errors.inc({ code })));
  return app;
}
