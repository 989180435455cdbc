import { readFileSync } from "node:fs";
import type { Router, Request, Response } from "express";
import { jsonBody } from "../http/json-body.js";
import { countAnonymously } from "../http/anonymous-limit.js";
import { allowOn } from "../http/method-not-allowed.js";
import { requireJsonBody } from "../http/request-context.js";
import { type AnyRoute, mountRoutes } from "../http/route.js";
import { esc, sendDocument } from "../pages/respond.js";
import type { Services } from "../services.js";
import {
  DASHBOARD_SCRIPT_PATH,
  dashboardPage,
  publicDashboardPage,
  sendDashboardPage,
} from "./layout.js";
import { liveFeed } from "./live-feed.js";
import { renderKeysPage } from "./keys-page.js";
import {
  ANALYTICS_SCRIPT_PATH,
  renderAnalyticsPage,
  UPLOT_SCRIPT_PATH,
  uplotAssets,
} from "./analytics-page.js";
import { renderOverview } from "./overview.js";
import { renderPlanPage } from "./plan-page.js";
import { authenticateSession, currentSession, type DashboardSession } from "./session.js";
import { reclaimRoutes } from "./reclaim.js";
import { signInRoutes } from "./sign-in.js";
import { renderSsoPage } from "./sso-page.js";
import { ssoSignInRoutes } from "./sso-sign-in.js";
import {
  WALLET_CHALLENGE_PATH,
  WALLET_SCRIPT_PATH,
  WALLET_SIGN_IN_PATH,
  walletSignInRoutes,
} from "./wallet-sign-in.js";
import { renderDeliveriesPage, renderWebhooksPage } from "./webhooks-page.js";
import { caseSensitiveRouter } from "../http/router.js";

/**
 * The dashboard at /dashboard: server-rendered pages, one local script, a live feed, and the
 * account API the pages call. That API is not a second implementation: it is the /api/v1 route
 * list for the account, keys, usage, events and webhooks (`ACCOUNT_ROUTES` in src/routes.ts,
 * passed in), mounted again under /dashboard/api/v1 with the session (plus its CSRF token on
 * changes) as the caller instead of `x-api-key`. The session authenticates nothing else:
 * /v1/tools, /mcp and /api/v1 never read its cookie.
 */

/** The pages, the script and the live feed: GET only (other methods on them answer 405). */
const PAGE_PATHS = [
  "/dashboard",
  "/dashboard/keys",
  "/dashboard/webhooks",
  "/dashboard/webhooks/:id",
  "/dashboard/analytics",
  "/dashboard/sso",
  "/dashboard/sso/callback",
  "/dashboard/plan",
  "/dashboard/live",
  DASHBOARD_SCRIPT_PATH,
  ANALYTICS_SCRIPT_PATH,
  UPLOT_SCRIPT_PATH,
  WALLET_SCRIPT_PATH,
];

/** Everything the dashboard serves besides its copy of the account API: path → methods. */
export const DASHBOARD_PATHS: Record<string, string[]> = {
  ...Object.fromEntries(PAGE_PATHS.map((path) => [path, ["GET"]])),
  "/dashboard/sign-in": ["GET", "POST"],
  "/dashboard/sign-in/email": ["POST"],
  "/dashboard/sign-in/link": ["GET", "POST"],
  "/dashboard/sign-in/sso": ["POST"],
  [WALLET_CHALLENGE_PATH]: ["POST"],
  [WALLET_SIGN_IN_PATH]: ["POST"],
  "/dashboard/sign-out": ["POST"],
  "/dashboard/sign-out-everywhere": ["POST"],
};

const SCRIPT = readFileSync(new URL("./assets/dashboard.js", import.meta.url), "utf8");
const ANALYTICS_SCRIPT = readFileSync(new URL("./assets/analytics.js", import.meta.url), "utf8");
const WALLET_SCRIPT = readFileSync(new URL("./assets/wallet.js", import.meta.url), "utf8");

/**
 * A page for the signed-in account; without a session, the sign-in page. `render` answers null for
 * what the account has not (a webhook deleted, or another account's): a 404 page in the
 * dashboard's frame, with its navigation and `notFound`'s way back, not a bare "Not found".
 */
