import { z } from "zod";
import { integer } from "../lib/decimal-text.js";
import {
  ConfigError,
  isHttpUrl,
  LOG_LEVELS,
  schemaProblems,
  withoutBlankValues,
} from "../lib/settings.js";

/**
 * A provider's http(s) URL. z.url() took any scheme (ftp://x, notaurl:x), which then failed every
 * call; the message names the form, never the value (it can hold a password).
 */
const httpUrl = (name: string) =>
  z.string().refine(isHttpUrl, `${name} must be an http:// or https:// URL`);

/** The worker's own configuration: which providers its tools may use. */
const schema = z.object({
  /** As the gateway's: production refuses the development-only settings below. */
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  PORT: integer(0, 65535).default(0),
  HOST: z.string().default("127.0.0.1"),
  LOG_LEVEL: z.enum(LOG_LEVELS).default("info"),
  /** Any OpenAI-compatible chat-completions endpoint: OpenAI, vLLM, Ollama, llama.cpp server. */
  AI_BASE_URL: httpUrl("AI_BASE_URL").optional(),
  AI_API_KEY: z.string().optional(),
  AI_MODEL: z.string().optional(),
  SEARXNG_URL: httpUrl("SEARXNG_URL").optional(),
  BRAVE_SEARCH_API_KEY: z.string().optional(),
  BRAVE_SEARCH_URL: httpUrl("BRAVE_SEARCH_URL").default("https://api.search.brave.com"),
  SEARCH_PROVIDER: z.enum(["searxng", "brave"]).optional(),
  /** Models for the embedding, image and vision tools; AI_MODEL when unset (one multimodal model). */
  AI_EMBEDDING_MODEL: z.string().optional(),
  AI_IMAGE_MODEL: z.string().optional(),
  AI_VISION_MODEL: z.string().optional(),
  /** Threads (and so concurrent calls) of the heavy pool, and each thread's JS heap limit. */
  HEAVY_THREADS: integer(1, 64).default(2),
  HEAVY_MEMORY_MB: integer(32, 8192).default(512),
  /** Development only: let the web tools read loopback and private addresses (never metadata ranges). */
  WEB_ALLOW_PRIVATE_TARGETS: z.enum(["0", "1"]).default("0"),
  /** The most the web tools read of one response. */
  WEB_MAX_BYTES: integer(1024).default(5_000_000),
  /** The process ends itself when its event loop has not run this long (0: never); lib/loop-watchdog.ts. */
  EVENT_LOOP_STALL_MS: integer(0).default(30_000),
});

export interface WorkerConfig {
  port: number;
  host: string;
  logLevel: (typeof LOG_LEVELS)[number];
  ai: {
    baseUrl: string;
    apiKey: string | undefined;
    model: string;
    embeddingModel: string;
    imageModel: string;
    visionModel: string;
  } | null;
  search:
    | { provider: "searxng"; url: string }
    | { provider: "brave"; url: string; apiKey: string }
    | null;
  heavy: { threads: number; memoryMb: number };
  web: { allowPrivate: boolean; maxBytes: number };
  eventLoopStallMs: number;
}

export function loadWorkerConfig(env: NodeJS.ProcessEnv = process.env): WorkerConfig {
  // As the gateway reads its own (config.ts): an empty setting is unset, a number decimal digits,
  // and a refusal is a ConfigError naming each setting (main.ts exits 78 with it), not a stack.
  const parsed = schema.safeParse(withoutBlankValues(env));
  if (!parsed.success) throw new ConfigError(schemaProblems(parsed.error));
  const e = parsed.data;
  // Any caller could then read the services beside the workers (their metrics, a cloud's admin
  // ports): refused as the gateway refuses its own *_ALLOW_PRIVATE_TARGETS (config.ts).
  if (e.NODE_ENV === "production" && e.WEB_ALLOW_PRIVATE_TARGETS === "1")
    throw new ConfigError(["WEB_ALLOW_PRIVATE_TARGETS=1 is refused when NODE_ENV=production"]);
  const searxng = e.SEARXNG_URL ? ({ provider: "searxng", url: e.SEARXNG_URL } as const) : null;
  const brave = e.BRAVE_SEARCH_API_KEY
    ? ({ provider: "brave", url: e.BRAVE_SEARCH_URL, apiKey: e.BRAVE_SEARCH_API_KEY } as const)
    : null;
  const search =
    e.SEARCH_PROVIDER === "brave"
      ? brave
      : e.SEARCH_PROVIDER === "searxng"
        ? searxng
        : (searxng ?? brave);
  return {
    port: e.PORT,
    host: e.HOST,
    logLevel: e.LOG_LEVEL,
    ai:
      e.AI_BASE_URL && e.AI_MODEL
        ? {
            baseUrl: e.AI_BASE_URL.replace(/\/$/, ""),
            apiKey: e.AI_API_KEY,
            model: e.AI_MODEL,
            embeddingModel: e.AI_EMBEDDING_MODEL ?? e.AI_MODEL,
            imageModel: e.AI_IMAGE_MODEL ?? e.AI_MODEL,
            visionModel: e.AI_VISION_MODEL ?? e.AI_MODEL,
          }
        : null,
    search,
    heavy: { threads: e.HEAVY_THREADS, memoryMb: e.HEAVY_MEMORY_MB },
    web: { allowPrivate: e.WEB_ALLOW_PRIVATE_TARGETS === "1", maxBytes: e.WEB_MAX_BYTES },
    eventLoopStallMs: e.EVENT_LOOP_STALL_MS,
  };
}
