import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * vitest global setup: a directory the test workers share to pack and install the TypeScript
 * library once per run (installPackedSdk in sdk-package.ts), named in TOOLGATE_TEST_SDK_DIR,
 * which every worker inherits. Nothing is packed here: a run without the library's tests pays
 * nothing.
 */
export default function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), "toolgate-sdk-once-"));
  process.env.TOOLGATE_TEST_SDK_DIR = dir;
  return () => rmSync(dir, { recursive: true, force: true });
}
