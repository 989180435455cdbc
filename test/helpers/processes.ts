import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { randomId } from "../../src/lib/ids.js";

/**
 * Real processes started by a test, found again through a marker in their environment (which
 * every descendant inherits: bundled workers, the anvil watchdog and anvil itself), so a test
 * can tell whether anything it started is still running after its gateway is gone.
 */
export const newMarker = () => `m${randomId(16)}`;

/** Live (not zombie) processes whose environment carries TOOLGATE_TEST_MARKER=`marker`. */
export function processesMarked(marker: string): { pid: number; command: string }[] {
  const found: { pid: number; command: string }[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (
        !readFileSync(`/proc/${entry}/environ`, "latin1")
          .split("\0")
          .includes(`TOOLGATE_TEST_MARKER=${marker}`)
      )
        continue;
      const stat = readFileSync(`/proc/${entry}/stat`, "latin1");
      if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) continue; // exited, not yet reaped
      found.push({
        pid: Number(entry),
        command: readFileSync(`/proc/${entry}/cmdline`, "latin1").replaceAll("\0", " ").trim(),
      });
    } catch {
      // gone while we looked, or not ours to read
    }
  }
  return found;
}

/** Waits until no marked process is left; returns those still running after `timeoutMs`. */
export async function waitUntilNoneMarked(marker: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  let left = processesMarked(marker);
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    left = processesMarked(marker);
  }
  return left;
}

/** Kills whatever a test left behind (only processes carrying its marker). */
export function killMarked(marker: string): void {
  for (const { pid } of processesMarked(marker)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* already gone */
    }
  }
}

export interface Started {
  child: ChildProcess;
  marker: string;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the first match of `pattern` in stdout; rejects on exit or after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
}

/**
 * `node --import tsx src/main.ts` (what `npm start` runs) with exactly `env` and a marker;
 * `detached`: in a process group of its own (as systemd or a shell runs it), which a test can
 * signal as a whole with `process.kill(-child.pid, signal)`.
 */
export function startToolgate(
  env: Record<string, string>,
  command: string[] = [process.execPath, "--import", "tsx", "src/main.ts"],
  { detached = false }: { detached?: boolean } = {},
): Started {
  const marker = newMarker();
  const child = spawn(command[0]!, command.slice(1), {
    cwd: new URL("../..", import.meta.url).pathname,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TOOLGATE_TEST_MARKER: marker, ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached,
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (err += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>(
    (resolve) => child.once("exit", (code, signal) => resolve({ code, signal, at: Date.now() })),
  );
  return {
    child,
    marker,
    stdout: () => out,
    stderr: () => err,
    exited,
    async waitFor(pattern, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      let gone = false;
      void exited.then(() => (gone = true));
      for (;;) {
        const match = pattern.exec(out);
        if (match) return match;
        if (gone) throw new Error(`exited before printing ${pattern}:\n${out}\n${err}`);
        if (Date.now() > deadline)
          throw new Error(`nothing matched ${pattern} within ${timeoutMs} ms:\n${out}\n${err}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
}

/**
 * Runs `command` with its standard output closed before anything is written to it, as
 * `command | head -1` leaves it once head has read its line: its exit code and what it wrote to
 * standard error.
 */
export async function runWithClosedStdout(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<[number | null, string]> {
  const child = spawn(command, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout.destroy();
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return [code, stderr];
}
