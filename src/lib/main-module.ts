import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * Whether the module at `moduleUrl` is the one node was asked to run. Node runs the main module
 * from its real path, while `process.argv[1]` keeps the path as given: through a symlink (a
 * release directory behind /app) or with characters a URL escapes, comparing the two as text
 * said "not the main module", and the process exited 0 having started nothing.
 */
export function isMainModule(moduleUrl: string): boolean {
  const script = process.argv[1];
  if (!script) return false;
  try {
    return fileURLToPath(moduleUrl) === realpathSync(script);
  } catch {
    return false;
  }
}
