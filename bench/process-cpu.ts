import { readFileSync } from "node:fs";

/**
 * CPU time (user + system) a process has used so far, in microseconds (Linux: /proc/<pid>/stat,
 * 100 clock ticks a second). The fields are read after the last ")": a process name may hold one.
 */
export function cpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}
