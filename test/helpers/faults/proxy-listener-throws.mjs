// Loaded with `node --import` into a real gateway process by the tests of one request failing
// alone: every text-diff call forwarded to the workers throws inside the proxy's `proxyReq`
// listener — where issue 17's 10 KB body crashed the process — as any bug there would. Plain
// JavaScript: it is imported before tsx is.
import { ClientRequest } from "node:http";

const setHeader = ClientRequest.prototype.setHeader;
ClientRequest.prototype.setHeader = function (name, value) {
  if (name === "x-toolgate-deadline-ms" && this.path === "/tools/text-diff")
    throw new RangeError("injected fault: a listener of this request threw");
  return setHeader.call(this, name, value);
};
