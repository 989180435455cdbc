import type { Router } from "express";
import { getAccount } from "./accounts/routes/account.js";
import { analytics } from "./accounts/routes/analytics.js";
import {
  adminGrantCredits,
  adminIssueKey,
  adminListAccounts,
  adminSetTier,
} from "./accounts/routes/admin.js";
import {
  adminBindWorkers,
  adminGetWorkers,
  adminUnbindWorkers,
} from "./accounts/routes/admin-workers.js";
import { listEvents } from "./accounts/routes/events.js";
import { createKey, listKeys, revokeKey, rotateKey } from "./accounts/routes/keys.js";
import { resendVerification } from "./accounts/routes/resend-verification.js";
import { signup } from "./accounts/routes/signup.js";
import { removeSpendAlert, setSpendAlert } from "./accounts/routes/spend-alert.js";
import { updateKey } from "./accounts/routes/update-key.js";
import {
  deleteSsoConnection,
  getSsoConnection,
  putSsoConnection,
} from "./accounts/routes/sso-connection.js";
import { usage } from "./accounts/routes/usage.js";
import { verifyEmail } from "./accounts/routes/verify-email.js";
import { DASHBOARD_PATHS, dashboardRouter } from "./dashboard/index.js";
import { buildOpenApi, type Json } from "./http/openapi.js";
import type { AnyRoute, DocumentConfig } from "./http/route.js";
import { mcpDocument, mcpRouter } from "./mcp/route.js";
import { healthz } from "./operations/healthz.js";
import { metrics } from "./operations/metrics.js";
import { openApiDocument } from "./operations/openapi-document.js";
import { readyz } from "./operations/readyz.js";
import { PAGE_PATHS, pagesDocument, pagesRouter } from "./pages/index.js";
import { wellKnownX402 } from "./payments/discovery.js";
import { x402Settle, x402Verify } from "./payments/facilitator.js";
import { paymentRoutes, purchaseCredits, purchasePlan } from "./payments/routes.js";
import { x402Supported } from "./payments/supported.js";
import type { Services } from "./services.js";
import { incidentRoutes } from "./status/incident-routes.js";
import { toolRoutes } from "./tools/routes/index.js";
import { customToolRoutes } from "./tools/custom/routes/index.js";
import { webhookRoutes } from "./webhooks/routes/index.js";

/**
 * Every door Toolgate serves, registered once: `app.ts` mounts this list in order, and the
 * OpenAPI document (`http/openapi.ts`) is built from it, so nothing served goes undocumented
 * and nothing documented goes unserved — but for the dashboard, a browser's sign-in and pages
 * with its own session (not an API for clients), which is left out on purpose. A door is either
 * a group of routes (`defineRoute`:
 * authenticated, validated and described from their own schemas) or a router of its own
 * (the HTML pages, MCP's transport) that says which paths it serves and how it is documented.
 * `beforeBody`: mounted before the JSON body parser and API versioning (they take no JSON body).
 */
export type Door =
  | { prefix: string; routes: AnyRoute[]; beforeBody?: boolean }
  | {
      prefix: string;
      router: (services: Services, openApi: () => Json) => Router;
      /** What it serves, under its prefix: path → methods. */
      serves: Record<string, string[]>;
      document?: (config: DocumentConfig) => Record<string, Json>;
      beforeBody?: boolean;
      /**
       * The door counts each request against a limiter itself (MCP: a key's admission, or the
       * anonymous limit for a keyless agent); otherwise each request to a path it serves is
       * counted per client address before it is served (app.ts).
       */
      countsItself?: boolean;
    };

/**
 * What a signed-in account manages: its account, keys, usage, analytics, events, single sign-on and webhooks. Served under
 * /api/v1 with `x-api-key`, and again under /dashboard/api/v1 with the dashboard's session.
 */
const ACCOUNT_ROUTES: AnyRoute[] = [
  getAccount,
  setSpendAlert,
  removeSpendAlert,
  listKeys,
  createKey,
  updateKey,
  rotateKey,
  revokeKey,
  usage,
  analytics,
  listEvents,
  getSsoConnection,
  putSsoConnection,
  deleteSsoConnection,
  ...webhookRoutes("account"),
];

/** Everything under /api/v1: accounts and keys, admin, webhooks, purchases and wallet sign-in, incidents. */
const API_ROUTES: AnyRoute[] = [
  signup,
  verifyEmail,
  resendVerification,
  ...ACCOUNT_ROUTES,
  adminListAccounts,
  adminSetTier,
  adminGrantCredits,
  adminIssueKey,
  adminGetWorkers,
  adminBindWorkers,
  adminUnbindWorkers,
  ...customToolRoutes,
  ...webhookRoutes("platform"),
  ...paymentRoutes,
  ...incidentRoutes,
];

/** The OpenAPI document of these doors, built once per configuration. */
const documents = new WeakMap<DocumentConfig, Json>();
export function openApiFor(config: DocumentConfig): Json {
  let document = documents.get(config);
  if (!document) documents.set(config, (document = buildOpenApi(config, DOORS)));
  return document;
}

export const DOORS: Door[] = [
  { prefix: "", routes: [healthz, readyz, metrics, openApiDocument(openApiFor)], beforeBody: true },
  {
    prefix: "",
    router: pagesRouter,
    serves: Object.fromEntries(PAGE_PATHS.map((path) => [path, ["GET"]])),
    document: pagesDocument,
    beforeBody: true,
  },
  // The dashboard parses its own bodies (sign-in forms, its JSON API) and reads its own cookie.
  // Its copy of the account API adds the x402 purchases, so its Plan page buys through them.
  {
    prefix: "",
    router: (services) =>
      dashboardRouter(services, [...ACCOUNT_ROUTES, purchaseCredits, purchasePlan]),
    serves: DASHBOARD_PATHS,
    beforeBody: true,
  },
  { prefix: "/api/v1", routes: API_ROUTES },
  { prefix: "/v1/tools", routes: toolRoutes },
  {
    prefix: "/mcp",
    router: mcpRouter,
    serves: { "/": ["POST"] },
    document: mcpDocument,
    countsItself: true,
    // It reads its own body: one that cannot be read is answered as JSON-RPC (mcp/route.ts).
    beforeBody: true,
  },
  { prefix: "/x402", routes: [x402Supported, x402Verify, x402Settle] },
  { prefix: "/.well-known", routes: [wellKnownX402] },
];
