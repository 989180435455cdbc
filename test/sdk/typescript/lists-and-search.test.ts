import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fundedAccount, startGateway, type TestGateway } from "../../helpers/gateway.js";
import { installPackedSdk, type InstalledProject } from "../../helpers/sdk-package.js";

/**
 * From the npm pack tarball in a fresh project, against a real gateway: walking the cursor-paged
 * lists (`for await` over `account.events()` and `usage.list()`), and the catalogue's search and
 * categories. The Python library is held to the same (sdk/python/tests/test_account.py,
 * test_tools.py).
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

/** A client whose requests' query strings are kept in `asked`, in order. */
const HEADER = `import { Toolgate, ToolgateError } from "toolgate";
const out = (v) => console.log(JSON.stringify(v));
const asked = [];
const client = new Toolgate({
  apiKey: process.env.KEY,
  baseUrl: process.env.URL,
  fetch: (url, init) => { const u = new URL(url); asked.push(u.pathname + u.search); return fetch(url, init); },
});
const walk = async (list) => { const items = []; for await (const item of list) items.push(item); return items; };
`;

describe("for await over a cursor-paged list", () => {
  it("walks every usage entry, one page at a time, keeping the filters on every page", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    const result = await project.script(
      `${HEADER}for (let i = 0; i < 5; i++) await client.tools.call("hash", { text: String(i) });
await client.tools.call("qr-code", { text: "not a hash" });
asked.length = 0;
const hashes = await walk(client.usage.list({ tool: "hash", limit: 2 }));
const walked = asked.splice(0);
let seen = 0;
for await (const _ of client.usage.list({ limit: 2 })) if (++seen === 3) break;
const stoppedEarly = asked.splice(0);
const page = client.usage.list({ tool: "hash", limit: 2 });
const awaited = await page;
const afterAwait = await walk(page);
out({ hashes: hashes.map((e) => [e.tool, e.kind]), walked, stoppedEarly, awaited: awaited.data.length, cursor: typeof awaited.next_cursor, afterAwait: afterAwait.length, requests: asked });`,
      { KEY: key, URL: gw.url },
    );
    expect(result.hashes).toEqual(Array(5).fill(["hash", "debit"]));
    // Three pages of at most two, the filters on each, the cursor from the page before.
    expect(result.walked).toHaveLength(3);
    expect(result.walked[0]).toBe("/api/v1/usage?tool=hash&limit=2");
    for (const later of result.walked.slice(1))
      expect(later).toMatch(/^\/api\/v1\/usage\?tool=hash&limit=2&cursor=[^&]+$/);
    // Lazily: the third item is on the second page, so no third page is asked for.
    expect(result.stoppedEarly).toHaveLength(2);
    // Awaited, it is still one page; walking it after asks for the first page once.
    expect([result.awaited, result.cursor, result.afterAwait]).toEqual([2, "string", 5]);
    expect(result.requests).toHaveLength(3);
  });

  it("walks the account's events page by page, and the type filter holds on every page", async () => {
    const { key } = await fundedAccount(gw.url, 25, "pro");
    const result = await project.script(
      `${HEADER}for (let i = 0; i < 25; i++) await client.tools.call("hash", { text: String(i) });
const deadline = Date.now() + 20_000;
while ((await client.account.events()).data.length < 3 && Date.now() < deadline)
  await new Promise((r) => setTimeout(r, 200));
asked.length = 0;
const all = await walk(client.account.events({ limit: 1 }));
const pages = asked.splice(0);
const low = await walk(client.account.events({ type: "credits.low", limit: 1 }));
out({ all: all.map((e) => e.event), pages, low: low.map((e) => e.event), lowAsked: asked });`,
      { KEY: key, URL: gw.url },
    );
    // Sign-up's 25 credits spent: credits.low below 5, credits.depleted at 0, newest first.
    expect(result.all).toEqual(["credits.depleted", "credits.low", "agent.registered"]);
    expect(result.pages.length).toBeGreaterThanOrEqual(3);
    expect(result.pages[0]).toBe("/api/v1/events?limit=1");
    expect(result.low).toEqual(["credits.low"]);
    for (const asked of result.lowAsked)
      expect(asked).toMatch(/^\/api\/v1\/events\?type=credits\.low&limit=1/);
  });

  it("is typed: the awaited page and the walked items, in a user's TypeScript", async () => {
    const errors = await project.typecheck(
      "pages.ts",
      `import { Toolgate, type PagePromise, type EventsPage, type ToolCategory, type ToolName } from "toolgate";
const client = new Toolgate({ apiKey: "tg_live_x" });
export async function ok(): Promise<string[]> {
  const page = await client.account.events({ type: "credits.low" });
  const cursor: string | null | undefined = page.next_cursor;
  const names: string[] = [String(cursor)];
  for await (const event of client.account.events({ type: "credits.low" })) names.push(event.event);
  for await (const entry of client.usage.list({ tool: "hash" })) names.push(entry.kind, String(entry.amount));
  const list: PagePromise<EventsPage> = client.account.events();
  const categories: ToolCategory[] = await client.tools.categories();
  const found = await client.tools.list({ q: "hash", category: "security" });
  void list;
  return [...names, ...categories.map((c) => c.name), ...found.map((t) => t.category)];
}
export async function misuse() {
  // @ts-expect-error an entry's amount is a number
  for await (const entry of client.usage.list()) entry.amount.toUpperCase();
  // @ts-expect-error no such category
  await client.tools.list({ category: "weather" });
  // @ts-expect-error the categories route is no tool
  const notATool: ToolName = "categories";
  void notATool;
}
`,
    );
    expect(errors).toBe("");
  });
});

describe("client.tools.list({ q, category }) and client.tools.categories()", () => {
  it("ranks by the gateway's search, keeps one category, and lists the categories", async () => {
    const result = await project.script(
      `${HEADER}const names = (tools) => tools.map((t) => t.name);
const categories = await client.tools.categories();
const security = await client.tools.list({ category: "security" });
out({
  categories,
  search: names(await client.tools.list({ q: "hash" })),
  security: { names: names(security), categories: [...new Set(security.map((t) => t.category))] },
  both: names(await client.tools.list({ q: "hash", category: "data" })),
  everything: (await client.tools.list()).length,
  bad: await client.tools.list({ category: "weather" }).then(() => null, (e) => ({ status: e.status, code: e.code, param: e.param })),
  asked,
});`,
      { URL: gw.url },
    );
    expect(result.search[0]).toBe("hash");
    expect(result.security.categories).toEqual(["security"]);
    expect(result.security.names).toContain("hash");
    expect(result.both).not.toContain("hash");
    const security = result.categories.find((c: { name: string }) => c.name === "security");
    expect(security).toEqual({
      name: "security",
      description: expect.any(String),
      tools: result.security.names.length,
    });
    expect(result.categories.reduce((n: number, c: { tools: number }) => n + c.tools, 0)).toBe(
      result.everything,
    );
    expect(result.bad).toEqual({ status: 422, code: "validation_failed", param: "category" });
    expect(result.asked).toEqual([
      "/v1/tools/categories",
      "/v1/tools?category=security",
      "/v1/tools?q=hash",
      "/v1/tools?q=hash&category=data",
      "/v1/tools",
      "/v1/tools?category=weather",
    ]);
  });
});
