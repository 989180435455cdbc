import type { Router } from "express";
import { allowOn } from "../http/method-not-allowed.js";
import { errorResponses, rateLimitHeaders, schemaOf, type Json } from "../http/openapi.js";
import type { Services } from "../services.js";
import { statusReportSchema } from "../status/report-schema.js";
import { readChangelog, renderChangelogPage, renderChangelogRss } from "./changelog.js";
import { TOOLS } from "../tools/catalogue/index.js";
import { publicTools } from "../tools/custom/registry.js";
import { renderDocsPage } from "./docs.js";
import { renderLlmsTxt } from "./llms.js";
import { sendDocument, sendPage } from "./respond.js";
import { renderStatusPage, renderStatusRss } from "./status.js";
import { docsBuilder } from "./docs-builder.js";
import { collectToolExamples, exampleTools } from "./tool-examples.js";
import { TRY_IT_SCRIPT } from "./try-it.js";
import { caseSensitiveRouter } from "../http/router.js";

/**
 * The public pages, one file each beside this one. Everything but the status pages is built
 * once per process, on first request (from configuration, code and CHANGELOG.md); the status pages read the
 * status service's report, itself cached for a second, so no page view costs more than a few
 * store reads. /docs alone runs again, in the background, the worked examples that failed
 * (docs-builder.ts), never making a request wait once it has a page.
 */

/** Every path this router serves (GET only; other methods answer 405). */
export const PAGE_PATHS = [
  "/docs",
  "/docs/try-it.js",
  "/llms.txt",
  "/changelog",
  "/changelog.rss",
  "/status",
  "/status.json",
  "/status.rss",
];

/** How the public pages appear in the OpenAPI document: each path, GET, public, its media type. */
export function pagesDocument(): Record<string, Json> {
  const page = (summary: string, mediaType: string, schema: Json = { type: "string" }): Json => ({
    get: {
      tags: ["Operations"],
      summary,
      operationId: `get${summary.replace(/[^A-Za-z0-9]/g, "")}`,
      security: [],
      responses: {
        "200": {
          description: "Success",
          headers: rateLimitHeaders,
          content: { [mediaType]: { schema } },
        },
        ...errorResponses(["rate_limited"]),
      },
    },
  });
  return {
    "/docs": page("Docs page", "text/html"),
    "/docs/try-it.js": page("Docs Try it script", "text/javascript"),
    "/llms.txt": page("llms.txt", "text/plain"),
    "/changelog": page("Changelog page", "text/html"),
    "/changelog.rss": page("Changelog RSS", "application/rss+xml"),
    "/status": page("Status page", "text/html"),
    "/status.json": page("Status JSON", "application/json", schemaOf(statusReportSchema, "output")),
    "/status.rss": page("Status RSS", "application/rss+xml"),
  };
}

export function pagesRouter(services: Services, openApi: () => Record<string, unknown>): Router {
  const router = caseSensitiveRouter();
  const base = services.config.publicBaseUrl;
  // Each page is rendered when first asked for, then kept: none of this is start-up work.
  const once = <T>(make: () => T): (() => T) => {
    let made: { value: T } | null = null;
    return () => (made ??= { value: make() }).value;
  };
  const changelog = once(readChangelog);
  const changelogPage = once(() => renderChangelogPage(changelog(), services.config.basePath));
  const changelogRss = once(() => renderChangelogRss(changelog(), base));
  // Every public tool, as GET /v1/tools lists them: the catalogue's and the operator's.
  const tools = publicTools(services, TOOLS);
  // The networks x402 payments are taken on, as the pages name them; null: no x402 on this gateway.
  const x402Networks =
    services.payments?.config.networks.map((network) => `${network.name} (${network.caip2})`) ??
    null;
  const llms = once(() => renderLlmsTxt(services.config, tools, x402Networks));

  // The tools' worked examples are run against the workers when the page is first asked for
  // (never at start-up, where they would compete with the first calls for the workers); those
  // that failed are run again in the background, each less often at every failure, while
  // requests are served the last page (docs-builder.ts).
  const docs = docsBuilder({
    examples: exampleTools,
    run: (examples) => collectToolExamples(services, examples),
    render: (toolAnswers) =>
      renderDocsPage(openApi(), {
        creditPriceAtomic: services.config.creditPriceAtomic,
        toolAnswers,
        tools,
        x402Networks,
        basePath: services.config.basePath,
      }),
    onError: (err) => services.log.error({ err }, "Rebuilding /docs failed; the last page stays"),
  });

  // Express 5 hands a rejected handler's error to the error handler.
  router.get("/docs", async (_req, res) => {
    sendPage(res, await docs(), 300);
  });
  router.get("/docs/try-it.js", (_req, res) =>
    sendDocument(res, "text/javascript; charset=utf-8", TRY_IT_SCRIPT, 300),
  );
  router.get("/llms.txt", (_req, res) =>
    sendDocument(res, "text/plain; charset=utf-8", llms(), 300),
  );
  router.get("/changelog", (_req, res) => sendPage(res, changelogPage(), 300));
  router.get("/changelog.rss", (_req, res) =>
    sendDocument(res, "application/rss+xml; charset=utf-8", changelogRss(), 300),
  );
  router.get("/status", async (req, res) =>
    sendPage(
      res,
      renderStatusPage(await services.status.report(), {
        autoRefresh: req.query.refresh === "auto",
        basePath: services.config.basePath,
      }),
    ),
  );
  router.get("/status.json", async (_req, res) =>
    sendDocument(
      res,
      "application/json; charset=utf-8",
      JSON.stringify(await services.status.report()),
    ),
  );
  router.get("/status.rss", async (_req, res) =>
    sendDocument(
      res,
      "application/rss+xml; charset=utf-8",
      renderStatusRss(await services.status.report(), base),
    ),
  );
  allowOn(router, PAGE_PATHS, ["GET"]);
  return router;
}
