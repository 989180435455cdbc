import Anthropic from "@anthropic-ai/sdk";
import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { Ajv2020 } from "ajv/dist/2020.js";
import { createServer, type Server } from "node:http";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  anthropicTools,
  openAITools,
  runAnthropicToolUses,
  runOpenAIToolCalls,
  type AnthropicToolUse,
} from "../../../sdk/typescript/src/agents/index.js";
import { aiTools } from "../../../sdk/typescript/src/ai/index.js";
import { Toolgate } from "../../../sdk/typescript/src/index.js";
import { balanceOf, fundedAccount, startGateway, type TestGateway } from "../../helpers/gateway.js";

/**
 * The agent adapters with each framework's own parts: the Vercel AI SDK's generateText driving
 * its test model, and the official OpenAI and Anthropic clients talking to local servers that
 * answer in those APIs' formats; every tool call runs through a real gateway.
 */
const HELLO_SHA256 = "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9";
let gw: TestGateway;
let client: Toolgate;
let key: string;
beforeAll(async () => {
  gw = await startGateway({ store: "memory" });
  ({ key } = await fundedAccount(gw.url, 100, "free"));
  client = new Toolgate({ apiKey: key, baseUrl: gw.url });
});
afterAll(() => gw?.stop());

/** A local server answering one POST with `answer`, remembering the request body it got. */
async function vendorServer(answer: unknown) {
  const requests: any[] = [];
  const server: Server = createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    requests.push({ path: req.url, body: JSON.parse(body) });
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(answer));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    requests,
    stop: () => new Promise((r) => server.close(r)),
  };
}

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

describe("toolgate/ai (Vercel AI SDK)", () => {
  it("runs the test model's tool call through the gateway and hands the result back to the model", async () => {
    const model = new MockLanguageModelV3({
      doGenerate: [
        {
          content: [
            {
              type: "tool-call",
              toolCallId: "call-1",
              toolName: "hash",
              input: JSON.stringify({ text: "hello world" }),
            },
          ],
          finishReason: { unified: "tool-calls", raw: "tool_calls" },
          usage,
          warnings: [],
        },
        {
          content: [{ type: "text", text: "The digest is in." }],
          finishReason: { unified: "stop", raw: "stop" },
          usage,
          warnings: [],
        },
      ],
    });
    const tools = await aiTools(client, { names: ["hash"] });
    expect(Object.keys(tools)).toEqual(["hash"]);
    const before = await balanceOf(gw.url, key);
    const result = await generateText({
      model,
      tools,
      prompt: "Hash hello world",
      stopWhen: stepCountIs(3),
    });
    expect(result.steps[0]!.toolResults[0]).toMatchObject({
      toolName: "hash",
      output: { algorithm: "sha256", digest: HELLO_SHA256 },
    });
    expect(result.text).toBe("The digest is in.");
    expect(await balanceOf(gw.url, key)).toBe(before - 1);
    const offered = model.doGenerateCalls[0]!.tools![0]! as { name: string; inputSchema: unknown };
    expect(offered.name).toBe("hash");
    expect(offered.inputSchema).toMatchObject({ type: "object", required: ["text"] });
    expect(offered.inputSchema).not.toHaveProperty("examples");
    expect((offered as { description?: string }).description).toMatch(
      /\(Costs 1 credit, \$0\.002 per call\.\)$/,
    );
    // A top-level oneOf, which the model APIs refuse there, is left to the gateway.
    const generate = await aiTools(client, { names: ["ai-generate"], includeUnavailable: true });
    expect(Object.keys(generate)).toEqual(["ai-generate"]);
    const schema = (await generate["ai-generate"]!.inputSchema) as { jsonSchema: object };
    expect(schema.jsonSchema).toMatchObject({ type: "object" });
    expect(schema.jsonSchema).not.toHaveProperty("oneOf");
    // The tool result the model saw on its second turn.
    expect(JSON.stringify(model.doGenerateCalls[1]!.prompt)).toContain(HELLO_SHA256);
  });
});

/** JSON Schema (draft 2020-12, what both APIs take) that compiles, for an object. */
const ajv = new Ajv2020({ strict: false, validateFormats: false });
const expectObjectSchema = (schema: Record<string, unknown>) => {
  expect(schema.type).toBe("object");
  expect(() => ajv.compile(schema)).not.toThrow();
};

