import type { IncomingMessage, ServerResponse } from "node:http";
import express from "express";
import { probeLimit } from "./http/probe-limit.js";
import { preflights } from "./http/cors.js";
import { anonymousLimit, countingAnonymously, countingErrors } from "./http/anonymous-limit.js";
import { bearerKeyAsApiKey } from "./http/auth.js";
import { errorAnswerer, errorHandler, routeNotFound } from "./http/errors.js";
import { isUnservable, refuseUnservable } from "./http/client-errors.js";
import { requestContext, requireJsonBody } from "./http/request-context.js";
import { jsonBody } from "./http/json-body.js";
import { mountRoutes, routeHandler, skipRouteWhen } from "./http/route.js";
import type { Services } from "./services.js";
import { callTool } from "./tools/routes/call.js";
import { RESERVED_TOOL_NAMES } from "./tools/custom/spec.js";
import { keyedLane } from "./tools/routes/keyed-lane.js";
import { versioning } from "./http/versioning.js";
import { methodNotAllowed } from "./http/method-not-allowed.js";
import { DOORS, openApiFor, type Door } from "./routes.js";

/** The paths, and their methods, of the doors of their own that count their requests themselves. */
const SELF_COUNTED = new Map(
  DOORS.flatMap((door) =>
    "router" in door && door.countsItself
      ? Object.entries(door.serves).map(
          ([path, methods]) => [`${door.prefix}${path === "/" ? "" : path}`, methods] as const,
        )
      : [],
  ),
);

/**
 * The gateway's request handler: the keyed tool call on its own lane (tools/routes/keyed-lane.ts),
 * everything else through express.
 */
export function createApp(services: Services): (req: IncomingMessage, res: ServerResponse) => void {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  // One spelling per path: /V1/tools is 404, not /v1/tools answered without the rules that read
  // the path (API versioning first). Every router is case-sensitive too (http/router.ts).
  app.set("case sensitive routing", true);
  const { refusedCredentials } = services;
  // TRUST_PROXY compiled once: the keyed lane and the limits name the client as req.ip does.
  app.set("trust proxy", refusedCredentials.trust);
  app.set("query parser", "simple");
  // Every error answer in the one shape, from express's routes and the keyed lane alike, counted
  // first by the limiter it falls to when none counted it yet (http/anonymous-limit.ts).
  const answerError = countingErrors(
    services,
    errorAnswerer(services.log, services.redactSecrets, (code) =>
      services.metrics.errors.inc({ code }),
    ),
  );
  // The guard first: everything after it runs in the request's scope (http/request-guard.ts).
  app.use(
    services.requestGuard.middleware,
    requestContext(services.requestLog, services.metrics, services.redactSecrets),
    refuseUnservable,
    probeLimit(services),
    preflights(services),
    // A door that counts its requests itself (`countsItself`: MCP, where a lone keyless
    // tools/call over the limit is answered as a tool result, not a 429 its clients throw on)
    // counts its keyless ones too.
    anonymousLimit(services, (req) => SELF_COUNTED.get(req.path)?.includes(req.method) === true),
    refusedCredentials.middleware,
  );

  // Every answer under a deprecated API version says so; after its sunset, 410.
  const apiVersioning = versioning(services.config.apiVersions, services.config.publicBaseUrl);
  const parseJson = jsonBody({
    limitBytes: services.config.bodyLimitBytes,
    maxDepth: services.config.bodyMaxDepth,
  });
  const json = [requireJsonBody, parseJson];
  // The tool call is the gateway's hot path: it is matched first, so no other route is tried for
  // it, and it runs only what it needs (the plain keyed call does not even come here: see below).
  // A reserved name (`/v1/tools/categories`) is a path of the tool door's own, never a tool: the
  // door answers it (405, http/route.ts `mountRoutes`).
  const reservedName = skipRouteWhen((req) => RESERVED_TOOL_NAMES.has(String(req.params.name)));
  app.post(
    "/v1/tools/:name",
    reservedName,
    apiVersioning,
    json,
    routeHandler(services, callTool, "/v1/tools"),
  );

  // Built on first request, not at start-up (it is the whole catalogue's JSON Schemas).
  const openApi = () => openApiFor(services.config);
  const mount = (door: Door) => {
    // A door of its own that admits no caller counts every request it serves per client address,
    // credentials or not, before serving it (http/anonymous-limit.ts); route doors count per
    // route (http/route.ts).
    if ("router" in door && !door.countsItself)
      app.all(
        Object.keys(door.serves).map((path) => `${door.prefix}${path}`),
        countingAnonymously(services),
      );
    app.use(
      door.prefix || "/",
      "routes" in door ? mountRoutes(services, door.routes) : door.router(services, openApi),
    );
  };
  // Doors that take no JSON body first (probes, pages); then API versioning and the JSON body.
  for (const door of DOORS.filter((d) => d.beforeBody)) mount(door);
  app.use(apiVersioning, json);
  // The tool door mounts the call too (for 405s on /v1/tools/{name}); the route above answers it first.
  for (const door of DOORS.filter((d) => !d.beforeBody)) mount(door);

  app.use(
    methodNotAllowed(services.redactSecrets),
    routeNotFound(services.redactSecrets, services.config.basePath),
  );
  app.use(errorHandler(answerError));

  const lane = keyedLane(services, { json: parseJson, answerError });
  return (req, res) => {
    bearerKeyAsApiKey(req);
    return lane.takes(req) && !isUnservable(req) ? lane.serve(req, res) : app(req, res);
  };
}
