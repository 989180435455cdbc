import { Worker } from "node:worker_threads";

/**
 * A process that ends itself when its event loop stops running for `stallMs`, so whatever
 * supervises it (docker compose's `restart:`, Kubernetes, systemd, the gateway for the bundled
 * workers) starts a fresh one. A stuck loop answers nothing, not even its health check, and a
 * health check alone restarts nothing under compose.
 *
 * The loop bumps a shared counter once a second; a watcher thread, whose own loop a stuck main
 * thread cannot hold, reads it. When it has not moved for `stallMs` the thread writes one log
 * line to stderr (the main thread's logger cannot run) and sends the process SIGKILL: nothing
 * the stuck thread does can delay that, and the exit status (137) tells the supervisor it died.
 * A process stopped whole (SIGSTOP) stops its watcher too: the gateway's heartbeat over IPC
 * covers that case for the bundled workers (tools/bundled-workers.ts).
 */
export function watchEventLoop(options: { stallMs: number; service: string }): {
  stop(): void;
} {
  const beats = new Int32Array(new SharedArrayBuffer(4));
  const beat = setInterval(() => Atomics.add(beats, 0, 1), BEAT_MS);
  beat.unref();
  const watcher = new Worker(WATCHER_SOURCE, {
    eval: true,
    workerData: { beats, stallMs: options.stallMs, service: options.service, checkMs: BEAT_MS },
    // The watcher needs next to nothing; the limits keep its isolate small.
    resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 2 },
  });
  watcher.unref();
  return {
    stop() {
      clearInterval(beat);
      void watcher.terminate();
    },
  };
}

const BEAT_MS = 1000;

/** The watcher thread (plain JavaScript: it runs as is, built or not). */
const WATCHER_SOURCE = `
const { workerData } = require("node:worker_threads");
const { writeSync } = require("node:fs");
const { beats, stallMs, service, checkMs } = workerData;
let seen = Atomics.load(beats, 0);
let movedAt = Date.now();
setInterval(() => {
  const now = Atomics.load(beats, 0);
  if (now !== seen) {
    seen = now;
    movedAt = Date.now();
    return;
  }
  const silentMs = Date.now() - movedAt;
  if (silentMs < stallMs) return;
  writeSync(2, JSON.stringify({
    level: 60,
    time: Date.now(),
    service,
    pid: process.pid,
    silent_ms: silentMs,
    msg: "the event loop has not run for " + Math.round(silentMs / 1000) + " s; ending the process so its supervisor restarts it",
  }) + "\\n");
  process.kill(process.pid, "SIGKILL");
}, checkMs);
`;
