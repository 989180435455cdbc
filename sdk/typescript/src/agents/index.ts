/**
 * `toolgate/agents`: the catalogue as OpenAI function-calling tools and Anthropic tool-use
 * tools, and dispatchers that run a model's tool calls through the client and give back the
 * messages/blocks to send to the model next. Plain JSON: no SDK of either vendor is needed.
 * The dispatchers take the tools that were offered to the model and run only those (or their
 * aliases): any other call is answered `tool_not_offered` without reaching the gateway.
 *
 * What the model reads and what the program is told are the Python library's
 * (toolgate.adapters): the gateway's refusal of a call (bad input, out of credits…) is an error
 * result the model can correct itself from; a failure on the client's side (status 0: a spending
 * cap, no network, a payment that could not be made) and any other exception are thrown to the
 * caller. The calls run one after another, so a thrown error stops the batch: no call after it
 * runs, and none is paid.
 */
import type { Toolgate } from "../client.js";
import { ToolgateError } from "../errors.js";
import type { ToolDescription } from "../types.js";
import { catalogueFor, selectTools, type ToolSubset } from "./select.js";

export { selectTools, catalogueFor, type ToolSubset };

/** OpenAI's limit on a function's description. */
const MAX_DESCRIPTION = 1024;

/**
 * What a model reads about a tool: what it does and what one call costs (the Python library's
 * words); a long description is shortened so the price always fits.
 */
export function describeTool(tool: ToolDescription): string {
  const { credits, usd } = tool.price;
  const price = ` (Costs ${credits} credit${credits === 1 ? "" : "s"}, $${usd} per call.)`;
  const room = MAX_DESCRIPTION - price.length;
  const text =
    tool.description.length > room ? `${tool.description.slice(0, room - 1)}…` : tool.description;
  return `${text}${price}`;
}

/**
 * The tool's input schema as the model APIs take it: an object schema without `$schema`,
 * examples or top-level combinators, which the OpenAI and Anthropic APIs refuse there (the
 * gateway still enforces them and answers a clear 422).
 */
export function modelSchema(tool: ToolDescription): Record<string, unknown> & { type: "object" } {
  const kept = Object.entries(tool.input_schema as Record<string, unknown>).filter(
    ([keyword]) => !NOT_FOR_MODELS.has(keyword),
  );
  return { properties: {}, ...Object.fromEntries(kept), type: "object" };
}
const NOT_FOR_MODELS = new Set(["$schema", "examples", "oneOf", "anyOf", "allOf"]);

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
        function: {
          name: tool.name,
          description: describeTool(tool),
          parameters: modelSchema(tool),
        },
      },
      tool,
    ),
  );

export const toAnthropicTools = (tools: ToolDescription[]): AnthropicTool[] =>
  tools.map((tool) =>
    withAliases(
      {
        name: tool.name,
        description: describeTool(tool),
        input_schema: modelSchema(tool),
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

export const openAITools = async (client: Toolgate, subset?: ToolSubset) =>
  toOpenAITools(await catalogueFor(client, subset));
export const anthropicTools = async (client: Toolgate, subset?: ToolSubset) =>
  toAnthropicTools(await catalogueFor(client, subset));

/** A result the model reads instead of the tool's output: a code and message it can act on. */
const errorResult = (code: string, message: string, param?: string) =>
  JSON.stringify({ error: { code, message, ...(param ? { param } : {}) } });

/**
 * Runs one call the model made: the text it reads back, and whether that is an error. Refused
 * without calling the gateway: a tool that was not offered, arguments that are not a JSON object.
 * The gateway's refusal (an HTTP status) goes back to the model; anything else is thrown: a
 * failure on this side (status 0: a spending cap, the network, a payment) is the program's
 * business, not the model's — the caller must learn that its cap was reached.
 */
async function execute(
  client: Toolgate,
  names: Set<string>,
  name: string,
  input: unknown,
): Promise<{ content: string; isError: boolean }> {
  if (!names.has(name))
    return {
      content: errorResult(
        "tool_not_offered",
        `The tool '${name}' is not among the tools offered.`,
      ),
      isError: true,
    };
  if (input === null || typeof input !== "object" || Array.isArray(input))
    return {
      content: errorResult("validation_failed", "The arguments must be a JSON object."),
      isError: true,
    };
  try {
    const output = await client.tools.call(name, input as Record<string, unknown>);
    return { content: JSON.stringify(output), isError: false };
  } catch (error) {
    if (error instanceof ToolgateError && error.status !== 0)
      return { content: errorResult(error.code, error.message, error.param), isError: true };
    throw error;
  }
}

/** OpenAI's `arguments`: a JSON text, empty meaning no arguments. */
function parseArguments(text: string): { input: unknown } | { invalid: string } {
  if (!text.trim()) return { input: {} };
  try {
    return { input: JSON.parse(text) };
  } catch (error) {
    return { invalid: `The arguments are not JSON: ${(error as Error).message}` };
  }
}

/** Each of `items` through `run`, one after another: a thrown error stops those after it. */
async function inOrder<T, R>(items: T[], run: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (const item of items) results.push(await run(item));
  return results;
}

/** An assistant message's `tool_calls` entry (OpenAI Chat Completions). */
export interface OpenAIToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/**
 * Runs each tool call among the `offered` tools (the `tools` the model was given), one after
 * another; returns the `role: "tool"` messages to append, in order. Throws a failure on the
 * client's side (a `ToolgateError` with status 0, e.g. `spend_cap_exceeded`): the calls after it
 * are not run.
 */
export async function runOpenAIToolCalls(
  client: Toolgate,
  toolCalls: OpenAIToolCall[],
  offered: readonly OpenAITool[],
): Promise<{ role: "tool"; tool_call_id: string; content: string }[]> {
  const names = offeredNames(offered);
  return inOrder(toolCalls, async ({ id, function: { name, arguments: text } }) => {
    const parsed = parseArguments(text ?? "");
    // A tool that was not offered is named as such, whatever its arguments.
    const { content } =
      names.has(name) && "invalid" in parsed
        ? { content: errorResult("invalid_json", parsed.invalid) }
        : await execute(client, names, name, "input" in parsed ? parsed.input : undefined);
    return { role: "tool" as const, tool_call_id: id, content };
  });
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
 * model was given), one after another; returns the `tool_result` blocks for the next user
 * message. Throws a failure on the client's side as `runOpenAIToolCalls` does.
 */
export async function runAnthropicToolUses(
  client: Toolgate,
  content: { type: string }[],
  offered: readonly AnthropicTool[],
): Promise<{ type: "tool_result"; tool_use_id: string; content: string; is_error?: true }[]> {
  const names = offeredNames(offered);
  const uses = content.filter((block): block is AnthropicToolUse => block.type === "tool_use");
  return inOrder(uses, async (use) => {
    const { content, isError } = await execute(client, names, use.name, use.input ?? {});
    return {
      type: "tool_result" as const,
      tool_use_id: use.id,
      content,
      ...(isError ? { is_error: true as const } : {}),
    };
  });
}
