import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

/** A JSON-RPC message as the gateway's MCP door answers it. */
export interface RpcMessage {
  jsonrpc: "2.0";
  id?: unknown;
  result?: any;
  error?: { code: number; message: string; data?: unknown };
}

/** The JSON-RPC messages of an answer to POST /mcp: one JSON object, or an event stream's `data:` lines. */
export function rpcMessagesOf(text: string): RpcMessage[] {
  if (text.startsWith("{") || text.startsWith("[")) return [JSON.parse(text)].flat();
  return text
    .split("\n")
    .filter((line) => line.startsWith("data: "))
    .map((line) => JSON.parse(line.slice(6)));
}

/**
 * Raw JSON-RPC over POST /mcp, as a client without the SDK sends it (streamable HTTP's Accept,
 * the key when given): the answer's status, headers and text. `text` is null when `signal`
 * ended the wait before the answer did.
 */
export async function postMcp(
  baseUrl: string,
  key: string | null,
  body: unknown,
  init: { headers?: Record<string, string>; signal?: AbortSignal } = {},
) {
  const res = await fetch(`${baseUrl}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(key ? { "x-api-key": key } : {}),
      ...init.headers,
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
    signal: init.signal,
  });
  const text = await res.text().catch((err: unknown) => {
    if (init.signal?.aborted) return null;
    throw err;
  });
  return { status: res.status, headers: res.headers, text };
}

/** One tools/call over raw JSON-RPC; its result (an error result included). */
export async function callToolOverMcp(
  baseUrl: string,
  key: string,
  name: string,
  args: unknown,
): Promise<{ isError?: boolean; content: { type: string; text: string }[] }> {
  const { text } = await postMcp(baseUrl, key, {
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: { name, arguments: args },
  });
  return rpcMessagesOf(text!)[0]!.result;
}

/**
 * The official MCP client, connected to the gateway's `/mcp` with `key` (`options` as the SDK's
 * Client takes them: a pinned protocol revision, say).
 */
export async function connectMcp(
  baseUrl: string,
  key: string,
  options?: ConstructorParameters<typeof Client>[1],
): Promise<Client> {
  const client = new Client({ name: "toolgate-test", version: "1.0.0" }, options);
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
      requestInit: { headers: { "x-api-key": key } },
    }),
  );
  return client;
}
