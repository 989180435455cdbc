import { BlockedTargetError } from "../../webhooks/ssrf.js";

/**
 * Why a tool's endpoint could not be reached, in a few words a caller may read: never the error's
 * own text, which names the endpoint's host (an operator's internal API, which its public callers
 * must not learn) or is a TLS library's, line breaks and all (`write EPROTO 806C…:error:0A00010B:
 * SSL routines:…`). The whole error goes to the gateway's log instead (UpstreamCaller).
 */
export function unreachableReason(err: Error): string {
  if (err instanceof BlockedTargetError) return "its address is not public";
  const code = String((err as NodeJS.ErrnoException).code ?? "");
  if (CERTIFICATE.test(code)) return "its TLS certificate was not accepted";
  if (code === "EPROTO" || code.startsWith("ERR_SSL_") || code.startsWith("ERR_TLS_"))
    return "TLS handshake failed";
  return REASONS[code] ?? "connection failed";
}

/** OpenSSL's verification codes as Node names them (tls.d.ts), and Node's own for a wrong host name. */
const CERTIFICATE =
  /CERT|CRL|^UNABLE_TO_|^INVALID_CA$|^HOSTNAME_MISMATCH$|^PATH_LENGTH_EXCEEDED$|^INVALID_PURPOSE$/;

const REASONS: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  EPIPE: "connection reset",
  ETIMEDOUT: "timed out",
  EHOSTUNREACH: "network unreachable",
  ENETUNREACH: "network unreachable",
  EAI_AGAIN: "its name could not be looked up",
};
