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

async function listen(
  handler: (
    req: IncomingMessage,
    body: string,
  ) => Promise<{ status?: number; json: unknown; headers?: Record<string, string> }>,
) {
  const requests: RecordedRequest[] = [];
  const server: Server = createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    requests.push({
      method: req.method!,
      path: req.url!,
      headers: req.headers,
      body: body ? JSON.parse(body) : null,
    });
    const reply = await handler(req, body);
    res.writeHead(reply.status ?? 200, { "content-type": "application/json", ...reply.headers });
    res.end(JSON.stringify(reply.json));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface ChatRequest {
  model: string;
  /** Text, or (vision) parts of text and image_url. */
  messages: {
    role: string;
    content: string | { type: string; text?: string; image_url?: { url: string } }[];
  }[];
  max_tokens?: number;
  temperature?: number;
  response_format?: unknown;
}

const textOf = (content: ChatRequest["messages"][number]["content"]) =>
  typeof content === "string" ? content : content.map((p) => p.text ?? "").join(" ");

/** A 2x2 PNG, what the fake image model "draws". */
const TINY_PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP8z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg==";

/**
 * POST /v1/chat/completions, /v1/embeddings and /v1/images/generations, as OpenAI, vLLM, Ollama
 * and llama.cpp serve them.
 */
export async function startFakeLlm() {
  const state = {
    reply: (req: ChatRequest): string => `echo: ${textOf(req.messages.at(-1)?.content ?? "")}`,
    delayMs: 0,
    status: 200,
    /** The error body a failing status answers with (the default, a generic overload). */
    errorJson: { error: { message: "upstream overloaded", type: "server_error" } } as unknown,
    /** Headers a failing status answers with (a 429's Retry-After). */
    errorHeaders: {} as Record<string, string>,
    /** Chat requests received so far: a test can wait until a call has reached the provider. */
    received: 0,
  };
  const server = await listen(async (req, raw) => {
    if (req.method === "POST" && req.url === "/v1/embeddings") {
      const body = JSON.parse(raw) as { model: string; input: string[]; dimensions?: number };
      // A deterministic "embedding": letter frequencies, so similar texts get similar vectors.
      const vector = (text: string) =>
        Array.from(
          { length: body.dimensions ?? 26 },
          (_, i) =>
            [...text.toLowerCase()].filter((c) => c.charCodeAt(0) - 97 === i % 26).length /
            Math.max(1, text.length),
        );
      const tokens = body.input.reduce((n, t) => n + t.split(/\s+/).length, 0);
      return {
        json: {
          object: "list",
          model: body.model,
          data: body.input.map((t, index) => ({
            object: "embedding",
            index,
            embedding: vector(t),
          })),
          usage: { prompt_tokens: tokens, total_tokens: tokens },
        },
      };
    }
    if (req.method === "POST" && req.url === "/v1/images/generations") {
      const body = JSON.parse(raw) as { prompt: string; response_format?: string };
      if (body.response_format !== "b64_json")
        return { status: 400, json: { error: { message: "this fake serves b64_json only" } } };
      return {
        json: {
          created: Math.floor(Date.now() / 1000),
          data: [{ b64_json: TINY_PNG, revised_prompt: `${body.prompt} (revised)` }],
        },
      };
    }
    if (req.method !== "POST" || req.url !== "/v1/chat/completions")
      return { status: 404, json: { error: { message: "not found" } } };
    const body = JSON.parse(raw) as ChatRequest;
    state.received++;
    if (state.delayMs) await new Promise((r) => setTimeout(r, state.delayMs));
    if (state.status !== 200)
      return { status: state.status, json: state.errorJson, headers: state.errorHeaders };
    const content = state.reply(body);
    const promptTokens = body.messages.reduce(
      (n, m) => n + textOf(m.content).split(/\s+/).length,
      0,
    );
    const completionTokens = content.split(/\s+/).length;
    return {
      json: {
        id: "chatcmpl-test",
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
        usage: {
          prompt_tokens: promptTokens,
          completion_tokens: completionTokens,
          total_tokens: promptTokens + completionTokens,
        },
      },
    };
  });
  return Object.assign(server, {
    state,
    /** Resolves once `count` chat requests have arrived in all. */
    async reached(count: number, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (state.received < count && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 10));
      if (state.received < count)
        throw new Error(`the provider received ${state.received} of ${count} requests`);
    },
  });
}

/** SearXNG: GET /search?q=…&format=json */
export async function startFakeSearxng(results: { title: string; url: string; content: string }[]) {
  return listen(async (req) => {
    const url = new URL(req.url!, "http://x");
    if (url.pathname !== "/search" || url.searchParams.get("format") !== "json")
      return { status: 400, json: {} };
    return {
      json: {
        query: url.searchParams.get("q"),
        number_of_results: results.length,
        results: results.map((r) => ({ ...r, engine: "test", score: 1 })),
      },
    };
  });
}

/** Brave Search: GET /res/v1/web/search?q=…&count=N with X-Subscription-Token */
export async function startFakeBrave(
  token: string,
  results: { title: string; url: string; description: string }[],
) {
  return listen(async (req) => {
    const url = new URL(req.url!, "http://x");
    if (req.headers["x-subscription-token"] !== token)
      return {
        status: 401,
        json: { type: "ErrorResponse", error: { code: "SUBSCRIPTION_TOKEN_INVALID" } },
      };
    if (url.pathname !== "/res/v1/web/search") return { status: 404, json: {} };
    const count = Number(url.searchParams.get("count") ?? 20);
    return {
      json: {
        type: "search",
        query: { original: url.searchParams.get("q") },
        web: { type: "search", results: results.slice(0, count) },
      },
    };
  });
}

/** Answers each AI tool's worked example the way a real model would be asked to. */
export function scriptedModel(req: ChatRequest): string {
  const system = typeof req.messages[0]?.content === "string" ? req.messages[0].content : "";
  if (system.startsWith("Classify"))
    return '{"label":"billing","reason":"The customer was charged twice."}';
  if (system.startsWith("You review code")) {
    return '{"summary":"An off-by-one error.","findings":[{"severity":"major","line":3,"message":"i <= xs.length reads past the end","suggestion":"Use i < xs.length."}]}';
  }
  if (system.includes("invoice_number"))
    return '{"invoice_number":"2291","vendor":"Acme Corp","total":1250,"currency":"EUR"}';
  if (req.response_format) return '{"title":"Example Domain"}';
  return "A model's answer.";
}
