import { createServer, type IncomingMessage, type Server } from "node:http";

/**
 * Local stand-ins for third-party services we cannot run here, speaking their real wire APIs:
 * an OpenAI-compatible chat-completions endpoint, SearXNG's JSON search and Brave's web search.
 * What they answer is scripted by the test; how they are spoken to is the providers' own format.
 */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  body: any;
}

async function listen(handler: (req: IncomingMessage, body: string) => Promise<{ status?: number; json: unknown }>) {
  const requests: RecordedRequest[] = [];
  const server: Server = createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    requests.push({ method: req.method!, path: req.url!, headers: req.headers, body: body ? JSON.parse(body) : null });
    const reply = await handler(req, body);
    res.writeHead(reply.status ?? 200, { "content-type": "application/json" });
    res.end(JSON.stringify(reply.json));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    stop: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

export interface ChatRequest {
  model: string;
  messages: { role: string; content: string }[];
  max_tokens?: number;
  temperature?: number;
  response_format?: unknown;
}

/** POST /v1/chat/completions, as OpenAI, vLLM, Ollama and llama.cpp serve it. */
export async function startFakeLlm() {
  const state = {
    reply: (req: ChatRequest): string => `echo: ${req.messages.at(-1)?.content ?? ""}`,
    delayMs: 0,
    status: 200,
    /** Chat requests received so far: a test can wait until a call has reached the provider. */
    received: 0,
  };
  const server = await listen(async (req, raw) => {
    if (req.method !== "POST" || req.url !== "/v1/chat/completions") return { status: 404, json: { error: { message: "not found" } } };
    const body = JSON.parse(raw) as ChatRequest;
    state.received++;
    if (state.delayMs) await new Promise((r) => setTimeout(r, state.delayMs));
    if (state.status !== 200) return { status: state.status, json: { error: { message: "upstream overloaded", type: "server_error" } } };
    const content = state.reply(body);
    const promptTokens = body.messages.reduce((n, m) => n + m.content.split(/\s+/).length, 0);
    const completionTokens = content.split(/\s+/).length;
    return {
      json: {
        id: "chatcmpl-test",
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
        usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
      },
    };
  });
  return Object.assign(server, {
    state,
    /** Resolves once `count` chat requests have arrived in all. */
    async reached(count: number, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (state.received < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      if (state.received < count) throw new Error(`the provider received ${state.received} of ${count} requests`);
    },
  });
}

/** SearXNG: GET /search?q=…&format=json */
export async function startFakeSearxng(results: { title: string; url: string; content: string }[]) {
  return listen(async (req) => {
    const url = new URL(req.url!, "http://x");
    if (url.pathname !== "/search" || url.searchParams.get("format") !== "json") return { status: 400, json: {} };
    return { json: { query: url.searchParams.get("q"), number_of_results: results.length, results: results.map((r) => ({ ...r, engine: "test", score: 1 })) } };
  });
}

/** Brave Search: GET /res/v1/web/search?q=…&count=N with X-Subscription-Token */
export async function startFakeBrave(token: string, results: { title: string; url: string; description: string }[]) {
  return listen(async (req) => {
    const url = new URL(req.url!, "http://x");
    if (req.headers["x-subscription-token"] !== token) return { status: 401, json: { type: "ErrorResponse", error: { code: "SUBSCRIPTION_TOKEN_INVALID" } } };
    if (url.pathname !== "/res/v1/web/search") return { status: 404, json: {} };
    const count = Number(url.searchParams.get("count") ?? 20);
    return { json: { type: "search", query: { original: url.searchParams.get("q") }, web: { type: "search", results: results.slice(0, count) } } };
  });
}
