import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { ValidateFunction } from "ajv";
import type { Logger } from "pino";
import { jsonDepthExceeds } from "../../http/json-body.js";
import { openSecret } from "../../webhooks/secrets.js";
import { standardSignature } from "../../webhooks/signing.js";
import { BlockedTargetError, guardAgent } from "../../webhooks/ssrf.js";
import { abandoned, failedAnswer, type ForwardOutcome, type Forwarder } from "../forward.js";
import { affordable } from "./json-schema.js";
import { checkUpstreamForm, hostReasonWithoutDns } from "./target.js";
import { unreachableReason } from "./unreachable.js";

/**
 * Calls a tool's own HTTP endpoint (a custom or operator-declared tool) on the invocation
 * service's terms: the validated input as a JSON POST, through the SSRF guard (checked again at
 * connect time, redirects never followed), within the tool's timeout and a size limit on the
 * answer. A 2xx answer counts only if it is a JSON object matching the tool's output schema;
 * anything else becomes a worker-style error answer, so the one invocation service decides
 * charge or refund and the caller's error exactly as for catalogue tools.
 */
export const UPSTREAM_USER_AGENT = "Toolgate-Upstream/1.0";

export interface UpstreamTarget {
  url: string;
  /** Extra request headers (an operator's upstream key); none for custom tools. */
  headers: Record<string, string>;
  /**
   * A custom tool's signing secret, sealed (`whsec_…` once opened): each call then carries the
   * Standard Webhooks headers, so the endpoint can tell the gateway's calls from anyone else's.
   * Opened per call, so a secret no key of SECRET_KEY opens fails that tool's calls alone. Null
   * for operator tools and custom tools registered before calls were signed.
   */
  sealedSecret: string | null;
  validateOutput: ValidateFunction;
  /**
   * The account whose own endpoint this is, or null for an operator's tool. An operator's tool is
   * called by the public, who are told why its endpoint failed in a few words only (never its host:
   * the operator's internal API); an account may be told its own endpoint's host.
   */
  ownerId: string | null;
}

export interface UpstreamSettings {
  allowPrivate: boolean;
  maxResponseBytes: number;
  /** How deep an answer may nest: BODY_MAX_DEPTH, what the gateway takes in a request body. */
  maxDepth: number;
}

export class UpstreamCaller {
  private readonly https: HttpsAgent;
  private readonly http: HttpAgent;

  constructor(
    private readonly settings: UpstreamSettings,
    /** SECRET_KEY's keyring, which opens custom tools' signing secrets. */
    private readonly secretKeys: readonly string[],
    /** Where an endpoint's failure is told whole (the caller gets a few words: unreachable.ts). */
    private readonly log: Logger,
  ) {
    const options = { keepAlive: true, maxSockets: 256 };
    this.https = guardAgent(new HttpsAgent(options), settings.allowPrivate);
    this.http = guardAgent(new HttpAgent(options), settings.allowPrivate);
  }

  /** The forwarder of one tool: the pool origin and path of a catalogue call are not used. */
  forwarder(target: UpstreamTarget): Forwarder {
    return (call) =>
      new Promise<ForwardOutcome>((resolve) => {
        let body: Buffer;
        try {
          body = Buffer.from(JSON.stringify(call.input));
        } catch (err) {
          return resolve({
            kind: "gateway_error",
            message: `the input could not be serialised: ${(err as Error).message}`,
          });
        }
        // The URL is checked again here: the development switch may be off now, and an IP-literal
        // host never passes through the guarded DNS lookup.
        const form = checkUpstreamForm(target.url, this.settings.allowPrivate);
        const refused = form.ok
          ? hostReasonWithoutDns(form.url, this.settings.allowPrivate)
          : form.reason;
        if (!form.ok || refused) {
          // The form's reasons name no host; a refused host is the endpoint's owner's to hear of.
          const reason = refused!;
          this.logFailure(target, call.requestId, "is not allowed", reason);
          return resolve(
            failedAnswer(
              502,
              form.ok && target.ownerId === null
                ? "the endpoint is not allowed (its address is not public)"
                : `the endpoint is not allowed: ${reason}`,
            ),
          );
        }
        let signature: Record<string, string> = {};
        try {
          if (target.sealedSecret)
            signature = signatureHeaders(
              openSecret(this.secretKeys, target.sealedSecret),
              call.requestId,
              body,
            );
        } catch (err) {
          // A fault of this deployment (SECRET_KEY lost the key that sealed it), not the endpoint's.
          return resolve({
            kind: "gateway_error",
            message: `the tool's signing secret cannot be opened: ${(err as Error).message}`,
          });
        }
        if (call.signal?.aborted) return resolve(abandoned(call.signal));

        let settled = false;
        /** Tells the call's outcome once; false when it was already told (a timeout, then the error it causes). */
        const settle = (outcome: ForwardOutcome): boolean => {
          if (settled) return false;
          settled = true;
          clearTimeout(timer);
          call.signal?.removeEventListener("abort", onAbort);
          resolve(outcome);
          return true;
        };
        const secure = form.url.protocol === "https:";
        const req = (secure ? httpsRequest : httpRequest)(
          form.url,
          {
            method: "POST",
            agent: secure ? this.https : this.http,
            headers: {
              ...target.headers,
              "content-type": "application/json",
              accept: "application/json",
              "content-length": body.length,
              "user-agent": UPSTREAM_USER_AGENT,
              "x-request-id": call.requestId,
              ...signature,
            },
          },
          (res) => this.read(res, target, call.requestId, settle),
        );
        // One deadline for the whole exchange (connect, send, answer), not an idle timeout.
        const timer = setTimeout(() => {
          settle({ kind: "timeout" });
          req.destroy();
        }, call.timeoutMs);
        const onAbort = () => {
          settle(abandoned(call.signal!));
          req.destroy();
        };
        call.signal?.addEventListener("abort", onAbort);
        req.on("error", (err) => {
          // The guard's refusal is the gateway's own one-line text: its owner may read it.
          const own = target.ownerId !== null && err instanceof BlockedTargetError;
          const told = settle(
            failedAnswer(
              502,
              own
                ? `the endpoint could not be reached: ${err.message}`
                : `the endpoint could not be reached (${unreachableReason(err)})`,
            ),
          );
          if (told) this.logFailure(target, call.requestId, "could not be reached", err);
        });
        req.end(body);
      });
  }

