#!/usr/bin/env node
/** The `toolgate` executable: the npm bin, and the entry `npm run build:cli` compiles into binaries. */
import { EXIT, jsonAsked, run } from "./main.js";

const argv = process.argv.slice(2);
/** Set once standard output has failed for another reason than a reader gone (a full disk). */
let outputLost = false;

process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  // A reader that stops early (`toolgate tools list | head -1`) closes the pipe: the rest of the
  // output has nowhere to go, so end quietly, as Unix tools do, rather than with EPIPE and a stack.
  if (error.code === "EPIPE") process.exit(EXIT.ok);
  if (outputLost) return;
  // Anything else (ENOSPC on a full disk, EIO): the output is lost, perhaps that of a charged
  // call, which a script must not take for done. One line, no stack; the command still ends as
  // it would (its cost line, or its error, on standard error), then exits 5.
  outputLost = true;
  process.exitCode = EXIT.output;
  const reason = error.code ?? error.message;
  process.stderr.write(
    jsonAsked(argv)
      ? `${JSON.stringify({ error: { status: 0, code: "output_error", message: `could not write output: ${reason}` } })}\n`
      : `toolgate: could not write output: ${reason}\n`,
  );
});
// Standard error closed early (`toolgate call … 2>&1 | head -1`, `2>&1 | true`): what it would have
// said is lost, not the command's outcome, so the exit code stays the command's own.
process.stderr.on("error", () => {});

const code = await run(argv, {
  out: (t) => process.stdout.write(`${t}\n`),
  err: (t) => process.stderr.write(`${t}\n`),
});
process.exitCode = outputLost ? EXIT.output : code;
