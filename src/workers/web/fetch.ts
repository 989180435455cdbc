import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP } from "node:net";
import { BlockedTargetError, blockedReason, guardedLookup } from "../../webhooks/ssrf.js";
import type { WorkerConfig } from "../config.js";
import { WorkerError } from "../errors.js";

/**
 * How the web tools read the public web: http(s) only, every address checked by the webhook SSRF
 * guard (at connect time, so DNS rebinding is caught; IP literals before connecting), at most
 * five redirects (each one checked again), a byte limit and one deadline for the whole read.
 */
export interface Fetched {
  url: string;
  status: number;
  contentType: string;
  body: Buffer;
  truncated: boolean;
}

const MAX_REDIRECTS = 5;
const USER_AGENT = "ToolgateBot/1.0 (+https://toolgate.example/bot)";

export async function fetchPublic(
  config: WorkerConfig,
  raw: string,
  options: { timeoutMs: number; accept?: string; param?: string; allowErrorStatus?: boolean },
): Promise<Fetched> {
  const param = options.param ?? "url";
  const deadline = AbortSignal.timeout(Math.max(1000, options.timeoutMs - 500));
  let url = new URL(raw);
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    if (url.protocol !== "http:" && url.protocol !== "https:")
      throw new WorkerError(
        422,
        "invalid_input",
        "Only http and https addresses can be read.",
        param,
      );
    if (url.username || url.password)
      throw new WorkerError(422, "invalid_input", "Credentials in the URL are not allowed.", param);
    const host = url.hostname.replace(/^\[|\]$/g, "");
    if (isIP(host)) {
      const blocked = blockedReason(host, config.web.allowPrivate);
      if (blocked)
        throw new WorkerError(
          422,
          "invalid_input",
          `Refused to read ${url.host}: ${blocked}.`,
          param,
        );
    }
    const res = await get(url, config, options.accept, deadline, param);
    const location = res.headers.location;
    if (res.statusCode && res.statusCode >= 300 && res.statusCode < 400 && location) {
      res.resume();
      url = new URL(location, url);
      continue;
    }
    const status = res.statusCode ?? 0;
    if ((status < 200 || status >= 300) && !options.allowErrorStatus) {
      res.resume();
      throw new WorkerError(502, "fetch_failed", `${url.host} answered HTTP ${status}.`);
    }
    const { body, truncated } = await readLimited(res, config.web.maxBytes, deadline);
    return {
      url: url.toString(),
      status,
      contentType: String(res.headers["content-type"] ?? ""),
      body,
      truncated,
    };
  }
  throw new WorkerError(502, "fetch_failed", `More than ${MAX_REDIRECTS} redirects.`);
}

function get(
  url: URL,
  config: WorkerConfig,
  accept: string | undefined,
  signal: AbortSignal,
  param: string,
): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const request = url.protocol === "https:" ? httpsRequest : httpRequest;
    const req = request(url, {
      method: "GET",
      headers: { "user-agent": USER_AGENT, accept: accept ?? "*/*", "accept-encoding": "identity" },
      lookup: guardedLookup(config.web.allowPrivate) as never,
      signal,
    });
    req.once("response", resolve);
    req.once("error", (err: Error) => {
      if (
        err instanceof BlockedTargetError ||
        (err as { cause?: unknown }).cause instanceof BlockedTargetError
      ) {
        // "refused to connect to <host>: …", as the guard says it, made a sentence.
        const message = `${err.message.charAt(0).toUpperCase()}${err.message.slice(1)}.`;
        return reject(new WorkerError(422, "invalid_input", message, param));
      }
      if (signal.aborted)
        return reject(new WorkerError(504, "tool_timeout", `${url.host} did not answer in time.`));
      reject(
        new WorkerError(
          502,
          "fetch_failed",
          `Could not read ${url.host}: ${(err as NodeJS.ErrnoException).code ?? err.message}.`,
        ),
      );
    });
    req.end();
  });
}

async function readLimited(
  res: IncomingMessage,
  maxBytes: number,
  signal: AbortSignal,
): Promise<{ body: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res) {
      const buf = chunk as Buffer;
      if (size + buf.length > maxBytes) {
        chunks.push(buf.subarray(0, maxBytes - size));
        res.destroy();
        return { body: Buffer.concat(chunks), truncated: true };
      }
      chunks.push(buf);
      size += buf.length;
    }
  } catch (err) {
    if (signal.aborted)
      throw new WorkerError(504, "tool_timeout", "The page did not finish loading in time.");
    throw new WorkerError(502, "fetch_failed", `The download failed: ${(err as Error).message}.`);
  }
  return { body: Buffer.concat(chunks), truncated: false };
}
