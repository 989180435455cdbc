/**
 * `toolgate/ai`: the catalogue as Vercel AI SDK tools — each a `tool()` with the gateway's own
 * input JSON Schema, whose `execute` calls the tool through the client. Pass the result as
 * `tools` to `generateText`/`streamText`.
 */
import { jsonSchema, tool, type Tool } from "ai";
import type { Toolgate } from "../client.js";
import { describeTool, modelSchema } from "../agents/index.js";
import { catalogueFor, type ToolSubset } from "../agents/select.js";
import type { ToolDescription } from "../types.js";

export type { ToolSubset };

export function toAiTools(client: Toolgate, catalogue: ToolDescription[]): Record<string, Tool> {
  return Object.fromEntries(
    catalogue.map((entry) => [
      entry.name,
      tool({
        // What the other adapters hand a model (and Python's LangChain tools): the price in the
        // description, and a schema the model APIs take (no top-level combinators).
        description: describeTool(entry),
        inputSchema: jsonSchema<Record<string, unknown>>(
          modelSchema(entry) as Parameters<typeof jsonSchema>[0],
        ),
        execute: async (input, { abortSignal }) =>
          client.tools.call(entry.name, input, { signal: abortSignal }),
      }),
    ]),
  );
}

/** The (chosen) tools of the catalogue as AI SDK tools, keyed by tool name. */
export async function aiTools(
  client: Toolgate,
  subset?: ToolSubset,
): Promise<Record<string, Tool>> {
  return toAiTools(client, await catalogueFor(client, subset));
}
