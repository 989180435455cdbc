import { runInNewContext } from "node:vm";
import { WorkerError } from "./errors.js";

/**
 * Runs synchronous work (a caller's regular expression, a caller's JSON Schema) under a CPU
 * time limit, so a catastrophic pattern cannot stall the worker for everyone. A run cut off is
 * 422 naming `param`, the field whose content made it too costly.
 */
export function withTimeLimit<T>(ms: number, what: string, param: string, fn: () => T): T {
  try {
    return runInNewContext("fn()", { fn }, { timeout: ms }) as T;
  } catch (err) {
    if ((err as { code?: string }).code === "ERR_SCRIPT_EXECUTION_TIMEOUT") {
      throw new WorkerError(
        422,
        "resource_limit",
        `${what} took longer than ${ms} ms and was stopped.`,
        param,
      );
    }
    throw err;
  }
}
