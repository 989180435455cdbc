import { TOOLS } from "../../tools/catalogue/index.js";
import { WorkerError } from "../errors.js";
import { implement, type ToolImplementation } from "./implementation.js";

/**
 * In the workers' main thread, a heavy tool is a proxy onto the heavy pool: the implementation
 * itself (and its libraries) is loaded only in the pool's threads.
 */
export const HEAVY_PROXIES: ToolImplementation[] = TOOLS.filter(
  (tool) => tool.pool === "heavy",
).map((tool) =>
  implement(tool, {
    async run(input, ctx) {
      if (!ctx.heavy)
        throw new WorkerError(503, "tool_unavailable", "The heavy worker pool is not running.");
      return ctx.heavy.run(tool.name, input, ctx.timeoutMs) as never;
    },
  }),
);
