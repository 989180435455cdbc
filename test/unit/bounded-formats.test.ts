import { afterEach, describe, expect, it, vi } from "vitest";
import type { z } from "zod";
import { signup } from "../../src/accounts/routes/signup.js";
import { parseInput } from "../../src/http/route.js";
import { webUrl } from "../../src/tools/catalogue/common.js";
import { readabilityExtract } from "../../src/tools/catalogue/documents.js";

/**
 * A URL or e-mail field's length is checked before its format: `new URL()` of one long label of
 * distinct CJK characters is superlinear (punycode), and ran on the whole string before `.max`
 * refused it, holding the gateway's event loop for seconds. Structural checks, not timings: the
 * format's check (and `new URL()`) never runs on an overlong string.
 */
const cjkHost = (n: number) =>
  Array.from({ length: n }, (_, i) => String.fromCharCode(0x4e00 + (i % 20000))).join("");
const overlongUrl = `https://${cjkHost(3000)}.com/`;

/** Counts the URLs parsed (`new URL()`, `URL.parse`, `URL.canParse`: zod uses any) while `run` runs. */
function urlsParsedBy(run: () => void): number {
  let parsed = 0;
  const RealUrl = globalThis.URL;
  vi.stubGlobal(
    "URL",
    class CountingUrl extends RealUrl {
      constructor(...args: ConstructorParameters<typeof URL>) {
        parsed++;
        super(...args);
      }
      static override parse(...args: Parameters<typeof URL.parse>) {
        parsed++;
        return RealUrl.parse(...args);
      }
      static override canParse(...args: Parameters<typeof URL.canParse>) {
        parsed++;
        return RealUrl.canParse(...args);
      }
    },
  );
  try {
    run();
  } finally {
    vi.unstubAllGlobals();
  }
  return parsed;
}

const issuesOf = (schema: z.ZodType, value: unknown) => schema.safeParse(value).error?.issues ?? [];
const readabilityUrl = readabilityExtract.input.shape.url;
const signupBody = signup.body!;

afterEach(() => vi.unstubAllGlobals());

describe("URL fields check their length before parsing", () => {
  it("refuses an overlong web URL as too long without parsing it", () => {
    let issues: z.core.$ZodIssue[] = [];
    expect(urlsParsedBy(() => (issues = issuesOf(webUrl, overlongUrl)))).toBe(0);
    expect(issues.map((i) => i.code)).toEqual(["too_big"]);
  });

  it("refuses an overlong readability-extract url (it had no bound) without parsing it", () => {
    let issues: z.core.$ZodIssue[] = [];
    expect(urlsParsedBy(() => (issues = issuesOf(readabilityUrl, overlongUrl)))).toBe(0);
    expect(issues.map((i) => i.code)).toEqual(["too_big"]);
  });

  it("still parses, accepts and refuses URLs that fit as before", () => {
    expect(urlsParsedBy(() => webUrl.parse("https://example.com/a"))).toBeGreaterThan(0);
    expect(readabilityUrl.parse("https://example.com/a")).toBe("https://example.com/a");
    expect(() => parseInput(webUrl, "ftp://example.com/", "body")).toThrow(
      "Invalid body: Expected an absolute http:// or https:// URL.",
    );
    // The field's own message names every refusal of it, as z.url({ error }) did.
    expect(() => parseInput(webUrl, 5, "body")).toThrow(
      "Invalid body: Expected an absolute http:// or https:// URL.",
    );
    expect(() => parseInput(readabilityUrl, "not a url", "body")).toThrow(
      "Invalid body: Invalid URL.",
    );
  });

  it("refuses an overlong sign-up e-mail address as too long without matching its format", () => {
    const issues = issuesOf(signupBody, { email: `${"a".repeat(300)}@@example.com` });
    expect(issues.map((i) => i.code)).toEqual(["too_big"]);
    expect(issuesOf(signupBody, { email: "a@@example.com" }).map((i) => i.code)).toEqual([
      "invalid_format",
    ]);
  });
});