  private read(
    res: IncomingMessage,
    target: UpstreamTarget,
    requestId: string,
    settle: (outcome: ForwardOutcome) => boolean,
  ): void {
    const limit = this.settings.maxResponseBytes;
    const status = res.statusCode ?? 502;
    const tooLarge = () => {
      res.destroy();
      settle(failedAnswer(502, `the endpoint's answer is larger than ${limit} bytes`));
    };
    if (Number(res.headers["content-length"] ?? 0) > limit) {
      tooLarge();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    res.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) tooLarge();
      else chunks.push(chunk);
    });
    res.on("error", (err) => {
      const reason = `the endpoint's answer was cut off (${unreachableReason(err)})`;
      if (settle(failedAnswer(502, reason)))
        this.logFailure(target, requestId, "broke off its answer", err);
    });
    res.on("end", () => {
      // Whatever the endpoint sent (JSON nested past the stack, a schema keyword that throws),
      // judging it fails this call alone: 502, refunded — never an exception in a listener.
      try {
        settle(interpret(status, Buffer.concat(chunks), target, this.settings.maxDepth));
      } catch (err) {
        this.logFailure(target, requestId, "sent an answer that could not be read", err as Error);
        settle(failedAnswer(502, "the endpoint's answer could not be read"));
      }
    });
  }

  /**
   * An endpoint's failure, whole, for the operator: its host (never the path or query, which may
   * hold a key) and the error's own text. At warn for the operator's tools; at info for an
   * account's own endpoint, which is that account's to mend.
   */
  private logFailure(
    target: UpstreamTarget,
    requestId: string,
    what: string,
    err: Error | string,
  ): void {
    let endpoint: string;
    try {
      endpoint = new URL(target.url).host;
    } catch {
      endpoint = "(not a URL)";
    }
    this.log[target.ownerId === null ? "warn" : "info"](
      {
        request_id: requestId,
        ...(target.ownerId === null ? {} : { account_id: target.ownerId }),
        endpoint,
        ...(typeof err === "string"
          ? { reason: err }
          : { code: (err as NodeJS.ErrnoException).code, reason: err.message }),
      },
      `a tool's endpoint ${what}`,
    );
  }

  close(): void {
    this.https.destroy();
    this.http.destroy();
  }
}

/** The Standard Webhooks headers of one call: its request id, now, and the signature of both and the body. */
function signatureHeaders(secret: string, id: string, body: Buffer): Record<string, string> {
  const now = Math.floor(Date.now() / 1000);
  return {
    "webhook-id": id,
    "webhook-timestamp": String(now),
    "webhook-signature": standardSignature(secret, id, now, body.toString("utf8")),
  };
}

/** What the endpoint's answer means, in the workers' terms. */
function interpret(
  status: number,
  body: Buffer,
  target: UpstreamTarget,
  maxDepth: number,
): ForwardOutcome {
  // The endpoint judged the input: the caller's error (refunded, no tool.error), with its message when it gave one.
  if (status === 422) return { kind: "response", status, body };
  if (status === 504) return failedAnswer(504, "the endpoint timed out");
  if (status < 200 || status >= 300)
    return failedAnswer(
      502,
      `the endpoint answered HTTP ${status}${status >= 300 && status < 400 ? " (redirects are not followed)" : ""}`,
    );
  // Nested deeper than a request body may be: the schema check and MCP's JSON.stringify recurse on
  // it (MCP answered an empty 200, the charge kept). Counted on the bytes, before parsing.
  if (jsonDepthExceeds(body, maxDepth))
    return failedAnswer(502, `the endpoint's answer nests deeper than ${maxDepth} levels`);
  let value: unknown;
  try {
    value = JSON.parse(body.toString("utf8"));
  } catch {
    return failedAnswer(502, "the endpoint's answer is not JSON");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value))
    return failedAnswer(502, "the endpoint's answer is not a JSON object");
  if (!affordable(target.validateOutput, value))
    return failedAnswer(
      502,
      "the endpoint's answer has too many values to check against the tool's output schema",
    );
  if (!target.validateOutput(value)) {
    const error = target.validateOutput.errors![0]!;
    return failedAnswer(
      502,
      `the endpoint's answer does not match the tool's output schema: ${error.instancePath || "(root)"} ${error.message ?? ""}`.trim(),
    );
  }
  // The bytes as sent (they parsed as JSON): not re-serialised, which would recurse on their depth.
  return { kind: "response", status: 200, body };
}
