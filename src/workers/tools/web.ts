import {
  robotsCheck as robotsCheckTool,
  rssRead as rssReadTool,
  sitemapRead as sitemapReadTool,
  webFetch as webFetchTool,
  webMetadata as webMetadataTool,
} from "../../tools/catalogue/web.js";
import type { ToolDefinition } from "../../tools/definition.js";
import { WorkerError } from "../errors.js";
import { type Fetched, fetchPublic } from "../web/fetch.js";
import { robotsUrlOf } from "../web/robots-url.js";
import { implement, type ToolContext } from "./implementation.js";

/**
 * The web tools: everything they read goes through fetchPublic (SSRF guard, size and time limits),
 * on the shared event loop, which only waits for the network; what the page says is read in a
 * heavy-pool thread (web/readers.ts), since parsing a 5 MB page held that loop for seconds.
 */
const HTML = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5";

/** The page, read in a thread by the tool's reader, within the time the fetch left of the call's. */
async function readInThread(
  tool: ToolDefinition,
  input: unknown,
  page: Fetched,
  ctx: ToolContext,
  startedAt: number,
): Promise<never> {
  if (!ctx.heavy)
    throw new WorkerError(503, "tool_unavailable", "The heavy worker pool is not running.");
  const left = ctx.timeoutMs - (Date.now() - startedAt);
  return ctx.heavy.read(tool.name, input, page, left) as never;
}

export const webFetch = implement(webFetchTool, {
  async run(input, ctx) {
    const startedAt = Date.now();
    const page = await fetchPublic(ctx.config, input.url, {
      timeoutMs: ctx.timeoutMs,
      accept: HTML,
    });
    return readInThread(webFetchTool, input, page, ctx, startedAt);
  },
});

export const webMetadata = implement(webMetadataTool, {
  async run(input, ctx) {
    const startedAt = Date.now();
    const page = await fetchPublic(ctx.config, input.url, {
      timeoutMs: ctx.timeoutMs,
      accept: HTML,
    });
    return readInThread(webMetadataTool, input, page, ctx, startedAt);
  },
});

export const rssRead = implement(rssReadTool, {
  async run(input, ctx) {
    const startedAt = Date.now();
    const page = await fetchPublic(ctx.config, input.url, {
      timeoutMs: ctx.timeoutMs,
      accept: "application/rss+xml,application/atom+xml,application/xml,text/xml;q=0.9,*/*;q=0.5",
    });
    return readInThread(rssReadTool, input, page, ctx, startedAt);
  },
});

export const robotsCheck = implement(robotsCheckTool, {
  async run(input, ctx) {
    const startedAt = Date.now();
    const robotsUrl = robotsUrlOf(input.url);
    const page = await fetchPublic(ctx.config, robotsUrl, {
      timeoutMs: ctx.timeoutMs,
      accept: "text/plain",
      allowErrorStatus: true,
    });
    // A missing robots.txt (4xx) allows everything; a server error is a failure to read it.
    if (page.status >= 500)
      throw new WorkerError(502, "fetch_failed", `${robotsUrl} answered HTTP ${page.status}.`);
    return readInThread(robotsCheckTool, input, page, ctx, startedAt);
  },
});

export const sitemapRead = implement(sitemapReadTool, {
  async run(input, ctx) {
    const startedAt = Date.now();
    const page = await fetchPublic(ctx.config, input.url, {
      timeoutMs: ctx.timeoutMs,
      accept: "application/xml,text/xml;q=0.9,*/*;q=0.5",
    });
    return readInThread(sitemapReadTool, input, page, ctx, startedAt);
  },
});
