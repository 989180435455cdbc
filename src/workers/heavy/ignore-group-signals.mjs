// Loaded first in every heavy-pool child (pool.ts `execArgv`), before anything else it runs: a
// SIGTERM or SIGINT sent to the whole process group (systemd, `timeout`, Ctrl-C) reaches the
// children too, and killed them under their calls (answered 422 as if the input had exhausted
// the child) while the gateway was still draining. They leave when their pool stops them
// (tinypool sends SIGKILL a second after its SIGTERM) or when the workers process is gone (the
// IPC channel closes: child.ts). Plain JavaScript, so it runs before tsx is loaded.
for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => {});
