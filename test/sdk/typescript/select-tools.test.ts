import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type TestGateway } from "../../helpers/gateway.js";
import { installPackedSdk, type InstalledProject } from "../../helpers/sdk-package.js";

/**
 * Choosing the tools an agent is handed (`toolgate/agents` selectTools, and the subset every
 * loader takes), from the npm pack tarball installed into a fresh project, over a real gateway's
 * catalogue. The Python library's select_tools is held to the same expectations
 * (sdk/python/tests/test_adapters.py).
 */
let project: InstalledProject;
let gw: TestGateway;
beforeAll(async () => {
  [project, gw] = await Promise.all([installPackedSdk(), startGateway({ store: "memory" })]);
}, 180_000);
afterAll(async () => {
  await gw?.stop();
  await project?.remove();
});

/** Runs `body` with `catalogue` (the gateway's tools), `names(subset)` and `failure(subset)` in scope. */
const withCatalogue = (body: string) =>
  project.script(
    `import { Toolgate, ToolgateError } from "toolgate";
import { selectTools, openAITools, anthropicTools } from "toolgate/agents";
const client = new Toolgate({ baseUrl: process.env.URL });
const catalogue = await client.tools.list();
const names = (subset) => selectTools(catalogue, subset).map((t) => t.name);
const failure = (run) => { try { run(); return null; } catch (e) { return e instanceof ToolgateError ? { status: e.status, code: e.code, message: e.message } : String(e); } };
const out = (v) => console.log(JSON.stringify(v));
${body}`,
    { URL: gw.url },
  );

describe("selectTools (toolgate/agents)", () => {
  it("an unknown name fails at set-up with invalid_argument, naming the tool it most likely meant", async () => {
    const result = await withCatalogue(`out({
  typo: failure(() => selectTools(catalogue, { names: ["hash", "hsah", "nope-nothing-like-it"] })),
  loader: await openAITools(client, { names: ["unit-convrt"] }).then(() => null, (e) => e.message),
  anthropic: await anthropicTools(client, { names: ["hsah"] }).then(() => null, (e) => e.code),
  both: failure(() => selectTools(catalogue, { names: ["hash"], search: "hash" })),
});`);
    expect(result).toEqual({
      typo: {
        status: 0,
        code: "invalid_argument",
        message: 'No such tool: "hsah" (did you mean "hash"?), "nope-nothing-like-it".',
      },
      loader: 'No such tool: "unit-convrt" (did you mean "unit-convert"?).',
      anthropic: "invalid_argument",
      both: { status: 0, code: "invalid_argument", message: "Pass names or search, not both." },
    });
  });

  it("keeps every tool named (aliases too), in the order named, even one the gateway lists as unavailable", async () => {
    const result = await withCatalogue(`out({
  named: names({ names: ["summarize", "diff", "hash", "hash"] }),
  unavailable: catalogue.find((t) => t.name === "ai-summarize").available,
  searched: names({ search: "summarize" }),
  searchedWithUnavailable: names({ search: "summarize", includeUnavailable: true })[0],
  all: names().length,
  available: catalogue.filter((t) => t.available).length,
});`);
    expect(result.unavailable).toBe(false); // no AI provider in the test gateway
    expect(result.named).toEqual(["ai-summarize", "text-diff", "hash"]);
    expect(result.searched).not.toContain("ai-summarize");
    expect(result.searchedWithUnavailable).toBe("ai-summarize");
    expect(result.all).toBe(result.available);
  });

  it("a search ranks its matches and keeps the best five, or `limit`", async () => {
    const result = await withCatalogue(`out({
  text: names({ search: "text" }),
  text8: names({ search: "text", limit: 8 }).length,
  mentionsText: catalogue.filter((t) => t.available && /\\btext\\b/i.test(t.name + " " + t.title + " " + t.description)).length,
  markdown: names({ search: "markdown" }),
  hash: names({ search: "hash", limit: 1 }),
  units: names({ search: "convert units of measure", limit: 1 }),
  none: names({ search: "xyzzy plugh" }),
  badLimit: failure(() => selectTools(catalogue, { search: "text", limit: 0 })),
});`);
    expect(result.mentionsText).toBeGreaterThan(8); // so five is a cut, not all there is
    expect(result.text).toHaveLength(5);
    expect(result.text8).toBe(8);
    expect(result.markdown.slice(0, 2).sort()).toEqual(["html-to-markdown", "markdown-to-html"]);
    expect(result.hash).toEqual(["hash"]);
    expect(result.units).toEqual(["unit-convert"]);
    expect(result.none).toEqual([]);
    expect(result.badLimit).toMatchObject({ code: "invalid_argument" });
  });

  it("a search reads words as the gateway does: Unicode letters and digits, never part of a word", async () => {
    const result =
      await withCatalogue(`const tool = { ...catalogue.find((t) => t.name === "hash"), name: "uebersetzen", aliases: [], title: "Übersetzer", description: "Übersetzt Text ins Japanische (翻訳) und zurück." };
const found = (search) => selectTools([tool], { search }).map((t) => t.name);
out({ word: found("übersetzt"), upper: found("ÜBERSETZT"), cjk: found("翻訳"), part: found("bersetzt"), cut: found("zur") });`);
    expect(result).toEqual({
      word: ["uebersetzen"],
      upper: ["uebersetzen"],
      cjk: ["uebersetzen"],
      part: [],
      cut: [],
    });
  });
});
