import { pino, type Logger } from "pino";
import { NOTHING_TO_REDACT, type Redactor, type Secret, secretRedactor } from "./redact.js";

/**
 * The process logger: JSON lines on stdout, batched (one write per 4 KiB, or every second),
 * because request logs are on the hot path.
 *
 * The log sink must never decide whether the process serves or stops:
 * - Lines go to `process.stdout`, which for a pipe or socket is a non-blocking libuv stream:
 *   a reader that stalls (a full pipe) makes writes queue in memory, never block a thread.
 *   pino's own destination (sonic-boom) writes fd 1 with blocking fs writes instead: a stalled
 *   reader then holds a libuv pool thread for ever, and `process.exit` waits for that thread —
 *   the gateway could not stop. Its `flushSync` also retries EPIPE for ever.
 * - At most `MAX_QUEUED` bytes wait for a stalled reader; newer lines are dropped.
 * - A reader that went away (EPIPE: the supervisor died, `| head` closed) turns the sink off
 *   for good: lines are dropped, never retried.
 * - The final flush is bounded.
 *
 * Secret values the process knows (`protect`) are cut out of every line of `log`, whatever holds
 * them: a message, a URL, a library's error (viem names the RPC URL it failed on). `requestLog`
 * (one line per request, the hot path) skips that scan: its one free text is the path, which the
 * request log redacts itself with `redact` (src/http/request-context.ts).
 */
const BATCH_BYTES = 4096;
const MAX_QUEUED = 4 * 1024 * 1024;

export interface ProcessLogger {
  log: Logger;
  /** The same sink without the scan for secrets nor pino's redaction paths: for lines whose fields are known (the request log). */
  requestLog: Logger;
  /** Adds secret values to cut out of `log`'s lines (and to `redact`): called at start-up, as they become known. */
  protect(secrets: Iterable<Secret>): void;
  /** Cuts every secret value `protect` was given out of a text. */
  readonly redact: Redactor;
  /** Writes what is batched and waits for it to drain, at most `timeoutMs`; never throws. */
  flush(timeoutMs: number): Promise<void>;
  /** Human-readable text (the development banner) through the same sink: never blocks, dropped once broken. */
  print(text: string): void;
  /** True once the reader went away: nothing more is written. */
  readonly broken: boolean;
}

export function createProcessLogger(
  options: pino.LoggerOptions,
  out: NodeJS.WriteStream = process.stdout,
): ProcessLogger {
  let broken = false;
  let batch = "";
  // Several loggers may share one stdout (tests start gateways in one process): one listener each,
  // removed never — cheap. A large bound, not 0 (unlimited): tinypool raises it by one for each
  // heavy-pool child it starts, which turned "unlimited" into 1 and warned of a leak.
  out.setMaxListeners(Math.max(out.getMaxListeners(), 1000));
  out.on("error", () => {
    broken = true;
  });
  const writeBatch = () => {
    if (broken || batch === "") return;
    if (out.writableLength < MAX_QUEUED) out.write(batch);
    batch = "";
  };
  const sink = {
    write(line: string) {
      if (broken) return;
      batch += line;
      if (batch.length >= BATCH_BYTES) writeBatch();
    },
  };
  setInterval(writeBatch, 1000).unref();
  const secrets = new Set<Secret>();
  let redact = NOTHING_TO_REDACT;
  const redactingSink = {
    write(line: string) {
      sink.write(redact(line));
    },
  };
  const { redact: _paths, ...unredacted } = options;
  const log = pino(options, redactingSink);
  return {
    log,
    requestLog: pino(unredacted, sink),
    protect(values) {
      for (const value of values) secrets.add(value);
      redact = secretRedactor(secrets);
    },
    get redact() {
      return redact;
    },
    get broken() {
      return broken;
    },
    print(text) {
      sink.write(text);
      writeBatch();
    },
    flush(timeoutMs) {
      writeBatch();
      if (broken || out.writableLength === 0) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const timer = setTimeout(done, timeoutMs).unref();
        function done() {
          clearTimeout(timer);
          out.off("drain", done);
          resolve();
        }
        out.once("drain", done);
      });
    },
  };
}
