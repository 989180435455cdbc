import { workerData } from "node:worker_threads";
import type { WorkerConfig } from "../config.js";
import type { WorkerError } from "../errors.js";

/** One heavy-pool thread: runs a heavy tool's implementation and reports its output or error as data. */
export interface HeavyTask {
  tool: string;
  input: unknown;
  timeoutMs: number;
}

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
// implementations are loaded through tsx's API instead; built JavaScript imports them directly.
const implementations: Promise<typeof import("../tools/heavy.js").HEAVY_IMPLEMENTATIONS> = (
  import.meta.url.endsWith(".ts")
    ? import("tsx/esm/api").then(
        (tsx) =>
          tsx.tsImport("../tools/heavy.ts", import.meta.url) as Promise<
            typeof import("../tools/heavy.js")
          >,
      )
    : import("../tools/heavy.js")
).then((m) => m.HEAVY_IMPLEMENTATIONS);

function isWorkerError(err: unknown): err is WorkerError {
  return (
    err instanceof Error &&
    typeof (err as WorkerError).status === "number" &&
    typeof (err as WorkerError).code === "string"
  );
}

export default async function runHeavyTask(task: HeavyTask): Promise<HeavyResult> {
  const impl = (await implementations).get(task.tool);
  if (!impl) throw new Error(`no heavy implementation for ${task.tool}`);
  try {
    const output = await impl.run(task.input as never, { config, timeoutMs: task.timeoutMs });
    return { json: JSON.stringify(impl.definition.output.parse(output)) };
  } catch (err) {
    // Duck-typed: under tsx the implementations have their own copy of the WorkerError class.
    if (isWorkerError(err))
      return {
        error: {
          status: err.status,
          code: err.code,
          message: err.message,
          ...(err.param ? { param: err.param } : {}),
        },
      };
    throw err;
  }
}