describe("OpenAI function calling", () => {
  it("offers tools in the Chat Completions format and dispatches the model's tool calls", async () => {
    const tools = (await openAITools(
      client,
    )) satisfies OpenAI.Chat.Completions.ChatCompletionTool[];
    for (const tool of tools) {
      expect(tool.type).toBe("function");
      expect(tool.function.name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
      expect(tool.function.description.length).toBeLessThanOrEqual(1024);
      expectObjectSchema(tool.function.parameters);
    }
    const server = await vendorServer({
      id: "chatcmpl-1",
      object: "chat.completion",
      created: 1,
      model: "gpt-test",
      choices: [
        {
          index: 0,
          finish_reason: "tool_calls",
          logprobs: null,
          message: {
            role: "assistant",
            content: null,
            refusal: null,
            tool_calls: [
              {
                id: "call_a",
                type: "function",
                function: { name: "hash", arguments: JSON.stringify({ text: "hello world" }) },
              },
              {
                id: "call_b",
                type: "function",
                function: { name: "hash", arguments: JSON.stringify({ text: 42 }) },
              },
            ],
          },
        },
      ],
    });
    try {
      const openai = new OpenAI({ apiKey: "test", baseURL: server.url, maxRetries: 0 });
      const completion = await openai.chat.completions.create({
        model: "gpt-test",
        messages: [{ role: "user", content: "hash it" }],
        tools,
      });
      expect(server.requests[0]!.body.tools).toEqual(tools);
      const calls = completion.choices[0]!.message.tool_calls!.filter((c) => c.type === "function");
      const messages = await runOpenAIToolCalls(client, calls, tools);
      expect(messages[0]).toEqual({
        role: "tool",
        tool_call_id: "call_a",
        content: expect.stringContaining(HELLO_SHA256),
      });
      expect(JSON.parse(messages[1]!.content)).toMatchObject({
        error: { code: "validation_failed", param: "text" },
      });
      messages satisfies OpenAI.Chat.Completions.ChatCompletionToolMessageParam[];
    } finally {
      await server.stop();
    }
  });
});

describe("Anthropic tool use", () => {
  it("offers tools in the Messages format and dispatches the model's tool_use blocks", async () => {
    const tools = (await anthropicTools(client, {
      names: ["hash", "qr-code"],
    })) satisfies Anthropic.Messages.Tool[];
    expect(tools.map((t) => t.name).sort()).toEqual(["hash", "qr-code"]);
    for (const tool of tools) {
      expect(tool.name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
      expectObjectSchema(tool.input_schema);
    }
    const server = await vendorServer({
      id: "msg_1",
      type: "message",
      role: "assistant",
      model: "claude-test",
      stop_reason: "tool_use",
      stop_sequence: null,
      usage: { input_tokens: 10, output_tokens: 5 },
      content: [
        { type: "text", text: "Hashing." },
        { type: "tool_use", id: "toolu_1", name: "hash", input: { text: "hello world" } },
        { type: "tool_use", id: "toolu_2", name: "no-such-tool", input: {} },
      ],
    });
    try {
      const anthropic = new Anthropic({ apiKey: "test", baseURL: server.url, maxRetries: 0 });
      const message = await anthropic.messages.create({
        model: "claude-test",
        max_tokens: 100,
        messages: [{ role: "user", content: "hash it" }],
        tools,
      });
      expect(server.requests[0]).toMatchObject({ path: "/v1/messages", body: { tools } });
      const results = await runAnthropicToolUses(client, message.content, tools);
      expect(results[0]).toEqual({
        type: "tool_result",
        tool_use_id: "toolu_1",
        content: expect.stringContaining(HELLO_SHA256),
      });
      expect(results[1]).toMatchObject({
        type: "tool_result",
        tool_use_id: "toolu_2",
        is_error: true,
        content: expect.stringContaining("tool_not_offered"),
      });
      results satisfies Anthropic.Messages.ToolResultBlockParam[];
    } finally {
      await server.stop();
    }
  });
});

describe("tools that were not offered", () => {
  it("are refused with tool_not_offered, as the Python library does, without calling the gateway", async () => {
    const anthropic = await anthropicTools(client, { names: ["hash", "diff"] });
    const openai = await openAITools(client, { names: ["hash"] });
    const before = await balanceOf(gw.url, key);
    const results = await runAnthropicToolUses(
      client,
      [
        { type: "tool_use", id: "toolu_1", name: "js-sandbox", input: { code: "1+1" } },
        { type: "tool_use", id: "toolu_2", name: "diff", input: { old: "x", new: "y" } },
      ] as AnthropicToolUse[],
      anthropic,
    );
    const messages = await runOpenAIToolCalls(
      client,
      [{ id: "call_1", type: "function", function: { name: "js-sandbox", arguments: "{}" } }],
      openai,
    );
    const notOffered = {
      error: {
        code: "tool_not_offered",
        message: "The tool 'js-sandbox' is not among the tools offered.",
      },
    };
    expect(results[0]).toEqual({
      type: "tool_result",
      tool_use_id: "toolu_1",
      is_error: true,
      content: JSON.stringify(notOffered),
    });
    // An alias of an offered tool is that tool: it runs.
    expect(results[1]).toMatchObject({ tool_use_id: "toolu_2" });
    expect(results[1]!.is_error).toBeUndefined();
    expect(messages).toEqual([
      { role: "tool", tool_call_id: "call_1", content: JSON.stringify(notOffered) },
    ]);
    expect(await balanceOf(gw.url, key)).toBe(before - 1); // the diff only
  });
});
