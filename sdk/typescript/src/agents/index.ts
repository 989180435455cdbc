/**
 * `toolgate/agents`: the catalogue as OpenAI function-calling tools and Anthropic tool-use
 * tools, and dispatchers that run a model's tool calls through the client and give back the
 * messages/blocks to send to the model next. Plain JSON: no SDK of either vendor is needed.
 * The dispatchers take the tools that were offered to the model and run only those (or their
 * aliases): any other call is answered `tool_not_offered` without reaching the gateway.
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

/** Each offered tool's aliases, kept beside the plain JSON handed to the model. */
const aliasesOf = new WeakMap<object, string[]>();
const withAliases = <T extends object>(offered: T, tool: ToolDescription): T => {
  aliasesOf.set(offered, tool.aliases);
  return offered;
};

export const toOpenAITools = (tools: ToolDescription[]): OpenAITool[] =>
  tools.map((tool) =>
    withAliases(
      {
        type: "function" as const,
        function: { name: tool.name, description: describe(tool), parameters: tool.input_schema },
      },
      tool,
    ),
  );

export const toAnthropicTools = (tools: ToolDescription[]): AnthropicTool[] =>
  tools.map((tool) =>
    withAliases(
      {
        name: tool.name,
        description: describe(tool),
        input_schema: { ...tool.input_schema, type: "object" as const },
      },
      tool,
    ),
  );

/** The names a model may call: those of the tools offered to it, and their aliases. */
function offeredNames(offered: readonly (OpenAITool | AnthropicTool)[]): Set<string> {
  if (!Array.isArray(offered))
    throw new TypeError("Pass the tools offered to the model: only those are run.");
  return new Set(
    offered.flatMap((tool) => [
      "function" in tool ? tool.function.name : tool.name,
      ...(aliasesOf.get(tool) ?? []),
    ]),
  );
}

/** What the model reads when it calls a tool it was not offered (the Python library's words). */
const notOffered = (name: string) => ({
  error: {
    code: "tool_not_offered",
    message: `The tool '${name}' is not among the tools offered.`,
  },
});

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

/**
 * Runs each tool call among the `offered` tools (the `tools` the model was given); returns the
 * `role: "tool"` messages to append, in order.
 */
export async function runOpenAIToolCalls(
  client: Toolgate,
  toolCalls: OpenAIToolCall[],
  offered: readonly OpenAITool[],
): Promise<{ role: "tool"; tool_call_id: string; content: string }[]> {
  const names = offeredNames(offered);
  return Promise.all(
    toolCalls.map(async (call) => {
      if (!names.has(call.function.name))
        return {
          role: "tool" as const,
          tool_call_id: call.id,
          content: JSON.stringify(notOffered(call.function.name)),
        };
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

/**
 * Runs every `tool_use` block of a message's content among the `offered` tools (the `tools` the
 * model was given); returns the `tool_result` blocks for the next user message.
 */
export async function runAnthropicToolUses(
  client: Toolgate,
  content: { type: string }[],
  offered: readonly AnthropicTool[],
): Promise<{ type: "tool_result"; tool_use_id: string; content: string; is_error?: true }[]> {
  const names = offeredNames(offered);
  const uses = content.filter((block): block is AnthropicToolUse => block.type === "tool_use");
  return Promise.all(
    uses.map(async (use) => {
      const { ok, result } = names.has(use.name)
        ? await run(client, use.name, use.input)
        : { ok: false, result: notOffered(use.name) };
      return {
        type: "tool_result" as const,
        tool_use_id: use.id,
        content: JSON.stringify(result),
        ...(ok ? {} : { is_error: true as const }),
      };
    }),
  );
}
