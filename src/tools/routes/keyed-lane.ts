import type { IncomingMessage, ServerResponse } from "node:http";
import type { Request, RequestHandler, Response } from "express";
import type { Services } from "../../services.js";
import type { ErrorAnswer } from "../../http/errors.js";
import type { HttpRequest, HttpResponse } from "../../http/exchange.js";
import { beginRequest } from "../../http/request-context.js";
import { sendRawReply } from "../../http/route.js";
import { isDeprecatedPath } from "../../http/versioning.js";
import { serveToolCall } from "./call.js";
import { RESERVED_TOOL_NAMES } from "../custom/spec.js";

/**
 * The keyed tool call, the gateway's hot path, served on Node's own request and response objects
 * instead of going through express.
 *
 * Why: express gives every request and response its own prototypes (`Object.setPrototypeOf` in its
 * init), and after that switch V8 runs Node's HTTP code on those objects far slower. On this
 * project's 2-core machine a minimal proxy (one EVALSHA, one forwarded call) spent 95–135 µs of CPU
 * per call on Node's objects and 145–235 µs once the prototypes were switched, with nothing else
 * changed (`npm run bench:http-floor`). Everything else is the same code the express routes run:
 * the request guard's scope, the request context (id, common headers, CORS, log line, metrics),
 * the refused credentials' limit, express's own JSON body parser with the size and depth limits,
 * the tool call (`serveToolCall`), and the error answers in the one shape.
 *
 * The lane takes only the plain case: POST /v1/tools/{name} with an x-api-key, a body sent as
 * exactly `application/json`, no Content-Encoding, no query string, a lower-case name without
 * escapes that is not reserved, under an API version that is not deprecated. Express answers
 * everything else as before, so the two can differ only in speed.
 */
export interface KeyedLane {
  takes(req: IncomingMessage): boolean;
  serve(req: IncomingMessage, res: ServerResponse): void;
}

const PLAIN_TOOL_PATH = /^\/v1\/tools\/([a-z0-9][a-z0-9-]*)$/;
/** A reserved name (`categories`) is a path of the tool door's own: express answers it (405). */
const isToolName = (name: string | undefined) =>
  name !== undefined && !RESERVED_TOOL_NAMES.has(name);
const ROUTE = "/v1/tools/:name";

/** What the lane shares with express's routes (app.ts): the JSON body parser and the error answer. */
export interface LaneParts {
  json: RequestHandler;
  answerError: ErrorAnswer;
}

export function keyedLane(services: Services, { json, answerError }: LaneParts): KeyedLane {
  // A deprecated version's answers carry its headers (http/versioning.ts): those calls go to express.
  const enabled = !isDeprecatedPath(services.config.apiVersions, "/v1/tools/hash");
  // body-parser reads only Node's request API (headers, pipe, resume), so it runs on Node's objects.
  const parseBody = (req: HttpRequest, res: HttpResponse) =>
    new Promise<void>((resolve, reject) =>
      json(req as Request, res as unknown as Response, (err?: unknown) =>
        err ? reject(err) : resolve(),
      ),
    );

  async function serveCall(req: HttpRequest, res: HttpResponse, name: string): Promise<void> {
    try {
      services.refusedCredentials.check(req);
      await parseBody(req, res);
      sendRawReply(
        res,
        await serveToolCall(services, req, res, name, String(res.locals.requestId)),
      );
    } catch (err) {
      answerError(err, req, res);
    }
  }

  return {
    takes(req) {
      return (
        enabled &&
        req.method === "POST" &&
        req.headers["content-type"] === "application/json" &&
        req.headers["content-encoding"] === undefined &&
        Boolean(req.headers["x-api-key"]) &&
        isToolName(PLAIN_TOOL_PATH.exec(req.url ?? "")?.[1])
      );
    },
    serve(incoming, response) {
      // What express's init would add, and the request's own scope (http/request-guard.ts).
      const req = incoming as HttpRequest;
      const res = response as HttpResponse;
      req.originalUrl = req.url!;
      res.locals = {};
      res.locals.route = ROUTE;
      const name = PLAIN_TOOL_PATH.exec(req.url!)![1]!;
      services.requestGuard.run(res, () => {
        beginRequest(req, res, services.requestLog, services.metrics, services.redactSecrets);
        void serveCall(req, res, name);
      });
    },
  };
}
