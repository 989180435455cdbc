import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { COMPILED_DIR } from "../helpers/compiled.js";
import { call, spawnGateway, uniquePrefix } from "../helpers/gateway.js";

/**
 * A release directory behind a symlink (`/app` → `/srv/releases/42`), as many deployments have:
 * node runs the main module from its real path while `process.argv[1]` keeps the link's. The
 * gateway took that for "not the main module" and exited 0 having started nothing.
 */
const dir = mkdtempSync(join(tmpdir(), "toolgate-release-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("starts and serves when its entry point is reached through a symlinked directory", async () => {
  const app = join(dir, "app");
  symlinkSync(COMPILED_DIR, app);
  const gw = await spawnGateway(uniquePrefix("symlinked"), {}, [], join(app, "src/main.js"));
  try {
    expect((await call(`${gw.url}/readyz`)).status).toBe(200);
    expect((await call(`${gw.url}/v1/tools/hash`)).body.name).toBe("hash");
  } finally {
    await gw.stop();
  }
});
