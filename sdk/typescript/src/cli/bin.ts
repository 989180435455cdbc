#!/usr/bin/env node
/** The `toolgate` executable: the npm bin, and the entry `npm run build:cli` compiles into binaries. */
import { run } from "./main.js";

process.exitCode = await run(process.argv.slice(2), {
  out: (t) => process.stdout.write(`${t}\n`),
  err: (t) => process.stderr.write(`${t}\n`),
});
