import { TOOLS } from "../../tools/catalogue/index.js";
import { WorkerError } from "../errors.js";
import { implement, type ToolImplementation } from "./implementation.js";

/**
 * In the workers' main thread, a heavy tool is a proxy onto the heavy pool: the implementation
 * itself (and its libraries) is loaded only in the pool's threads, and its input, sent as the
 * caller wrote it, is checked against the tool's schema there.
 */
export const HEAVY_PROXIES: ToolImplementation[] = TOOLS.filter(
  (tool) => tool.pool === "heavy",
).map((tool) =>
  implement(tool, {
    // Checked in the thread: 100,000 CSV rows took the shared event loop 0.2-0.3 s to check.
    checksInput: true,
    async run(input, ctx) {
      if (!ctx.heavy)
        throw new WorkerError(503, "tool_unavailable", "The heavy worker pool is not running.");
      return ctx.heavy.run(tool.name, input, ctx.timeoutMs) as never;
    },
  }),
);
