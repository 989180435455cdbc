import { execFileSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  callTool,
  fundedAccount,
  spawnGateway,
  uniquePrefix,
  dropPrefix,
  type GatewayProcess,
} from "../helpers/gateway.js";

/**
 * WEB_CONCURRENCY=2 with real processes: a primary that forks two gateway processes on one port,
 * the bundled tool workers started once (by the primary), a dead gateway process replaced, and
 * SIGTERM draining everything.
 */
const prefix = uniquePrefix("cluster");
let gw: GatewayProcess;
beforeAll(async () => {
  gw = await spawnGateway(prefix, { WEB_CONCURRENCY: "2" });
}, 120_000);
afterAll(async () => {
  await gw?.stop();
  await dropPrefix(prefix);
});

/** The pid of the process that answers on a fresh connection (node:cluster deals connections out round robin). */
const pidOnFreshConnection = (url: string) =>
  new Promise<number>((resolve, reject) => {
    request(`${url}/metrics`, { agent: false }, (res) => {
      let text = "";
      res
        .on("data", (d) => (text += d))
        .on("end", () => resolve(Number(/^toolgate_process_pid (\d+)$/m.exec(text)?.[1])));
    })
      .on("error", reject)
      .end();
  });

async function servingPids(count: number, timeoutMs = 30_000, url = gw.url): Promise<Set<number>> {
  const pids = new Set<number>();
  const deadline = Date.now() + timeoutMs;
  while (pids.size < count && Date.now() < deadline)
    pids.add(await pidOnFreshConnection(url).catch(() => 0));
  pids.delete(0);
  return pids;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The primary's gateway processes (not the bundled tool workers it also started). */
const gatewayChildren = (): number[] =>
  execFileSync("ps", ["-o", "pid=,args=", "--ppid", String(gw.child.pid)], { encoding: "utf8" })
    .split("\n")
    .filter((line) => line.trim() && !line.includes("workers/main"))
    .map((line) => Number(line.trim().split(/\s+/)[0]));

/** SIGKILLs `victim`, then waits for the primary's replacement and returns its pid, at once. */
async function killAndCatchReplacement(victim: number): Promise<number> {
  const before = new Set(gatewayChildren());
  process.kill(victim, "SIGKILL");
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const fresh = gatewayChildren().find((pid) => !before.has(pid));
    if (fresh) return fresh;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error("the primary started no replacement within 10 s");
}

describe("WEB_CONCURRENCY=2", () => {
  it("replaces a process killed by a signal during its start, the sibling serving throughout", async () => {
    const [victim, survivor] = [...(await servingPids(2))] as [number, number];
    // Killed while it starts (as the OOM killer might): it never served, but it did not fail
    // its start by itself, so nothing says the next would fail too.
    const replacement = await killAndCatchReplacement(victim);
    process.kill(replacement, "SIGKILL");
    while (alive(replacement)) await new Promise((r) => setTimeout(r, 20));
    expect(await pidOnFreshConnection(gw.url)).toBe(survivor);
    const after = await servingPids(2, 60_000);
    expect(after.has(survivor)).toBe(true);
    expect(after.size).toBe(2);
    expect(alive(gw.child.pid!)).toBe(true);
    expect(gw.output.join("\n")).not.toContain("could not start: stopping");
    expect(gw.output.join("\n")).toContain("a gateway process died during its start");
  }, 120_000);

  it("serves from two gateway processes on one port, replaces one that dies, and drains on SIGTERM", async () => {
    const first = await servingPids(2);
    expect(first.size).toBe(2);
    expect(first.has(gw.child.pid!)).toBe(false); // the primary only supervises
    // The bundled tool workers were started once, not once per gateway process.
    expect(gw.output.filter((l) => l.includes('"msg":"workers listening"'))).toHaveLength(1);

    const { key } = await fundedAccount(gw.url, 100, "pro");
    for (let i = 0; i < 4; i++)
      expect((await callTool(gw.url, key, "hash", { text: `call ${i}` })).status).toBe(200);

    const [victim, survivor] = [...first] as [number, number];
    process.kill(victim, "SIGKILL");
    while (alive(victim)) await new Promise((r) => setTimeout(r, 20));
    // Calls on fresh connections keep being served meanwhile.
    for (let i = 0; i < 6; i++) expect(await pidOnFreshConnection(gw.url)).not.toBe(victim);
    expect((await callTool(gw.url, key, "hash", { text: "after the crash" })).status).toBe(200);

    // The primary starts a replacement: two processes serve again.
    const after = await servingPids(2, 60_000);
    expect(after.size).toBe(2);
    expect(after.has(survivor)).toBe(true);
    expect(after.has(victim)).toBe(false);

    expect(await gw.stop("SIGTERM")).toBe(0);
    for (const pid of after) expect(alive(pid)).toBe(false);
  }, 180_000);
});

describe("WEB_CONCURRENCY=2, starts that fail after the group served", () => {
  const dir = mkdtempSync(join(tmpdir(), "toolgate-cluster-"));
  const toolsFile = join(dir, "tools.yaml");
  const marker = join(dir, "die-at-start");
  // Loaded by every process at its start: once the marker exists, a process that starts kills
  // itself with a signal 300 ms in, before it serves (as the OOM killer might, every time).
  const preload = join(dir, "die-at-start.cjs");
  const others: GatewayProcess[] = [];
  beforeAll(() => {
    writeFileSync(
      preload,
      `if (require("node:fs").existsSync(${JSON.stringify(marker)})) setTimeout(() => process.kill(process.pid, "SIGKILL"), 300);\n`,
    );
    writeFileSync(toolsFile, "tools: []\n");
  });
  afterAll(async () => {
    for (const g of others) await g.stop("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  const group = async () => {
    const g = await spawnGateway(
      uniquePrefix("cluster-fail"),
      { WEB_CONCURRENCY: "2", TOOLS_FILE: toolsFile },
      ["--require", preload],
    );
    others.push(g);
    const pids = await servingPids(2, 30_000, g.url);
    expect(pids.size).toBe(2);
    return { g, pids: [...pids] };
  };

  it("stops, exit 78, when a replacement's configuration is refused (a TOOLS_FILE edited since): every fork would repeat it", async () => {
    const { g, pids } = await group();
    writeFileSync(toolsFile, "tools: [ {name: 1} ]\n");
    const exited = once(g.child, "exit");
    process.kill(pids[0]!, "SIGKILL");
    const [code] = await exited;
    expect(code).toBe(78);
    expect(g.output.join("\n")).toContain("a gateway process could not start: stopping");
    writeFileSync(toolsFile, "tools: []\n");
  }, 90_000);

  it("stops once replacements keep dying at start while no process serves, rather than trying for ever", async () => {
    const { g, pids } = await group();
    writeFileSync(marker, "");
    const exited = once(g.child, "exit");
    for (const pid of pids) process.kill(pid, "SIGKILL");
    const [code] = await exited;
    expect(code).toBe(1);
    const log = g.output.join("\n");
    expect(log).toContain("a gateway process died during its start; starting another");
    expect(log).toContain("a gateway process could not start: stopping");
  }, 90_000);
});
