import { spawn, type ChildProcess, type StdioOptions } from "node:child_process";

/**
 * A child process that dies with this one, however this one ends — SIGKILL and crashes
 * included — for programs we do not control (anvil). Linux's PR_SET_PDEATHSIG is not reachable
 * from Node, so the program runs under a tiny Node watchdog (watchdog.cjs): its stdin is a pipe from this
 * process, which the kernel closes when this process dies; on that end of file the watchdog
 * stops the program and leaves. Signals sent to the watchdog are passed on, and it exits with
 * the program's status (127 when the program could not be started), so the returned
 * ChildProcess stands for the program itself. The program's stdout and stderr are the
 * watchdog's, so a caller reads them as usual.
 *
 * The watchdog and the program run in a process group (and session) of their own: a signal sent
 * to this process's whole group (systemd, `timeout`, Ctrl-C) reaches this process alone, which
 * stops the program when it is done with it (a gateway drains its calls first, and a paid one
 * still needs the chain to settle). Only signals sent to the watchdog itself are passed on.
 */
const WATCHDOG = new URL("./watchdog.cjs", import.meta.url).pathname;

export const PROGRAM_NOT_FOUND = 127;

export function spawnTied(
  command: string,
  args: string[],
  stdio: { stdout: "pipe" | "ignore"; stderr: "pipe" | "ignore" | "inherit" },
): ChildProcess {
  const options: StdioOptions = ["pipe", stdio.stdout, stdio.stderr];
  return spawn(process.execPath, [WATCHDOG, command, ...args], { stdio: options, detached: true });
}
