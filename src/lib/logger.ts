import { pino, type Logger } from "pino";

/**
 * The process logger: JSON lines on stdout, buffered (one write(2) per 4 KiB, flushed every
 * second), because request logs are on the hot path.
 *
 * The log sink must never decide whether the process serves or stops. A reader that went away
 * (EPIPE: the supervisor died, `| head` closed) turns the sink off for good: lines are dropped,
 * never retried. A reader that stalls (a full pipe) holds at most `MAX_BUFFERED` bytes before new
 * lines are dropped. The final flush is asynchronous and bounded: sonic-boom's `flushSync` loops
 * forever on EPIPE, so it is never called.
 */
const MAX_BUFFERED = 4 * 1024 * 1024;

export interface ProcessLogger {
  log: Logger;
  /** Writes what is buffered, waiting at most `timeoutMs`; never throws. */
  flush(timeoutMs: number): Promise<void>;
  /** Human-readable text (the development banner) through the same sink: never blocks, dropped once broken. */
  print(text: string): void;
  /** True once the reader went away: nothing more is written. */
  readonly broken: boolean;
}

export function createProcessLogger(options: pino.LoggerOptions): ProcessLogger {
  const destination = pino.destination({ dest: 1, sync: false, minLength: 4096, maxLength: MAX_BUFFERED });
  let broken = false;
  destination.on("error", () => {
    broken = true;
  });
  // Lines go through this gate rather than straight to sonic-boom, so a broken sink costs nothing.
  const sink = {
    write(line: string) {
      if (!broken) destination.write(line);
    },
  };
  setInterval(() => {
    if (!broken) destination.flush();
  }, 1000).unref();
  const log = pino(options, sink);
  return {
    log,
    print(text) {
      sink.write(text);
      if (!broken) destination.flush();
    },
    get broken() {
      return broken;
    },
    flush(timeoutMs) {
      if (broken) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs).unref();
        try {
          destination.flush(() => {
            clearTimeout(timer);
            resolve();
          });
        } catch {
          clearTimeout(timer);
          resolve();
        }
      });
    },
  };
}
