import express from "express";
import { pino } from "pino";
import { RequestGuard, guardProcess } from "../../../src/http/request-guard.js";
import { requestId } from "../../../src/http/request-context.js";
import { NOTHING_TO_REDACT } from "../../../src/lib/redact.js";

/**
 * A small server run as a child process by request-guard.test.ts: the gateway's request guard
 * wired to a real process, with routes that throw where no handler can catch (a timer, a
 * forgotten promise) — the guard's own answer, for requests that hold no charged call.
 */
const guard = new RequestGuard(pino({ level: "silent" }), NOTHING_TO_REDACT);
guardProcess(process, guard);

const app = express();
app.use(guard.middleware, requestId);
app.get("/ok", (_req, res) => void res.json({ ok: true }));
app.get("/throws-in-a-timer", () => {
  setTimeout(() => {
    throw new Error("thrown in a timer");
  }, 5);
});
app.get("/forgets-a-rejected-promise", () => void Promise.reject(new Error("nobody awaited this")));
app.get("/throws-after-answering", (_req, res) => {
  res.write('{"partial":');
  setTimeout(() => {
    throw new Error("thrown mid-answer");
  }, 5);
});
// A signal handler runs outside any request: such an exception still ends the process.
process.on("SIGUSR2", () => {
  throw new Error("thrown outside any request");
});

const server = app.listen(0, "127.0.0.1", () => {
  const address = server.address();
  process.stdout.write(
    `${JSON.stringify({ msg: "listening", port: typeof address === "object" && address ? address.port : 0 })}\n`,
  );
});
