import { workerData } from "node:worker_threads";
import type { WorkerConfig } from "../config.js";
import type { WorkerError } from "../errors.js";
import type { Fetched } from "../web/fetch.js";

/** One heavy-pool thread: runs a job (jobs.ts) and reports its output or error as data. */
export type HeavyTask =
  /** A heavy tool's call; its body's bytes as sent, parsed and checked against the tool's schema in the thread. */
  | { tool: string; body: Uint8Array | undefined; timeoutMs: number }
  /** A web tool's fetched page, read in the thread; the input was checked when the page was fetched. */
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

const config = (workerData as { config: WorkerConfig }).config;
// Under tsx (development, tests) a worker thread races tsx's own loader hooks, so the TypeScript
// jobs are loaded through tsx's API instead; built JavaScript imports them directly.
const jobs: Promise<typeof import("./jobs.js")> = import.meta.url.endsWith(".ts")
  ? import("tsx/esm/api").then(
      (tsx) => tsx.tsImport("./jobs.ts", import.meta.url) as Promise<typeof import("./jobs.js")>,
    )
  : import("./jobs.js");

function isWorkerError(err: unknown): err is WorkerError {
  return (
    err instanceof Error &&
    typeof (err as WorkerError).status === "number" &&
    typeof (err as WorkerError).code === "string"
  );
}

export default async function runHeavyTask(task: HeavyTask): Promise<HeavyResult> {
  const { readFetchedPage, runTool } = await jobs;
  try {
    if ("page" in task)
      return { json: await readFetchedPage(task.tool, task.page, task.input, config) };
    return { json: await runTool(task.tool, task.body, { config, timeoutMs: task.timeoutMs }) };
  } catch (err) {
    // Duck-typed: under tsx the jobs have their own copy of the WorkerError class.
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
