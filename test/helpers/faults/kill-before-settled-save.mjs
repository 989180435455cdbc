// Loaded with `node --import` into a real gateway process by the x402 paid-call crash tests: the
// process SIGKILLs itself at the instant it is about to write a payment's record as settled to
// Redis — after the payment's credit (the top-up script) has landed, before the record's save and
// before the paid call is admitted. A kill -9 landing there, every time. Plain JavaScript: it is
// imported before tsx is.
import { Socket } from "node:net";

const write = Socket.prototype.write;
Socket.prototype.write = function (chunk, ...rest) {
  const text = typeof chunk === "string" ? chunk : Buffer.isBuffer(chunk) ? chunk.toString() : "";
  // The record's JSON, as the payment-save script's argument.
  if (text.includes('"state":"settled"') && text.includes('"authorization"'))
    process.kill(process.pid, "SIGKILL");
  return write.call(this, chunk, ...rest);
};
