// Runs a program and stops it when the parent process is gone: this process's stdin is a pipe
// from the parent, which the kernel closes when the parent dies (SIGKILL included). It is started
// in a process group of its own (tied-child.ts), which the program shares: a signal sent to the
// parent's whole group (systemd, `timeout`, Ctrl-C) reaches neither, so the program outlasts the
// parent's drain; the parent stops it with a signal to this process, which is passed on. The exit
// status is the program's (127: it could not be started). Plain JavaScript, so it starts in
// milliseconds without a TypeScript loader. Used by src/lib/tied-child.ts.
"use strict";
const { spawn } = require("node:child_process");

const [command, ...args] = process.argv.slice(2);
const program = spawn(command, args, { stdio: ["ignore", "inherit", "inherit"] });
const stop = (signal) => {
  if (program.exitCode !== null || program.signalCode !== null) return;
  program.kill(signal);
  setTimeout(() => program.kill("SIGKILL"), 2000).unref();
};
process.stdin.on("end", () => stop("SIGTERM"));
process.stdin.on("error", () => stop("SIGTERM"));
process.stdin.resume();
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, () => stop(signal));
program.on("error", (err) => {
  process.stderr.write(`${command}: ${err.message}\n`);
  process.exit(127);
});
program.on("exit", (code) => process.exit(code ?? 128));
