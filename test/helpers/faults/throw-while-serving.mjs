// Loaded with `node --import` into a real gateway process by the tests of the paths its error
// lines log (request-path-in-error-logs.test.ts): a request sent with an `x-test-fault` header
// fails where the gateway's own code would, when its request id is stamped (the first thing done
// for every request, inside the request's scope) —
//   `uncaught`: an exception thrown from a timer, which nobody can catch (the request guard's line);
//   `route`:    an exception thrown there and then, which express hands to the error handler as a
//               500 internal_error (the "request failed" line).
// Plain JavaScript: it is imported before tsx is.
import { ServerResponse } from "node:http";

const setHeader = ServerResponse.prototype.setHeader;
ServerResponse.prototype.setHeader = function (name, value) {
  if (name === "X-Request-Id") {
    const fault = this.req?.headers["x-test-fault"];
    if (fault === "uncaught")
      setTimeout(() => {
        throw new Error("injected fault: thrown in a timer while serving a request");
      }, 0);
    if (fault === "route") throw new Error("injected fault: thrown while serving a request");
  }
  return setHeader.call(this, name, value);
};
