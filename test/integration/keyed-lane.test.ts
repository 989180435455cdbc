import type { IncomingMessage } from "node:http";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyedLane } from "../../src/tools/routes/keyed-lane.js";
import {
  balanceOf,
  call,
  callTool,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";

/**
 * The plain keyed tool call is served on its own lane, outside express (tools/routes/keyed-lane.ts),
 * for speed only: a caller must not be able to tell the lane from express by anything but time.
 * Each comparison sends the same call twice, once as the lane takes it (Content-Type exactly
 * `application/json`) and once in a form the lane leaves to express (with `; charset=utf-8`).
 */
let gw: TestGateway;
let key: string;
beforeAll(async () => {
  gw = await startGateway();
  ({ key } = await fundedAccount(gw.url, 1000));
}, 60_000);
afterAll(() => gw?.stop());

const LANE = { "content-type": "application/json" };
const EXPRESS = { "content-type": "application/json; charset=utf-8" };

/** The answer's headers that do not change from one call to the next. */
function steadyHeaders(headers: Headers): Record<string, string> {
  const varying = new Set([
    "date",
    "x-request-id",
    "x-credits-remaining",
    "ratelimit-remaining",
    "ratelimit-reset",
  ]);
  return Object.fromEntries(
    [...headers]
      .filter(([name]) => !varying.has(name))
      // Server-Timing's names stay; its durations are the call's own.
      .map(([name, value]) =>
        name === "server-timing" ? [name, value.replace(/;dur=[\d.]+/g, "")] : [name, value],
      ),
  );
}

const send = (headers: Record<string, string>, body: string, tool = "hash") =>
  call(`${gw.url}/v1/tools/${tool}`, { method: "POST", key, rawBody: body, headers });

describe("the keyed lane", () => {
  it("takes only the plain keyed call and leaves every other form to express", () => {
    const lane = keyedLane(gw.services, {
      json: express.json(),
      answerError: () => undefined,
    });
    const request = (over: Partial<IncomingMessage> & { headers?: Record<string, string> }) =>
      ({
        method: "POST",
        url: "/v1/tools/hash",
        ...over,
        headers: { "x-api-key": key, ...LANE, ...over.headers },
      }) as IncomingMessage;
    expect(lane.takes(request({}))).toBe(true);
    expect(lane.takes(request({ url: "/v1/tools/qr-code" }))).toBe(true);
    for (const other of [
      request({ method: "GET" }),
      request({ url: "/v1/tools/hash?x=1" }),
      request({ url: "/v1/tools/hash/" }),
      request({ url: "/v1/tools/HASH" }),
      request({ url: "/v1/tools/h%61sh" }),
      request({ url: "/v1/tools" }),
      request({ url: "/api/v1/account" }),
      request({ headers: EXPRESS }),
      request({ headers: { "content-encoding": "gzip" } }),
      request({ headers: { "x-api-key": "" } }),
    ])
      expect([other.method, other.url, lane.takes(other)]).toEqual([
        other.method,
        other.url,
        false,
      ]);
  });

  it("answers a call as express answers it: same status, body, headers and charge", async () => {
    const body = JSON.stringify({ text: "same on both paths", algorithm: "sha256" });
    const before = await balanceOf(gw.url, key);
    const onLane = await send(LANE, body);
    const onExpress = await send(EXPRESS, body);
    expect([onLane.status, onExpress.status]).toEqual([200, 200]);
    expect(onLane.body).toEqual(onExpress.body);
    expect(steadyHeaders(onLane.headers)).toEqual(steadyHeaders(onExpress.headers));
    expect(onLane.headers.get("x-request-id")).toMatch(/^req_/);
    expect(onLane.headers.get("x-credits-charged")).toBe("1");
    expect(Number(onExpress.headers.get("x-credits-remaining"))).toBe(
      Number(onLane.headers.get("x-credits-remaining")) - 1,
    );
    expect(await balanceOf(gw.url, key)).toBe(before - 2);
  });

  it("answers the caller's mistakes in the one error shape, as express does, and charges nothing", async () => {
    const before = await balanceOf(gw.url, key);
    const cases: [string, string, number, string][] = [
      ["hash", "{not json", 400, "invalid_json"],
      [
        "hash",
        JSON.stringify({ text: "x".repeat(gw.services.config.bodyLimitBytes) }),
        413,
        "body_too_large",
      ],
      ["hash", "[".repeat(gw.services.config.bodyMaxDepth + 1), 413, "body_too_deep"],
      ["hash", JSON.stringify({ algorithm: "sha256" }), 422, "validation_failed"],
      ["no-such-tool", "{}", 404, "tool_not_found"],
      ["hsah", "{}", 404, "tool_not_found"],
    ];
    for (const [tool, body, status, code] of cases) {
      const onLane = await send(LANE, body, tool);
      const onExpress = await send(EXPRESS, body, tool);
      for (const answer of [onLane, onExpress]) {
        expect([tool, answer.status, answer.body?.error?.code]).toEqual([tool, status, code]);
        expect(answer.body.error.request_id).toBe(answer.headers.get("x-request-id"));
      }
      expect({ ...onLane.body.error, request_id: "" }).toEqual({
        ...onExpress.body.error,
        request_id: "",
      });
    }
    // A near miss of a catalogue name says which was likely meant; a name near none does not guess.
    expect((await send(LANE, "{}", "hsah")).body.error.message).toContain("(did you mean hash?)");
    expect((await send(LANE, "{}", "no-such-tool")).body.error.message).not.toContain("mean");
    // Bytes that are not UTF-8 (they would be read as U+FFFD and hashed): 415, on both paths.
    for (const headers of [LANE, EXPRESS]) {
      const res = await fetch(`${gw.url}/v1/tools/hash`, {
        method: "POST",
        headers: { ...headers, "x-api-key": key },
        body: Buffer.from([...Buffer.from('{"text":"'), 0xff, 0xfe, ...Buffer.from('"}')]),
      });
      expect([res.status, ((await res.json()) as { error: { code: string } }).error.code]).toEqual([
        415,
        "unsupported_media_type",
      ]);
    }
    const badKey = await callTool(gw.url, "tg_live_nope", "hash", { text: "x" });
    expect([badKey.status, badKey.body.error.code]).toEqual([401, "invalid_api_key"]);
    expect(await balanceOf(gw.url, key)).toBe(before);
  });

  it("counts its calls in /metrics under the route's pattern, as express's routes are counted", async () => {
    const count = async () => {
      const text = (await call(`${gw.url}/metrics`)).body as string;
      const line = text
        .split("\n")
        .find(
          (l) =>
            l.startsWith("toolgate_http_requests_total{") &&
            l.includes('route="/v1/tools/:name"') &&
            l.includes('method="POST"') &&
            l.includes('status="200"'),
        );
      return Number(line?.split(" ").at(-1) ?? 0);
    };
    const before = await count();
    await send(LANE, JSON.stringify({ text: "counted", algorithm: "sha256" }));
    await send(EXPRESS, JSON.stringify({ text: "counted", algorithm: "sha256" }));
    expect(await count()).toBe(before + 2);
  });
});
