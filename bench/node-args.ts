/**
 * The flags the benches give the node of each process they measure: BENCH_PROFILE=<dir> writes a
 * CPU profile (.cpuprofile) there when the process exits, then BENCH_NODE_ARGS="…" adds its own
 * (e.g. --perf-basic-prof for `perf`).
 */
export const BENCH_NODE_ARGS: string[] = [
  ...(process.env.BENCH_PROFILE
    ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_PROFILE}`]
    : []),
  ...(process.env.BENCH_NODE_ARGS?.split(" ").filter(Boolean) ?? []),
];
