import type { WorkerConfig } from "../config.js";
import { WorkerError } from "../errors.js";
import { providerRefusal, providerUnreachable } from "./provider-refusal.js";

/** Calls to any OpenAI-compatible endpoint: chat completions (text and vision), embeddings, images. */
export type ContentPart =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string } };
export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string | ContentPart[];
}

export interface ChatResult {
  text: string;
  model: string;
  finish_reason: string | null;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

interface CompletionResponse {
  model?: string;
  choices?: { message?: { content?: string | null }; finish_reason?: string | null }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number };
}

export function requireAi(config: WorkerConfig): NonNullable<WorkerConfig["ai"]> {
  if (!config.ai)
    throw new WorkerError(
      503,
      "tool_unavailable",
      "No AI provider is configured (AI_BASE_URL and AI_MODEL).",
    );
  return config.ai;
}

/** POSTs to the provider and returns its JSON; every failure becomes the tool's 502/503/504. */
async function post<T>(
  config: WorkerConfig,
  path: string,
  body: unknown,
  timeoutMs: number,
): Promise<T> {
  const ai = requireAi(config);
  let res: Response;
  try {
    res = await fetch(`${ai.baseUrl}${path}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(ai.apiKey ? { authorization: `Bearer ${ai.apiKey}` } : {}),
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    throw providerUnreachable("The AI provider", err);
  }
  if (!res.ok) throw await providerRefusal("The AI provider", res);
  return (await res.json().catch(() => ({}))) as T;
}

export async function chat(
  config: WorkerConfig,
  request: {
    messages: ChatMessage[];
    max_tokens?: number;
    temperature?: number;
    response_format?: unknown;
    model?: string;
  },
  timeoutMs: number,
): Promise<ChatResult> {
  const ai = requireAi(config);
  const body = await post<CompletionResponse>(
    config,
    "/chat/completions",
    { ...request, model: request.model ?? ai.model },
    timeoutMs,
  );
  const choice = body.choices?.[0];
  if (typeof choice?.message?.content !== "string")
    throw new WorkerError(
      502,
      "provider_error",
      "The AI provider's answer had no message content.",
    );
  const prompt = body.usage?.prompt_tokens ?? 0;
  const completion = body.usage?.completion_tokens ?? 0;
  return {
    text: choice.message.content,
    model: body.model ?? request.model ?? ai.model,
    finish_reason: choice.finish_reason ?? null,
    usage: {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: body.usage?.total_tokens ?? prompt + completion,
    },
  };
}

/** A chat answer that must be JSON (code fences tolerated). */
export function jsonAnswer(text: string): unknown {
  try {
    return JSON.parse(text.trim().replace(/^```(?:json)?\s*|\s*```$/g, ""));
  } catch {
    throw new WorkerError(502, "provider_error", "The AI provider's answer was not JSON.");
  }
}

interface EmbeddingResponse {
  model?: string;
  data?: { index?: number; embedding?: number[] }[];
  usage?: { prompt_tokens?: number; total_tokens?: number };
}

/** POST /embeddings. */
export async function embed(
  config: WorkerConfig,
  texts: string[],
  dimensions: number | undefined,
  timeoutMs: number,
) {
  const ai = requireAi(config);
  const body = await post<EmbeddingResponse>(
    config,
    "/embeddings",
    { model: ai.embeddingModel, input: texts, ...(dimensions ? { dimensions } : {}) },
    timeoutMs,
  );
  const data = [...(body.data ?? [])].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
  if (data.length !== texts.length || data.some((d) => !Array.isArray(d.embedding)))
    throw new WorkerError(
      502,
      "provider_error",
      "The AI provider's answer did not hold one embedding per text.",
    );
  const embeddings = data.map((d) => d.embedding!);
  return {
    embeddings,
    dimensions: embeddings[0]!.length,
    model: body.model ?? ai.embeddingModel,
    usage: {
      prompt_tokens: body.usage?.prompt_tokens ?? 0,
      total_tokens: body.usage?.total_tokens ?? body.usage?.prompt_tokens ?? 0,
    },
  };
}

interface ImageResponse {
  data?: { b64_json?: string; revised_prompt?: string }[];
}

/** POST /images/generations, asking for base64 so nothing is fetched from a provider URL afterwards. */
export async function generateImage(
  config: WorkerConfig,
  prompt: string,
  size: string,
  timeoutMs: number,
) {
  const ai = requireAi(config);
  const body = await post<ImageResponse>(
    config,
    "/images/generations",
    { model: ai.imageModel, prompt, size, n: 1, response_format: "b64_json" },
    timeoutMs,
  );
  const image = body.data?.[0];
  if (!image?.b64_json)
    throw new WorkerError(502, "provider_error", "The AI provider's answer held no image.");
  return { b64: image.b64_json, revisedPrompt: image.revised_prompt ?? null, model: ai.imageModel };
}
