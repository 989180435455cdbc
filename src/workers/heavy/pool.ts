import type { Logger } from "pino";
import { Piscina } from "piscina";
import type { WorkerConfig } from "../config.js";
import { WorkerError } from "../errors.js";
import type { Fetched } from "../web/fetch.js";
import { SerializedOutput } from "./serialized-output.js";
import type { HeavyTask, HeavyResult } from "./thread.js";

/**
 * The heavy pool: OCR, charts, sandboxed code, document and image decoding, and the reading of
 * the pages the web tools fetch, run in worker threads with a JS heap limit, at most `threads` at
 * a time (more wait in line), each stopped at its deadline by terminating its thread. A runaway
 * call therefore costs one thread for at most its timeout, never the process, and cheap tools keep
 * their own event loop.
 */
export class HeavyPool {
  private readonly piscina: Piscina;

  constructor(config: WorkerConfig, log: Logger) {
    const ts = import.meta.url.endsWith(".ts");
    this.piscina = new Piscina({
      filename: new URL(`./thread.${ts ? "ts" : "js"}`, import.meta.url).href,
      // No thread until the first heavy call: most processes (and tests) never make one.
      minThreads: 0,
      maxThreads: config.heavy.threads,
      // One call per thread at a time: a thread that is terminated takes only its own call with it.
      concurrentTasksPerWorker: 1,
      idleTimeout: 60_000,
      resourceLimits: {
        maxOldGenerationSizeMb: config.heavy.memoryMb,
        maxYoungGenerationSizeMb: 64,
        stackSizeMb: 8,
      },
      workerData: { config },
      // Threads load TypeScript sources the way this process does (tsx in development and tests).
      execArgv: ts ? ["--import", "tsx"] : [],
    });
    // A thread that fails to start must not take the process down; its calls fail on their own.
    this.piscina.on("error", (err: Error) => log.error({ err }, "a heavy-pool thread failed"));
  }

  /** A heavy tool's call, its body's bytes as sent (parsed and checked in the thread). */
  run(tool: string, body: Uint8Array | undefined, timeoutMs: number): Promise<SerializedOutput> {
    return this.submit({ tool, body, timeoutMs });
  }

  /**
   * A web tool's page, fetched on the shared event loop, read in a thread by the tool's reader
   * (web/readers.ts); `input` was checked on the loop (a URL and a few options, cheap to check).
   */
  read(tool: string, input: unknown, page: Fetched, timeoutMs: number): Promise<SerializedOutput> {
    return this.submit({ tool, input, page, timeoutMs });
  }

  private async submit(task: HeavyTask): Promise<SerializedOutput> {
    const { tool, timeoutMs } = task;
    const signal = AbortSignal.timeout(Math.max(100, timeoutMs - 250));
    let result: HeavyResult;
    try {
      result = (await this.piscina.run(task, { signal })) as HeavyResult;
    } catch (err) {
      if (signal.aborted)
        throw new WorkerError(
          504,
          "tool_timeout",
          "its thread was stopped at the call's deadline.",
        );
      if ((err as { code?: string }).code === "ERR_WORKER_OUT_OF_MEMORY") {
        throw new WorkerError(
          422,
          "resource_limit",
          `The ${tool} tool ran out of its memory allowance on this input and was stopped.`,
        );
      }
      throw err;
    }
    if ("error" in result)
      throw new WorkerError(
        result.error.status,
        result.error.code,
        result.error.message,
        result.error.param,
      );
    return new SerializedOutput(result.json);
  }

  get queued(): number {
    return this.piscina.queueSize;
  }

  destroy(): Promise<void> {
    return this.piscina.destroy();
  }
}
