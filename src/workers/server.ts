import express from "express";
import type { Logger } from "pino";
import type { WorkerConfig } from "./config.js";
import { invalidInput, WorkerError } from "./errors.js";
import type { HeavyPool } from "./heavy/pool.js";
import { SerializedOutput } from "./heavy/serialized-output.js";
import type { ToolImplementation } from "./tools/implementation.js";
import { IMPLEMENTATIONS } from "./tools/index.js";

/**
 * The tool workers' HTTP API, spoken only to the gateway:
 *   POST /tools/{name}  the tool's input → 200 its output, or {error:{code,message,param?}}
 *   GET  /tools         which tools can run here (providers configured), and how many heavy
 *                       calls run at once (`heavy_threads`: more wait in the workers' own queue)
 *   GET  /healthz
 * Input is validated again here and output is checked against the tool's schema (a heavy tool's
 * both in its thread, see heavy/serialized-output.ts), so a worker never acts on input the
 * catalogue does not accept, nor answers something it does not promise.
 */
export function createWorkerApp(
  config: WorkerConfig,
  log: Logger,
  heavy: HeavyPool,
): express.Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  // A heavy tool's body is passed on as bytes, parsed and checked in its thread: 100,000 CSV rows
  // took the shared event loop ~0.1 s to parse, then as long again to copy to the thread.
  const json = express.json({ limit: BODY_LIMIT });
  const bytes = express.raw({ type: "application/json", limit: BODY_LIMIT });
  const body: express.RequestHandler<{ name: string }> = (req, res, next) =>
    (IMPLEMENTATIONS.get(req.params.name)?.readsBody ? bytes : json)(req, res, next);

  app.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });

  app.get("/tools", (_req, res) => {
    res.json({
      tools: [...IMPLEMENTATIONS.values()].map((impl) => {
        const reason = impl.unavailable?.(config) ?? null;
        return { name: impl.definition.name, available: reason === null, reason };
      }),
      heavy_threads: config.heavy.threads,
    });
  });

  app.post("/tools/:name", body, async (req, res) => {
    const impl = IMPLEMENTATIONS.get(req.params.name);
    if (!impl)
      return res
        .status(404)
        .json({ error: { code: "tool_not_found", message: `No tool ${req.params.name}.` } });
    const reason = impl.unavailable?.(config);
    if (reason)
      return res.status(503).json({
        error: { code: "tool_unavailable", message: `The tool is unavailable: ${reason}.` },
      });
    const timeoutMs = Number(req.get("x-toolgate-deadline-ms")) || impl.definition.timeoutMs;
    try {
      const input: unknown = impl.readsBody ? req.body : checkedInput(impl, req.body);
      const output: unknown = await impl.run(input as never, { config, timeoutMs, heavy });
      if (output instanceof SerializedOutput) res.type("application/json").send(output.json);
      else res.json(impl.definition.output.parse(output));
    } catch (err) {
      if (err instanceof WorkerError) {
        if (err.more.logged)
          log.warn(
            { ...err.more.logged, tool: impl.definition.name, request_id: req.get("x-request-id") },
            "provider refused the call",
          );
        return res.status(err.status).json({
          error: {
            code: err.code,
            message: err.message,
            ...(err.param !== undefined ? { param: err.param } : {}),
            ...(err.more.retryAfter !== undefined ? { retry_after: err.more.retryAfter } : {}),
            ...(err.more.providerUnhealthy ? { provider_unhealthy: true } : {}),
          },
        });
      }
      log.error(
        { err, tool: impl.definition.name, request_id: req.get("x-request-id") },
        "tool failed",
      );
      res.status(500).json({ error: { code: "tool_failed", message: "The tool failed." } });
    }
  });
  return app;
}

/** The largest body a tool call may have (the gateway's own limit is lower). */
const BODY_LIMIT = "16mb";

/** The input as the tool's schema reads it (defaults filled in), or its 422. */
function checkedInput(impl: ToolImplementation, body: unknown): unknown {
  const parsed = impl.definition.input.safeParse(body);
  if (!parsed.success) throw invalidInput(parsed.error);
  return parsed.data;
}
