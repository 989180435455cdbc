#!/usr/bin/env node
/** The `toolgate` executable: the npm bin, and the entry `npm run build:cli` compiles into binaries. */
import { run } from "./main.js";

// A reader that stops early (`toolgate tools list | head -1`) closes the pipe: the rest of the
// output has nowhere to go, so end quietly, as Unix tools do, rather than with EPIPE and a stack.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE") throw error;
  process.exit(0);
});

process.exitCode = await run(process.argv.slice(2), {
  out: (t) => process.stdout.write(`${t}\n`),
  err: (t) => process.stderr.write(`${t}\n`),
});
