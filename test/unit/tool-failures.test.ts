import { describe, expect, it } from "vitest";
import { failureOf } from "../../src/tools/invoke.js";

/** What a worker's answer (or its absence) means for the caller. */
const tool = { name: "hash" } as Parameters<typeof failureOf>[0];
const answered = (status: number, body: unknown) => ({
  kind: "response" as const,
  status,
  body: Buffer.from(typeof body === "string" ? body : JSON.stringify(body)),
});

describe("failureOf", () => {
  it("maps a timeout to 504 tool_timeout and an unreachable pool to worker_unavailable", () => {
    expect(failureOf(tool, { kind: "timeout" })).toMatchObject({
      code: "tool_timeout",
      status: 504,
    });
    expect(failureOf(tool, { kind: "unreachable", message: "ECONNREFUSED" })).toMatchObject({
      code: "worker_unavailable",
    });
    expect(failureOf(tool, { kind: "gateway_error", message: "boom" })).toMatchObject({
      code: "internal_error",
      status: 500,
    });
  });

  it("passes a worker's 422 on as validation_failed with its message and param", () => {
    const err = failureOf(
      tool,
      answered(422, {
        error: {
          code: "validation_failed",
          message: "algorithm: not supported",
          param: "algorithm",
        },
      }),
    );
    expect(err).toMatchObject({
      code: "validation_failed",
      status: 422,
      message: "algorithm: not supported",
    });
    expect(err.options.param).toBe("algorithm");
  });

  it("tells a tool that is unavailable from one that failed", () => {
    expect(
      failureOf(
        tool,
        answered(503, { error: { code: "tool_unavailable", message: "no provider configured" } }),
      ),
    ).toMatchObject({ code: "tool_unavailable" });
    expect(failureOf(tool, answered(503, { error: { code: "overloaded" } }))).toMatchObject({
      code: "tool_failed",
      status: 502,
    });
    expect(failureOf(tool, answered(504, {}))).toMatchObject({ code: "tool_timeout" });
  });

  it("treats an answer that is not the worker's JSON as a failure, saying the call was not charged", () => {
    const err = failureOf(tool, answered(500, "<html>proxy error</html>"));
    expect(err).toMatchObject({ code: "tool_failed", status: 502 });
    expect(err.message).toMatch(/hash tool failed.*not charged/);
  });

  it("ends its first sentence where the worker gave no message of its own", () => {
    expect(failureOf(tool, answered(500, "{}")).message).toBe(
      "The hash tool failed. The call was not charged.",
    );
    expect(failureOf(tool, answered(504, "")).message).toBe(
      "The hash tool timed out. The call was not charged.",
    );
    expect(failureOf(tool, answered(503, { error: { code: "tool_unavailable" } })).message).toBe(
      "The hash tool is unavailable. The call was not charged.",
    );
    expect(failureOf(tool, answered(502, { error: { message: "upstream said no" } })).message).toBe(
      "The hash tool failed; upstream said no. The call was not charged.",
    );
    // The worker's sentence goes on after the semicolon, in lower case unless it begins with a name.
    const read = (message: string) =>
      failureOf(tool, answered(502, { error: { message } })).message;
    expect(read("Could not read 1.1.1.1: ERR_TLS_CERT_ALTNAME_INVALID")).toBe(
      "The hash tool failed; could not read 1.1.1.1: ERR_TLS_CERT_ALTNAME_INVALID. The call was not charged.",
    );
    expect(read("DNS lookup failed")).toBe(
      "The hash tool failed; DNS lookup failed. The call was not charged.",
    );
  });
});
