import { execFile } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { builtinModules } from "node:module";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  callTool,
  call,
  fundedAccount,
  spawnGateway,
  uniquePrefix,
  dropPrefix,
  type GatewayProcess,
} from "../helpers/gateway.js";
import { startSmtpServer, verificationLink } from "../helpers/smtp.js";

/**
 * The production path for real: `npm run build`, then `node dist/src/main.js` with production
 * settings on Redis — no tsx, no TypeScript (Node 20 cannot load a .ts file without a loader, so
 * any stray import of source would fail here) — and the compiled code imports nothing that
 * `npm ci --omit=dev` (the Docker image) leaves out.
 */
const root = new URL("../..", import.meta.url).pathname;
const prefix = uniquePrefix("build");
let gw: GatewayProcess;
let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
let coldStartMs = 0;

beforeAll(async () => {
  // tsc alone takes ~2 minutes when the machine is shared by several test runs.
  await promisify(execFile)("npm", ["run", "build"], {
    cwd: root,
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
  });
  smtp = await startSmtpServer();
  const started = performance.now();
  gw = await spawnGateway(
    prefix,
    {
      NODE_ENV: "production",
      SMTP_URL: smtp.url,
      MAIL_FROM: "Toolgate <no-reply@localhost.example>",
      PUBLIC_BASE_URL: "http://localhost:8402",
    },
    [],
    "dist/src/main.js",
  );
  for (;;) {
    if ((await fetch(`${gw.url}/readyz`)).status === 200) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  coldStartMs = performance.now() - started;
}, 600_000);
afterAll(async () => {
  await gw?.stop();
  await smtp?.stop();
  await dropPrefix(prefix);
});

/** Every file under `dir`, recursively. */
const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)],
  );

describe("the production build (npm run build → dist/)", () => {
  it("starts with production settings and is ready, serving keyed calls charged by the compiled-in Lua scripts", async () => {
    process.stdout.write(
      `production build: process start → /readyz 200 in ${coldStartMs.toFixed(0)} ms (this machine is shared; see npm run bench)\n`,
    );
    expect((await call(`${gw.url}/readyz`)).body).toEqual({ status: "ready" });
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const res = await callTool(gw.url, key, "hash", { text: "hello", algorithm: "sha256" });
    expect(res.status).toBe(200);
    expect(res.body.digest).toBe(
      "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
    );
    expect(res.headers.get("x-credits-remaining")).toBe("99");
    // Files read at run time next to the code ship with the build: the changelog page reads CHANGELOG.md.
    const changelog = await fetch(`${gw.url}/changelog`);
    expect(changelog.status).toBe(200);
    expect(await changelog.text()).toContain("First release of the"); // the v1 release, from CHANGELOG.md
    // The dashboard's script ships as a file beside the compiled code, and its sign-in page is served.
    const script = await fetch(`${gw.url}/dashboard/assets/dashboard.js`);
    expect(script.status).toBe(200);
    expect(await script.text()).toContain("/dashboard/api/v1");
    expect(await (await fetch(`${gw.url}/dashboard/sign-in`)).text()).toContain(
      '<label for="api-key">API key</label>',
    );
    // A verification e-mail went out through the real SMTP server (production has no log mailer).
    expect(verificationLink((await smtp.next()).raw)).toMatch(
      /^http:\/\/localhost:8402\/api\/v1\/verify-email\?token=/,
    );
  });

  it("imports nothing at run time that the image's `npm ci --omit=dev` leaves out, and no TypeScript toolchain", () => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
    const runtime = new Set([
      ...Object.keys(pkg.dependencies),
      ...Object.keys(pkg.optionalDependencies ?? {}),
    ]);
    expect(runtime.has("tsx")).toBe(false);
    expect(runtime.has("typescript")).toBe(false);
    const imported = new Set<string>();
    for (const file of filesUnder(join(root, "dist")).filter((f) => f.endsWith(".js"))) {
      // Import and export statements (at the start of a line: not code quoted in a string) and dynamic imports.
      for (const [, from, bare, dynamic] of readFileSync(file, "utf8").matchAll(
        /^\s*(?:import|export)\s+[\w$*\s{},]+?\s+from\s+["']([^"'.][^"']*)["']|^\s*import\s+["']([^"'.][^"']*)["']|\bimport\(\s*["']([^"'.][^"']*)["']\s*\)/gm,
      )) {
        // tsx is imported dynamically only when running from TypeScript sources (development).
        if (dynamic?.startsWith("tsx")) continue;
        const spec = from ?? bare ?? dynamic;
        const name = spec!.startsWith("@")
          ? spec!.split("/").slice(0, 2).join("/")
          : spec!.split("/")[0]!;
        if (!spec!.startsWith("node:") && !builtinModules.includes(name)) imported.add(name);
      }
    }
    expect(imported.size).toBeGreaterThan(5);
    expect([...imported].filter((name) => !runtime.has(name))).toEqual([]);
    // The Lua scripts are read from disk next to the compiled store.
    expect(filesUnder(join(root, "dist/src/credits/lua")).length).toBeGreaterThan(5);
  });
});
