import {
  robotsCheck as robotsCheckTool,
  rssRead as rssReadTool,
  sitemapRead as sitemapReadTool,
  webFetch as webFetchTool,
  webMetadata as webMetadataTool,
} from "../../tools/catalogue/web.js";
import type { ToolDefinition } from "../../tools/definition.js";
import { WorkerError } from "../errors.js";
import type { SerializedOutput } from "../heavy/serialized-output.js";
import { type Fetched, fetchPublic } from "../web/fetch.js";
import { robotsUrlOf } from "../web/robots-url.js";
import { heavyPoolOf, implement, type ToolContext } from "./implementation.js";

/**
 * The web tools: everything they read goes through fetchPublic (SSRF guard, size and time limits),
 * on the shared event loop, which only waits for the network; what the page says is read in a
 * heavy-pool thread (web/readers.ts), since parsing a 5 MB page held that loop for seconds.
 */
const HTML = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5";
const FEED = "application/rss+xml,application/atom+xml,application/xml,text/xml;q=0.9,*/*;q=0.5";
const XML = "application/xml,text/xml;q=0.9,*/*;q=0.5";

/**
 * Fetches `url` for `tool`, then has the tool's reader read the page in a thread, within the time
 * the fetch left of the call's. `refuse` may turn the fetched page down first (on the loop).
 */
async function fetchThenRead(
  tool: ToolDefinition,
  input: unknown,
  ctx: ToolContext,
  url: string,
  fetching: { accept: string; allowErrorStatus?: boolean },
  refuse?: (page: Fetched) => void,
): Promise<never> {
  const startedAt = Date.now();
  const page = await fetchPublic(ctx.config, url, { timeoutMs: ctx.timeoutMs, ...fetching });
  refuse?.(page);
  const left = ctx.timeoutMs - (Date.now() - startedAt);
  return readInThread(ctx, tool, input, page, left) as never;
}

/** `page`, fetched for `tool`, read by the tool's reader (web/readers.ts) in a heavy-pool thread. */
export function readInThread(
  ctx: ToolContext,
  tool: ToolDefinition,
  input: unknown,
  page: Fetched,
  timeoutMs: number,
): Promise<SerializedOutput> {
  return heavyPoolOf(ctx).read(tool.name, input, page, timeoutMs);
}

export const webFetch = implement(webFetchTool, {
  run: (input, ctx) => fetchThenRead(webFetchTool, input, ctx, input.url, { accept: HTML }),
});

export const webMetadata = implement(webMetadataTool, {
  run: (input, ctx) => fetchThenRead(webMetadataTool, input, ctx, input.url, { accept: HTML }),
});

export const rssRead = implement(rssReadTool, {
  run: (input, ctx) => fetchThenRead(rssReadTool, input, ctx, input.url, { accept: FEED }),
});

export const robotsCheck = implement(robotsCheckTool, {
  run(input, ctx) {
    const robotsUrl = robotsUrlOf(input.url);
    return fetchThenRead(
      robotsCheckTool,
      input,
      ctx,
      robotsUrl,
      { accept: "text/plain", allowErrorStatus: true },
      // A missing robots.txt (4xx) allows everything; a server error is a failure to read it.
      (page) => {
        if (page.status >= 500)
          throw new WorkerError(502, "fetch_failed", `${robotsUrl} answered HTTP ${page.status}.`);
      },
    );
  },
});

export const sitemapRead = implement(sitemapReadTool, {
  run: (input, ctx) => fetchThenRead(sitemapReadTool, input, ctx, input.url, { accept: XML }),
});
