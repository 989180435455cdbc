import { lazy } from "../../lib/lazy-require.js";
import type { WorkerConfig } from "../config.js";
import { invalidInput, WorkerError } from "../errors.js";
import { HEAVY_IMPLEMENTATIONS } from "../tools/heavy.js";
import type { Fetched } from "../web/fetch.js";
import { jsonFit } from "./json-fit.js";

/**
 * What a heavy-pool process runs (child.ts loads this module): each job is checked and written
 * here, in the child, so the shared event loop only passes a job's input in and its JSON out.
 */

/**
 * A heavy tool's call: its body, as the caller sent it, parsed and checked against the tool's
 * schema (100,000 CSV rows took the shared event loop 0.2-0.3 s to check, ~0.2 s to parse and copy
 * here), then run; its output checked against the tool's output schema and written as JSON (a
 * large output took that loop most of a second).
 */
export async function runTool(
  tool: string,
  body: Uint8Array | undefined,
  ctx: { config: WorkerConfig; timeoutMs: number },
): Promise<string> {
  const impl = HEAVY_IMPLEMENTATIONS.get(tool);
  if (!impl) throw new Error(`no heavy implementation for ${tool}`);
  const input = impl.definition.input.safeParse(body && parsedBody(body));
  if (!input.success) throw invalidInput(input.error);
  try {
    const output = await impl.run(input.data, ctx);
    return written(tool, impl.definition.output.parse(output), ctx.config);
  } catch (err) {
    // A library that recurses once per level of the input (yaml's and xml's writers, a parser)
    // ran out of stack: the input's depth, the caller's 422, not a tool failure.
    if (err instanceof RangeError && /call stack/i.test(err.message))
      throw new WorkerError(
        422,
        "resource_limit",
        `The input nests too deeply for the ${tool} tool.`,
      );
    throw err;
  }
}

/**
 * An output as JSON, once weighed: one larger than an eighth of the thread's heap (64 MB by
 * default) is refused, the caller's 422, before JSON.stringify could exhaust the heap (json-fit.ts).
 */
function written(tool: string, output: unknown, config: WorkerConfig): string {
  const limitMb = Math.floor(config.heavy.memoryMb / 8);
  if (jsonFit(output, limitMb * 1024 * 1024) === "over")
    throw new WorkerError(
      422,
      "resource_limit",
      `The ${tool} tool's output on this input is larger than ${limitMb} MB; it was not sent.`,
    );
  return JSON.stringify(output);
}

/** The body's JSON; a body that is not JSON is the caller's 422, as for the body as a whole. */
function parsedBody(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw new WorkerError(422, "invalid_input", "The body is not valid JSON.", "");
  }
}

/** The web tools' readers and their libraries, loaded on the first page a thread reads. */
const readers = lazy(() => import("../web/readers.js").then((m) => m.PAGE_READERS));

/**
 * A page a tool fetched on the shared event loop, read by the tool's reader; the reading checked
 * against the reader's schema and written as JSON, as a heavy tool's output is.
 */
export async function readFetchedPage(
  tool: string,
  page: Fetched,
  input: unknown,
  config: WorkerConfig,
): Promise<string> {
  const reader = (await readers()).get(tool);
  if (!reader) throw new Error(`no page reader for ${tool}`);
  const output = await reader.read(page, input as never);
  return written(tool, reader.output.parse(output), config);
}
