import type { WorkerConfig } from "../config.js";
import type { WorkerError } from "../errors.js";
import type { Fetched } from "../web/fetch.js";
import { readFetchedPage, runTool } from "./jobs.js";

/** One heavy-pool child process: runs a job (jobs.ts) and reports its output or error as data. */
export type HeavyTask =
  /** A heavy tool's call; its body's bytes as sent, parsed and checked against the tool's schema in the child. */
  | { tool: string; body: Uint8Array | undefined; timeoutMs: number }
  /** A web tool's fetched page, read in the child; the input was checked when the page was fetched. */
  | { tool: string; input: unknown; page: Fetched; timeoutMs: number };

export type HeavyResult =
  /** The output, checked against the tool's output schema and written as JSON (SerializedOutput). */
  | { json: string }
  | {
      error: {
        status: WorkerError["status"];
        code: WorkerError["code"];
        message: string;
        param?: string;
      };
    };

/** The workers' configuration, handed down by the pool (pool.ts) in the child's environment. */
export const HEAVY_CONFIG_ENV = "TOOLGATE_HEAVY_CONFIG";
const config = JSON.parse(process.env[HEAVY_CONFIG_ENV] ?? "null") as WorkerConfig;

// The workers process is gone (killed, crashed): nothing can read this child's answer.
process.on("disconnect", () => process.exit(0));

function isWorkerError(err: unknown): err is WorkerError {
  return (
    err instanceof Error &&
    typeof (err as WorkerError).status === "number" &&
    typeof (err as WorkerError).code === "string"
  );
}

export default async function runHeavyTask(task: HeavyTask): Promise<HeavyResult> {
  try {
    if ("page" in task)
      return { json: await readFetchedPage(task.tool, task.page, task.input, config) };
    return { json: await runTool(task.tool, task.body, { config, timeoutMs: task.timeoutMs }) };
  } catch (err) {
    // Duck-typed: the error crosses into a result as plain data, never as a class instance.
    if (isWorkerError(err))
      return {
        error: {
          status: err.status,
          code: err.code,
          message: err.message,
          // "" too: a body refused as a whole names no field, and says so as the main thread does.
          ...(err.param !== undefined ? { param: err.param } : {}),
        },
      };
    throw err;
  }
}
