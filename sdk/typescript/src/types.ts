/**
 * Friendly names over the generated OpenAPI types (generated/openapi.ts): per-tool input and
 * output types for the catalogue, and the request/response shapes of the /api/v1 routes.
 */
import type { operations, paths } from "./generated/openapi.js";

/** The tool paths: those under /v1/tools/ that are called with POST (not `/v1/tools/categories`). */
type ToolPath = {
  [P in keyof paths]: P extends `/v1/tools/${string}`
    ? NonNullable<paths[P]["post"]> extends never
      ? never
      : P
    : never;
}[keyof paths];
type NameOf<P> = P extends `/v1/tools/${infer N}` ? (N extends `{${string}}` ? never : N) : never;

/** Every tool of the catalogue, by its canonical name. */
export type ToolName = NameOf<ToolPath>;
type ToolOperation<N extends ToolName> = NonNullable<paths[`/v1/tools/${N}`]["post"]>;

/** The JSON body a tool takes (an optional field may be given as undefined: it is not sent). */
export type ToolInput<N extends ToolName> =
  ToolOperation<N> extends { requestBody: { content: { "application/json": infer B } } }
    ? UndefinedAllowed<B>
    : never;
/** The JSON object a tool answers with. */
export type ToolOutput<N extends ToolName> =
  ToolOperation<N> extends { responses: { 200: { content: { "application/json": infer O } } } }
    ? O
    : never;

type Json200<O> = O extends { responses: { 200: { content: { "application/json": infer R } } } }
  ? R
  : O extends { responses: { 201: { content: { "application/json": infer R } } } }
    ? R
    : O extends { responses: { 202: { content: { "application/json": infer R } } } }
      ? R
      : unknown;
type JsonBody<O> = O extends { requestBody?: { content: { "application/json": infer B } } }
  ? B
  : never;

/**
 * `T` with `| undefined` on each optional property: the library treats an explicit undefined as
 * absent, so a caller compiling with exactOptionalPropertyTypes may pass one (`{ cursor: next ?? undefined }`).
 */
export type UndefinedAllowed<T> = {
  [K in keyof T]: Record<never, never> extends Pick<T, K> ? T[K] | undefined : T[K];
};

/** The success body of an operation, by its operationId. */
export type ResponseOf<K extends keyof operations> = Json200<operations[K]>;
/** The JSON body an operation takes, by its operationId. */
export type BodyOf<K extends keyof operations> = UndefinedAllowed<JsonBody<operations[K]>>;
/** The query parameters an operation takes, by its operationId. */
export type QueryOf<K extends keyof operations> = operations[K] extends {
  parameters: { query?: infer Q };
}
  ? UndefinedAllowed<NonNullable<Q>>
  : never;

export type ToolDescription = ResponseOf<"getName">;
export type ToolList = ResponseOf<"get">;
export type ToolCategory = ResponseOf<"getCategories">["data"][number];
export type Account = ResponseOf<"getAccount">;
export type Analytics = ResponseOf<"getAnalytics">;
export type ApiError = import("./generated/openapi.js").components["schemas"]["Error"]["error"];
