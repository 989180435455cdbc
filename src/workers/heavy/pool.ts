import { readFileSync } from "node:fs";
import type { Logger } from "pino";
import { Tinypool } from "tinypool";
import type { WorkerConfig } from "../config.js";
import { WorkerError } from "../errors.js";
import type { Fetched } from "../web/fetch.js";
import { HEAVY_CONFIG_ENV, type HeavyResult, type HeavyTask } from "./child.js";
import { SerializedOutput } from "./serialized-output.js";

/** What tinypool rejects a call with when its child process died under it. */
const CHILD_DIED = "Worker exited unexpectedly";

/**
 * The heavy pool: OCR, charts, sandboxed code, document and image decoding, and the reading of
 * the pages the web tools fetch, run in child processes with a JS heap limit, at most `threads`
 * at a time (more wait in line), each killed at its call's deadline. A runaway call therefore
 * costs one child for at most its timeout, never the workers process, and cheap tools keep their
 * own event loop.
 *
 * Processes, not threads: V8 cannot unwind every allocation that exhausts a heap. One that is
 * larger than what is left (a chart's `bin.step: 1e-8`, an array grown in one step) ends the
 * whole process, which with threads was the workers process and every call in it. Killing a
 * process also stops native work (an SVG filter, an image encode) that terminating a thread
 * left running to its end.
 */
export class HeavyPool {
  private readonly pool: Tinypool;

  constructor(config: WorkerConfig, log: Logger) {
    const ts = import.meta.url.endsWith(".ts");
    this.pool = new Tinypool({
      runtime: "child_process",
      filename: new URL(`./child.${ts ? "ts" : "js"}`, import.meta.url).href,
      // No child until the first heavy call: most processes (and tests) never make one.
      minThreads: 0,
      maxThreads: config.heavy.threads,
      // One call per child at a time: a child that is killed takes only its own call with it.
      concurrentTasksPerWorker: 1,
      idleTimeout: 60_000,
      // Bodies and pages cross as bytes (Uint8Array), not as JSON text.
      serialization: "advanced",
      // Children load TypeScript sources the way this process does (tsx in development and tests).
      // Half the 8 MB a main thread's stack has on Linux (and in Docker) by default: libraries that
      // recurse once per level of the input (yaml, QuickJS under WebAssembly) need more than V8's
      // ~1 MB, and a limit past the real stack would crash instead of throwing RangeError.
      execArgv: [
        "--import",
        new URL("./ignore-group-signals.mjs", import.meta.url).href,
        ...(ts ? ["--import", "tsx"] : []),
        `--max-old-space-size=${config.heavy.memoryMb}`,
        "--stack-size=4000",
      ],
      // tinypool gives a child only the environment it is handed.
      env: {
        ...(process.env as Record<string, string>),
        [HEAVY_CONFIG_ENV]: JSON.stringify(config),
      },
    });
    // A child that fails with no call on it must not take the process down.
    this.pool.on("error", (err: Error) => log.error({ err }, "a heavy-pool process failed"));
    this.residentLimitBytes = 2 * config.heavy.memoryMb * 1024 * 1024;
  }

  /** The resident memory a child may reach (twice its heap limit) before it is killed. */
  private readonly residentLimitBytes: number;
  private watch: NodeJS.Timeout | undefined;
  private running = 0;

  /**
   * While calls run, each child's resident memory is read every 200 ms, and a child past the
   * limit is killed (its call answers 422). The heap limit does not count what lives outside the
   * heap: the buffers a library inflates into (a 700 KB PDF whose stream inflates to 700 MB took a
   * child to 1.6 GB), WebAssembly memory, libvips' pixels. Linux only (/proc); elsewhere only
   * the heap limit holds.
   */
  private watchResidentMemory(): void {
    if (this.running++ > 0 || process.platform !== "linux") return;
    this.watch = setInterval(() => {
      for (const child of this.pool.threads)
        if (residentBytes(child.threadId) > this.residentLimitBytes)
          process.kill(child.threadId, "SIGKILL");
    }, 200).unref();
  }

  private unwatch(): void {
    if (--this.running === 0) clearInterval(this.watch);
  }

  /** A heavy tool's call, its body's bytes as sent (parsed and checked in the child). */
  run(tool: string, body: Uint8Array | undefined, timeoutMs: number): Promise<SerializedOutput> {
    return this.submit({ tool, body, timeoutMs });
  }

  /**
   * A web tool's page, fetched on the shared event loop, read in a child by the tool's reader
   * (web/readers.ts); `input` was checked on the loop (a URL and a few options, cheap to check).
   */
  read(tool: string, input: unknown, page: Fetched, timeoutMs: number): Promise<SerializedOutput> {
    return this.submit({ tool, input, page, timeoutMs });
  }

  private async submit(task: HeavyTask): Promise<SerializedOutput> {
    const { tool, timeoutMs } = task;
    const signal = AbortSignal.timeout(Math.max(100, timeoutMs - 250));
    let result: HeavyResult;
    this.watchResidentMemory();
    try {
      result = (await this.pool.run(task, { signal })) as HeavyResult;
    } catch (err) {
      if (signal.aborted)
        throw new WorkerError(
          504,
          "tool_timeout",
          "its process was stopped at the call's deadline.",
        );
      if ((err as Error).message === CHILD_DIED)
        // Its heap exhausted (V8 aborts the process) or its native code crashed: this input's doing.
        throw new WorkerError(
          422,
          "resource_limit",
          `The ${tool} tool ran out of its memory allowance on this input and was stopped.`,
          "page" in task ? "url" : largestField(task.body),
        );
      throw err;
    } finally {
      this.unwatch();
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
    return this.pool.queueSize;
  }

  destroy(): Promise<void> {
    return this.pool.destroy();
  }
}

/**
 * The field a refusal names when the child died and cannot say: the body's top-level field with
 * the longest JSON text, the likeliest to have made the input too costly. Parsed here, on the
 * shared loop, only on this rare path.
 */
function largestField(body: Uint8Array | undefined): string | undefined {
  try {
    const fields = Object.entries(JSON.parse(new TextDecoder().decode(body)) as object);
    let largest: [string, number] | undefined;
    for (const [name, value] of fields) {
      const size = JSON.stringify(value)?.length ?? 0;
      if (!largest || size > largest[1]) largest = [name, size];
    }
    return largest?.[0];
  } catch {
    return undefined;
  }
}

/** A process's resident memory in bytes (VmRSS in /proc/<pid>/status); 0 once it is gone. */
function residentBytes(pid: number): number {
  try {
    const kb = /VmRSS:\s*(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "latin1"))?.[1];
    return Number(kb ?? 0) * 1024;
  } catch {
    return 0;
  }
}
