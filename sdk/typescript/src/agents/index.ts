/**
 * `toolgate/agents`: the catalogue as OpenAI function-calling tools and Anthropic tool-use
 * tools, and dispatchers that run a model's tool calls through the client and give back the
 * messages/blocks to send to the model next. Plain JSON: no SDK of either vendor is needed.
 */
import type { Toolgate } from "../client.js";
import { ToolgateError } from "../errors.js";
import type { ToolDescription } from "../types.js";
import { catalogueFor, selectTools, type ToolSubset } from "./select.js";

export { selectTools, catalogueFor, type ToolSubset };

const describe = (tool: ToolDescription) =>
  `${tool.title}. ${tool.description} (${tool.price.credits} credit(s) per call)`.slice(0, 1024);

/** An OpenAI Chat Completions `tools` entry. */
export interface OpenAITool {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}
/** An Anthropic Messages `tools` entry. */
export interface AnthropicTool {
  name: string;
  description: string;
  input_schema: Record<string, unknown> & { type: "object" };
}

export const toOpenAITools = (tools: ToolDescription[]): OpenAITool[] =>
  tools.map((tool) => ({
    type: "function",
    function: { name: tool.name, description: describe(tool), parameters: tool.input_schema },
  }));

export const toAnthropicTools = (tools: ToolDescription[]): AnthropicTool[] =>
  tools.map((tool) => ({
    name: tool.name,
    description: describe(tool),
    input_schema: { ...tool.input_schema, type: "object" },
  }));

export const openAITools = async (client: Toolgate, subset?: ToolSubset) =>
  toOpenAITools(await catalogueFor(client, subset));
export const anthropicTools = async (client: Toolgate, subset?: ToolSubset) =>
  toAnthropicTools(await catalogueFor(client, subset));

/** What a failed call tells the model: the gateway's code and message, so it can correct itself. */
const failure = (error: unknown) =>
  error instanceof ToolgateError
    ? {
        error: {
          code: error.code,
          message: error.message,
          ...(error.param ? { param: error.param } : {}),
        },
      }
    : { error: { code: "tool_call_failed", message: String(error) } };

async function run(
  client: Toolgate,
  name: string,
  input: unknown,
): Promise<{ ok: boolean; result: unknown }> {
  try {
    return { ok: true, result: await client.tools.call(name, input as Record<string, unknown>) };
  } catch (error) {
    if (error instanceof ToolgateError && error.status === 0 && error.code !== "spend_cap_exceeded")
      throw error; // the network is down: not the model's business
    return { ok: false, result: failure(error) };
  }
}

/** An assistant message's `tool_calls` entry (OpenAI Chat Completions). */
export interface OpenAIToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** Runs each tool call; returns the `role: "tool"` messages to append, in order. */
export async function runOpenAIToolCalls(
  client: Toolgate,
  toolCalls: OpenAIToolCall[],
): Promise<{ role: "tool"; tool_call_id: string; content: string }[]> {
  return Promise.all(
    toolCalls.map(async (call) => {
      let input: unknown;
      try {
        input = JSON.parse(call.function.arguments || "{}");
      } catch {
        return {
          role: "tool" as const,
          tool_call_id: call.id,
          content: JSON.stringify({
            error: { code: "invalid_json", message: "The arguments are not JSON." },
          }),
        };
      }
      const { result } = await run(client, call.function.name, input);
      return { role: "tool" as const, tool_call_id: call.id, content: JSON.stringify(result) };
    }),
  );
}

/** A `tool_use` content block of an Anthropic assistant message. */
export interface AnthropicToolUse {
  type: "tool_use";
  id: string;
  name: string;
  input: unknown;
}

/** Runs every `tool_use` block of a message's content; returns the `tool_result` blocks for the next user message. */
export async function runAnthropicToolUses(
  client: Toolgate,
  content: { type: string }[],
): Promise<{ type: "tool_result"; tool_use_id: string; content: string; is_error?: true }[]> {
  const uses = content.filter((block): block is AnthropicToolUse => block.type === "tool_use");
  return Promise.all(
    uses.map(async (use) => {
      const { ok, result } = await run(client, use.name, use.input);
      return {
        type: "tool_result" as const,
        tool_use_id: use.id,
        content: JSON.stringify(result),
        ...(ok ? {} : { is_error: true as const }),
      };
    }),
  );
}