function signedInPage(
  services: Services,
  render: (current: DashboardSession, req: Request) => Promise<string | null>,
  notFound?: { message: string; back: { href: string; label: string } },
) {
  return async (req: Request, res: Response) => {
    const current = await currentSession(services, req, res);
    if (!current) return res.redirect(303, `${services.config.basePath}/dashboard/sign-in`);
    const html = await render(current, req);
    if (html !== null) return sendDashboardPage(res, html);
    const back = notFound?.back ?? { href: "/dashboard", label: "Overview" };
    const page = dashboardPage(current, {
      basePath: services.config.basePath,
      title: "Not found",
      path: back.href,
      body: `<p class="notice error" role="alert">${esc(notFound?.message ?? "This account has no such page.")}</p>
<p><a href="${services.config.basePath}${back.href}">${esc(back.label)}</a></p>`,
    });
    sendDashboardPage(res, page, 404);
  };
}

/**
 * The dashboard; `accountRoutes` are the account's API routes (with the x402 purchases of credit
 * packs and plans), served again with the session as the caller.
 */
export function dashboardRouter(services: Services, accountRoutes: AnyRoute[]): Router {
  const router = caseSensitiveRouter();
  router.use(signInRoutes(services));
  router.use(ssoSignInRoutes(services));
  router.use(walletSignInRoutes(services));
  router.use(reclaimRoutes(services));
  const uplot = uplotAssets();
  for (const [path, script] of [
    [DASHBOARD_SCRIPT_PATH, SCRIPT],
    [ANALYTICS_SCRIPT_PATH, ANALYTICS_SCRIPT],
    [UPLOT_SCRIPT_PATH, uplot.script],
    [WALLET_SCRIPT_PATH, WALLET_SCRIPT],
  ] as const)
    router.get(path, (_req, res) =>
      sendDocument(res, "text/javascript; charset=utf-8", script, 300),
    );
  router.get(
    "/dashboard",
    signedInPage(services, (current) => renderOverview(services, current)),
  );
  router.get(
    "/dashboard/keys",
    signedInPage(services, (current) => renderKeysPage(services, current)),
  );
  router.get(
    "/dashboard/webhooks",
    signedInPage(services, (current) => renderWebhooksPage(services, current)),
  );
  router.get(
    "/dashboard/webhooks/:id",
    signedInPage(
      services,
      (current, req) => renderDeliveriesPage(services, current, String(req.params.id)),
      {
        message:
          "This account has no such webhook (or webhooks are not in its tier): it may have been deleted.",
        back: { href: "/dashboard/webhooks", label: "All webhooks" },
      },
    ),
  );
  router.get(
    "/dashboard/analytics",
    signedInPage(services, (current, req) =>
      renderAnalyticsPage(services, current, req.query, uplot.style),
    ),
  );
  router.get(
    "/dashboard/sso",
    signedInPage(services, (current) => renderSsoPage(services, current)),
  );
  router.get(
    "/dashboard/plan",
    signedInPage(services, (current) => renderPlanPage(services, current)),
  );
  router.get("/dashboard/live", liveFeed(services));
  router.use(
    "/dashboard/api/v1",
    requireJsonBody,
    jsonBody({
      limitBytes: services.config.bodyLimitBytes,
      maxDepth: services.config.bodyMaxDepth,
    }),
    mountRoutes(services, accountRoutes, { authenticateCaller: authenticateSession }),
  );
  for (const [path, methods] of Object.entries(DASHBOARD_PATHS)) allowOn(router, path, methods);
  // A mistyped page address is answered a page, as a person opened it, not the API's JSON 404; a
  // known path's other methods still reach their 405, the dashboard's API its JSON.
  router.get("/dashboard/*rest", async (req, res, next) => {
    if (res.locals.allowedMethods || req.path.startsWith("/dashboard/api/")) return next();
    // Counted per client address, as every dashboard page is (app.ts counts the paths it lists).
    await countAnonymously(services, req, res);
    const current = await currentSession(services, req, res);
    const message = '<p class="notice error" role="alert">The dashboard has no such page.</p>';
    const page = current
      ? dashboardPage(current, {
          basePath: services.config.basePath,
          title: "Not found",
          path: "",
          body: `${message}<p><a href="${services.config.basePath}/dashboard">Overview</a></p>`,
        })
      : publicDashboardPage({
          basePath: services.config.basePath,
          title: "Not found",
          body: `${message}<p><a href="${services.config.basePath}/dashboard/sign-in">Sign in</a></p>`,
        });
    sendDashboardPage(res, page, 404);
  });
  return router;
}
