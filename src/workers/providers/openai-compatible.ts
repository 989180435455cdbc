import type { WorkerConfig } from "../config.js";
import { WorkerError } from "../errors.js";

/** A chat-completions call to any OpenAI-compatible endpoint. */
export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
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
  if (!config.ai) throw new WorkerError(503, "tool_unavailable", "No AI provider is configured (AI_BASE_URL and AI_MODEL).");
  return config.ai;
}

export async function chat(
  config: WorkerConfig,
  request: { messages: ChatMessage[]; max_tokens?: number; temperature?: number; response_format?: unknown },
  timeoutMs: number,
): Promise<ChatResult> {
  const ai = requireAi(config);
  let res: Response;
  try {
    res = await fetch(`${ai.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(ai.apiKey ? { authorization: `Bearer ${ai.apiKey}` } : {}) },
      body: JSON.stringify({ model: ai.model, ...request }),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    if ((err as Error).name === "TimeoutError") throw new WorkerError(504, "provider_timeout", "The AI provider did not answer in time.");
    throw new WorkerError(502, "provider_error", "The AI provider could not be reached.");
  }
  if (!res.ok) {
    const detail = (await res.text().catch(() => "")).slice(0, 200);
    throw new WorkerError(502, "provider_error", `The AI provider answered ${res.status}${detail ? `: ${detail}` : ""}.`);
  }
  const body = (await res.json().catch(() => ({}))) as CompletionResponse;
  const choice = body.choices?.[0];
  if (typeof choice?.message?.content !== "string") throw new WorkerError(502, "provider_error", "The AI provider's answer had no message content.");
  const prompt = body.usage?.prompt_tokens ?? 0;
  const completion = body.usage?.completion_tokens ?? 0;
  return {
    text: choice.message.content,
    model: body.model ?? ai.model,
    finish_reason: choice.finish_reason ?? null,
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: body.usage?.total_tokens ?? prompt + completion },
  };
}
