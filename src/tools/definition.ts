import type { z } from "zod";

/**
 * A tool, as data. The same definition feeds request validation, `GET /v1/tools`, the OpenAPI
 * document and (later) the MCP tool list; the worker validates with the same schemas.
 */
export type WorkerPool = "general" | "provider";

export interface ToolDefinition<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  name: string;
  aliases: readonly string[];
  title: string;
  description: string;
  /** Credits per successful call. */
  cost: number;
  pool: WorkerPool;
  /** How long the gateway waits for the worker before answering 504 and refunding. */
  timeoutMs: number;
  /** The input schema carries a worked example (`examples`) that the tool answers with 200. */
  input: I;
  output: O;
}

export function defineTool<I extends z.ZodType, O extends z.ZodType>(def: ToolDefinition<I, O>): ToolDefinition<I, O> {
  return def;
}
