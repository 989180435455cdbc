/**
 * What a tool's implementation is: its catalogue definition and the function that runs it. One
 * naming rule holds in every file of this folder: the implementation of the tool `regex-test` is
 * `regexTest` (the catalogue's own identifier for it), and its definition is imported as
 * `regexTestTool` — so a tool's name leads to its code by search.
 */
import type { z } from "zod";
import type { ToolDefinition } from "../../tools/definition.js";
import type { WorkerConfig } from "../config.js";
import { WorkerError } from "../errors.js";
import type { HeavyPool } from "../heavy/pool.js";

export interface ToolContext {
  config: WorkerConfig;
  /** Time left for this call; provider requests use it as their own deadline. */
  timeoutMs: number;
  /** The heavy pool, in the workers' main thread (absent inside the pool's own threads). */
  heavy?: HeavyPool;
}

/** What a worker does for one tool of the catalogue. */
export interface ToolImplementation<T extends ToolDefinition = ToolDefinition> {
  definition: T;
  /** Why the tool cannot run with this configuration, or null when it can. */
  unavailable?(config: WorkerConfig): string | null;
  /**
   * The implementation reads its input itself: the server passes it the request's body as sent,
   * its bytes (a Uint8Array; undefined without a JSON body). A heavy tool's proxy, whose thread
   * parses and checks them off the shared event loop.
   */
  readsBody?: true;
  run(input: z.output<T["input"]>, ctx: ToolContext): Promise<z.input<T["output"]>>;
}

export function implement<T extends ToolDefinition>(
  definition: T,
  impl: Omit<ToolImplementation<T>, "definition">,
): ToolImplementation<T> {
  return { definition, ...impl };
}

/** The call's heavy pool, or 503 where there is none (inside the pool's own threads). */
export function heavyPoolOf(ctx: ToolContext): HeavyPool {
  if (!ctx.heavy)
    throw new WorkerError(503, "tool_unavailable", "The heavy worker pool is not running.");
  return ctx.heavy;
}
