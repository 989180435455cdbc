import { TOOLS } from "../../tools/catalogue/index.js";
import { heavyPoolOf, implement, type ToolImplementation } from "./implementation.js";

/**
 * In the workers' main thread, a heavy tool is a proxy onto the heavy pool: the implementation
 * itself (and its libraries) is loaded only in the pool's threads, and its input, the request's
 * body as sent, is parsed and checked against the tool's schema there.
 */
export const HEAVY_PROXIES: ToolImplementation[] = TOOLS.filter(
  (tool) => tool.pool === "heavy",
).map((tool) =>
  implement(tool, {
    // Parsed and checked in the thread: 100,000 CSV rows took the shared event loop 0.2-0.3 s to
    // check, and ~0.2 s to parse and copy to the thread.
    readsBody: true,
    async run(body, ctx) {
      const bytes = body instanceof Uint8Array ? body : undefined;
      return heavyPoolOf(ctx).run(tool.name, bytes, ctx.timeoutMs) as never;
    },
  }),
);
