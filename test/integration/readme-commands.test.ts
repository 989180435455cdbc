import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const root = new URL("../..", import.meta.url).pathname;
const readme = readFileSync(join(root, "README.md"), "utf8");
const block = /<!-- readme-commands -->\s*```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? "";
const commands = block
  .split("\n")
  .map((l) => l.replace(/#.*$/, "").trim())
  .filter(Boolean);

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

const clone = mkdtempSync(join(tmpdir(), "toolgate-clone-"));
afterAll(() => rmSync(clone, { recursive: true, force: true }));

describe("the README's two commands", () => {
  it("are a start command and a test command, and CI runs that same test command", () => {
    expect(commands).toEqual(["npm ci && npm start", "npm ci && npm test"]);
    const ci = readFileSync(join(root, ".ci/run"), "utf8");
    expect(ci).toMatch(/^npm ci\b/m);
    expect(ci).toMatch(/^npm test$/m);
  });

  it("start Toolgate from a clean clone with embedded defaults, and its printed key works", async () => {
    // A clone holds exactly what is committed; dependencies are linked, not downloaded again.
    execFileSync("git", ["clone", "--quiet", "--no-hardlinks", root, clone]);
    symlinkSync(join(root, "node_modules"), join(clone, "node_modules"));
    const port = await freePort();
    let rpcUrl = "";
    const child = spawn("npm", ["start"], {
      cwd: clone,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: String(port) },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    try {
      const key = await new Promise<string>((resolve, reject) => {
        let out = "";
        const timer = setTimeout(() => reject(new Error(`no key printed:\n${out}`)), 75_000);
        child.stdout.on("data", (d) => {
          out += d;
          const match = /x-api-key: (tg_live_\S+)/.exec(out);
          const chain = /CHAIN_RPC_URL=(\S+)/.exec(out);
          if (match && chain && out.includes('"msg":"listening"')) {
            clearTimeout(timer);
            rpcUrl = chain[1]!;
            resolve(match[1]!);
          }
        });
        child.on("exit", (code) => reject(new Error(`npm start exited ${code}:\n${out}`)));
      });
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/account`, {
        headers: { "x-api-key": key },
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ tier: "pro", credits: 1000 });
      // x402 works out of the box: the printed command pays for a call on the local chain.
      const paid = execFileSync(
        "npm",
        ["run", "--silent", "pay", "--", "hash", '{"text":"hello"}'],
        {
          cwd: clone,
          env: {
            PATH: process.env.PATH,
            HOME: process.env.HOME,
            CHAIN_RPC_URL: rpcUrl,
            TOOLGATE_URL: `http://127.0.0.1:${port}`,
          },
          encoding: "utf8",
        },
      );
      expect(paid).toContain("HTTP 200");
      expect(paid).toContain('"digest"');
      expect(paid).toMatch(/paid: .*success: true/s);
      // A supervisor stops `npm start` by signalling npm alone: npm passes it to its script's
      // shell, and the script execs node, so the gateway itself shuts down, with its chain.
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
      const groupAlive = () => {
        try {
          process.kill(-child.pid!, 0);
          return true;
        } catch {
          return false;
        }
      };
      const deadline = Date.now() + 15_000;
      while (groupAlive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(groupAlive()).toBe(false);
    } finally {
      // Whatever failed above, nothing of this start outlives the test.
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        /* already gone */
      }
    }
    // A cold start from a clone (tsx, the workers, anvil, PGlite) beside other test files on two cores.
  }, 90_000);
});
