import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP } from "node:net";
import { pipeline, type Transform } from "node:stream";
import { createBrotliDecompress, createUnzip } from "node:zlib";
import {
  BlockedTargetError,
  blockedReason,
  guardedLookup,
  portReason,
} from "../../webhooks/ssrf.js";
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
    // Port 0 before the address: Node would connect to the scheme's default port instead.
    const port = portReason(url);
    if (port)
      throw new WorkerError(422, "invalid_input", `Refused to read ${url.host}: ${port}.`, param);
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
      url = redirectTarget(location, url);
      continue;
    }
    const status = res.statusCode ?? 0;
    if ((status < 200 || status >= 300) && !options.allowErrorStatus) {
      res.resume();
      throw new WorkerError(502, "fetch_failed", `${url.host} answered HTTP ${status}.`);
    }
    const contentType = String(res.headers["content-type"] ?? "");
    if (status >= 200 && status < 300 && !isText(contentType)) {
      res.resume();
      throw new WorkerError(
        502,
        "fetch_failed",
        `${url.host} answered ${contentType.split(";")[0]}, which is not text; only text pages can be read.`,
      );
    }
    const { body, truncated } = await readLimited(
      res,
      decoderFor(res, url),
      config.web.maxBytes,
      deadline,
    );
    return { url: url.toString(), status, contentType, body, truncated };
  }
  throw new WorkerError(502, "fetch_failed", `More than ${MAX_REDIRECTS} redirects.`);
}

/** Where a redirect leads; a Location that is no URL is the server's fault, as a 404 is (it threw, 500). */
function redirectTarget(location: string, from: URL): URL {
  try {
    return new URL(location, from);
  } catch {
    throw new WorkerError(502, "fetch_failed", `${from.host} redirected to an invalid URL.`);
  }
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

/**
 * Every web tool reads the page as text: an image or a PDF came back as raw bytes in `content`,
 * and was charged for. No Content-Type at all is read as text, as browsers sniff it.
 */
function isText(contentType: string): boolean {
  const mime = contentType.split(";")[0]!.trim().toLowerCase();
  return (
    mime === "" ||
    mime.startsWith("text/") ||
    /[/+](xml|json)$/.test(mime) ||
    mime === "application/javascript"
  );
}

/**
 * The decompressor for a body the server compressed although identity was asked for (its
 * compressed bytes came back as the content), or null. An encoding it cannot undo is refused.
 */
function decoderFor(res: IncomingMessage, url: URL): Transform | null {
  const encoding = String(res.headers["content-encoding"] ?? "identity")
    .trim()
    .toLowerCase();
  // createUnzip takes a gzip or a zlib stream: "deflate" is meant as zlib, and so is usually sent.
  if (encoding === "gzip" || encoding === "x-gzip" || encoding === "deflate") return createUnzip();
  if (encoding === "br") return createBrotliDecompress();
  if (encoding === "identity" || encoding === "") return null;
  res.resume();
  throw new WorkerError(
    502,
    "fetch_failed",
    `${url.host} sent the page compressed as ${encoding}, which cannot be read.`,
  );
}

/**
 * The body, decompressed if `decoder` is given, cut at `maxBytes` of what is read: the cap
 * counts decompressed bytes, and the decompressor is stopped there (it runs only as far as it
 * is read), so a small compressed bomb never inflates past the cap.
 */
async function readLimited(
  res: IncomingMessage,
  decoder: Transform | null,
  maxBytes: number,
  signal: AbortSignal,
): Promise<{ body: Buffer; truncated: boolean }> {
  // pipeline passes a failure of the response on to the decompressor, whose reading then fails.
  const source = decoder ? pipeline(res, decoder, () => {}) : res;
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of source) {
      const buf = chunk as Buffer;
      if (size + buf.length > maxBytes) {
        chunks.push(buf.subarray(0, maxBytes - size));
        source.destroy();
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
