import { XMLParser, XMLValidator } from "fast-xml-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseChangelog, readChangelog } from "../../src/pages/changelog.js";
import { Redis } from "ioredis";
import { admin, call, startGateway, type TestGateway } from "../helpers/gateway.js";
import { REDIS_URL } from "../helpers/redis.js";

/**
 * /changelog.rss and /status.rss parse as XML and hold what RSS 2.0 requires: channel title,
 * link and description; items with title, link, a unique guid, an RFC 822 pubDate and a
 * description. Incidents posted by the operator show on /status, /status.json and /status.rss.
 */
const RFC_822 =
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} (GMT|[+-]\d{4})$/;

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ env: { STATUS_CHECK_INTERVAL_MS: "60000" } });
});
afterAll(() => gw.stop());

async function feed(path: string) {
  const res = await fetch(`${gw.url}${path}`);
  const xml = await res.text();
  expect(res.headers.get("content-type")).toBe("application/rss+xml; charset=utf-8");
  expect(res.headers.get("content-security-policy")).toBe(
    "default-src 'none'; frame-ancestors 'none'",
  );
  expect(XMLValidator.validate(xml)).toBe(true);
  // XML 1.0's Char production, which XMLValidator does not check and feed readers' parsers
  // (expat, libxml2) enforce: one such character and the whole feed is unreadable.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding them is the point
  expect(xml).not.toMatch(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/);
  const doc = new XMLParser({ ignoreAttributes: false, isArray: (name) => name === "item" }).parse(
    xml,
  );
  expect(doc.rss["@_version"]).toBe("2.0");
  const channel = doc.rss.channel;
  for (const element of ["title", "link", "description"])
    expect(channel[element], element).toEqual(expect.any(String));
  const items = (channel.item ?? []) as Record<string, any>[];
  for (const item of items) {
    for (const element of ["title", "link", "description"])
      expect(item[element], element).toEqual(expect.any(String));
    expect(item.pubDate).toMatch(RFC_822);
    expect(Number.isNaN(Date.parse(item.pubDate))).toBe(false);
    expect(item.guid["#text"]).toEqual(expect.any(String));
  }
  expect(new Set(items.map((i) => i.guid["#text"])).size).toBe(items.length);
  // The feed was built when its newest item was; a feed with no item gives no build date.
  expect(channel.lastBuildDate).toBe(items[0]?.pubDate);
  return { channel, items };
}

describe("/changelog.rss", () => {
  it("has one valid item per dated release in CHANGELOG.md", async () => {
    const { items, channel } = await feed("/changelog.rss");
    const dated = parseChangelog(readChangelog()).releases.filter((r) => r.date);
    expect(dated.length).toBeGreaterThanOrEqual(2);
    expect(items.map((i) => i.title).sort()).toEqual(
      dated.map((r) => `${r.title} (${r.date})`).sort(),
    );
    expect(channel.link).toMatch(/\/changelog$/);
    for (const item of items) expect(item.link).toMatch(/\/changelog#/);
  });
});

describe("incidents", () => {
  it("/status.rss with none yet is a valid feed with no items", async () => {
    expect((await feed("/status.rss")).items).toEqual([]);
  });

  it("posted, updated and resolved by the operator, show on /status.json, /status and /status.rss", async () => {
    const opened = await admin(gw.url, "/incidents", {
      body: {
        title: "Slow AI answers",
        message: "Looking into it.",
        impact: "minor",
        components: ["provider-ai-generate"],
      },
    });
    expect(opened.status).toBe(201);
    const second = await admin(gw.url, "/incidents", {
      body: {
        title: "Webhook delays",
        message: "Deliveries are late.",
        components: ["webhook-delivery"],
      },
    });
    const updated = await admin(gw.url, `/incidents/${opened.body.id}/updates`, {
      body: { status: "monitoring", message: "Provider recovered." },
    });
    expect(updated.body.updates.map((u: { status: string }) => u.status)).toEqual([
      "investigating",
      "monitoring",
    ]);
    const resolved = await admin(gw.url, `/incidents/${second.body.id}/resolve`, {
      body: { message: "All delivered." },
    });
    expect(resolved.body.resolved_at).toEqual(expect.any(String));

    // Text pasted from elsewhere can carry control characters XML does not allow: refused now
    // (below), but an incident stored before then still has them.
    const pasted = {
      body: { id: `inc_pasted${Date.now()}` },
    };
    await gw.services.status.store.saveIncident({
      id: pasted.body.id,
      title: "Bell\u0007 in the title",
      impact: "minor",
      components: [],
      createdAt: Date.now(),
      resolvedAt: null,
      updates: [
        { status: "investigating", message: "A form\u000cfeed\u0000 here.", at: Date.now() },
      ],
    });
    gw.services.status.incidentsChanged();

    // At once: the operator sees the change on the next view (the report, cached for a second,
    // was the one from before it).
    const status = (await call(`${gw.url}/status.json`)).body;
    expect(status.incidents.active.map((i: { id: string }) => i.id)).toEqual([
      pasted.body.id,
      opened.body.id,
    ]);
    expect(status.incidents.recent.map((i: { id: string }) => i.id)).toEqual([second.body.id]);
    expect(status.status).toBe("degraded"); // an open incident

    const page = await (await fetch(`${gw.url}/status`)).text();
    expect(page).toContain("Slow AI answers");
    expect(page).toContain("Provider recovered.");

    // One item per update, each with its own guid and pubDate: a feed reader shows the update
    // and the resolution as new items, where one item per incident changed in place unseen.
    const { items } = await feed("/status.rss");
    const item = (title: string) => items.find((i) => i.title === title)!;
    expect(items.map((i) => i.title)).toEqual(
      expect.arrayContaining([
        "[Investigating] Slow AI answers",
        "[Monitoring] Slow AI answers",
        "[Investigating] Webhook delays",
        "[Resolved] Webhook delays",
      ]),
    );
    expect(item("[Investigating] Bell in the title").description).toContain("A formfeed here.");
    expect(item("[Monitoring] Slow AI answers").description).toContain("Provider recovered.");
    expect(item("[Resolved] Webhook delays").description).toContain("All delivered.");
    expect(item("[Monitoring] Slow AI answers").guid["#text"]).not.toBe(
      item("[Investigating] Slow AI answers").guid["#text"],
    );
    expect(Date.parse(item("[Monitoring] Slow AI answers").pubDate)).toBe(
      Math.floor(Date.parse(updated.body.updates[1].at) / 1000) * 1000,
    );
    expect(Date.parse(item("[Resolved] Webhook delays").pubDate)).toBe(
      Math.floor(Date.parse(resolved.body.resolved_at) / 1000) * 1000,
    );
  });

  it("keeps an open incident on /status.json, /status and /status.rss however many newer ones came and went", async () => {
    const long = await admin(gw.url, "/incidents", {
      body: { title: "Long outage of the search tools", message: "Still on it.", impact: "major" },
    });
    // More newer incidents than the page lists, each opened and resolved since.
    for (let i = 0; i < 55; i++) {
      const short = await admin(gw.url, "/incidents", {
        body: { title: `Blip ${i}`, message: "." },
      });
      await admin(gw.url, `/incidents/${short.body.id}/resolve`, { body: {} });
    }
    const status = (await call(`${gw.url}/status.json`)).body;
    expect(status.incidents.active.map((i: { id: string }) => i.id)).toContain(long.body.id);
    expect(status.status).toBe("degraded");
    expect(await (await fetch(`${gw.url}/status`)).text()).toContain(
      "Long outage of the search tools",
    );
    const { items } = await feed("/status.rss");
    expect(items.map((i) => i.title)).toContain("[Investigating] Long outage of the search tools");
    await admin(gw.url, `/incidents/${long.body.id}/resolve`, { body: {} });
  });

  it("refuses control characters and noncharacters in titles and messages, naming the field; a message keeps its line feeds and tabs", async () => {
    const refusals = async (path: string, body: Record<string, unknown>) => {
      const res = await admin(gw.url, path, { body });
      return [res.status, res.body.error?.code, res.body.error?.param];
    };
    for (const bad of [
      "\u0001",
      "\u001b[31m",
      "\u0007",
      "\u007f",
      "\u0085",
      "\ufffe",
      "\ufdd0",
      "\u{1fffe}",
      "\r",
      // Invisible formatting: a hidden ASCII sentence in tag characters (read by an agent from
      // /status.json, seen by no one), a soft hyphen, a line separator.
      "\u{E0069}\u{E0067}\u{E006E}\u{E006F}\u{E0072}\u{E0065}",
      "\u00ad",
      "\u2028",
    ]) {
      expect([
        bad,
        ...(await refusals("/incidents", { title: `t ${bad} t`, message: "m" })),
      ]).toEqual([bad, 422, "validation_failed", "title"]);
      expect([
        bad,
        ...(await refusals("/incidents", { title: "t", message: `m ${bad} m` })),
      ]).toEqual([bad, 422, "validation_failed", "message"]);
    }
    for (const bad of ["a\nb", "a\tb", "\u202eklat", "\u200b", "\u3164", "\u200d"])
      expect(await refusals("/incidents", { title: bad, message: "m" })).toEqual([
        422,
        "validation_failed",
        "title",
      ]);
    expect(
      (await admin(gw.url, "/incidents", { body: { title: "\u001b[31mred", message: "m" } })).body
        .error.message,
    ).toBe(
      'Invalid body field "title": A title cannot contain control or invisible formatting characters (such as a right-to-left override).',
    );
    expect(
      (await admin(gw.url, "/incidents", { body: { title: "t", message: "\ufffe" } })).body.error
        .message,
    ).toBe('Invalid body field "message": A message cannot contain noncharacters.');
    const opened = await admin(gw.url, "/incidents", {
      body: { title: "Queue backlog — déjà vu 🚧", message: "Line one.\n\tLine two." },
    });
    expect(opened.status).toBe(201);
    expect(opened.body.updates[0].message).toBe("Line one.\n\tLine two.");
    expect(
      await refusals(`/incidents/${opened.body.id}/updates`, {
        status: "monitoring",
        message: "bell \u0007",
      }),
    ).toEqual([422, "validation_failed", "message"]);
    expect(
      await refusals(`/incidents/${opened.body.id}/resolve`, { message: "esc \u001b[0m" }),
    ).toEqual([422, "validation_failed", "message"]);
    const resolved = await admin(gw.url, `/incidents/${opened.body.id}/resolve`, { body: {} });
    expect(resolved.body.updates.map((u: { status: string }) => u.status)).toEqual([
      "investigating",
      "resolved",
    ]);
  });

  it("names a component listed twice once", async () => {
    const opened = await admin(gw.url, "/incidents", {
      body: { title: "Twice", message: "m", components: ["rest-api", "rest-api"] },
    });
    expect([opened.status, opened.body.components]).toEqual([201, ["rest-api"]]);
    await admin(gw.url, `/incidents/${opened.body.id}/resolve`, { body: {} });
  });

  it("refuses an unknown component, a missing admin key, and updates to a resolved incident", async () => {
    expect(
      (
        await admin(gw.url, "/incidents", {
          body: { title: "x", message: "y", components: ["nope"] },
        })
      ).body.error,
    ).toMatchObject({ code: "validation_failed", param: "components" });
    expect(
      (await call(`${gw.url}/api/v1/admin/incidents`, { body: { title: "x", message: "y" } }))
        .status,
    ).toBe(401);
    const opened = await admin(gw.url, "/incidents", { body: { title: "x", message: "y" } });
    await admin(gw.url, `/incidents/${opened.body.id}/resolve`, { body: {} });
    expect(
      (
        await admin(gw.url, `/incidents/${opened.body.id}/updates`, {
          body: { status: "monitoring", message: "z" },
        })
      ).status,
    ).toBe(422);
    expect((await admin(gw.url, "/incidents/inc_unknown/resolve", { body: {} })).status).toBe(404);
  });

  it("opens an incident once per Idempotency-Key: a retry answers 200 with it, another body under the key is 409", async () => {
    const headers = { "idempotency-key": `open-${Date.now()}` };
    const body = { title: "Retried opening", message: "Looking.", impact: "major" };
    const first = await admin(gw.url, "/incidents", { body, headers });
    expect(first.status).toBe(201);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const retry = await admin(gw.url, "/incidents", { body, headers });
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual(first.body);
    // Said as a tool call's replay says it.
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    const other = await admin(gw.url, "/incidents", {
      body: { ...body, message: "Something else." },
      headers,
    });
    expect(other.status).toBe(409);
    expect(other.body.error).toMatchObject({
      code: "idempotency_conflict",
      param: "Idempotency-Key",
    });
    const active = (await call(`${gw.url}/status.json`)).body.incidents.active;
    expect(active.filter((i: { title: string }) => i.title === body.title)).toHaveLength(1);
    // Without a key, each opening is a new incident.
    const a = await admin(gw.url, "/incidents", { body });
    const b = await admin(gw.url, "/incidents", { body });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.id).not.toBe(b.body.id);
  });

  it("honours an opening's Idempotency-Key for IDEMPOTENCY_TTL_SECONDS: past it, the same key and body open a new incident", async () => {
    // An alerting hook keying its openings by alert group: the same alert fires again days later.
    const headers = { "idempotency-key": `alertgroup-${Date.now()}` };
    const body = { title: "Elevated errors", message: "Investigating.", impact: "major" };
    const first = await admin(gw.url, "/incidents", { body, headers });
    expect(first.status).toBe(201);
    await admin(gw.url, `/incidents/${first.body.id}/resolve`, { body: {} });
    // The key is kept as long as a tool call's (24 h here)...
    const redis = new Redis(REDIS_URL);
    try {
      const keys = [];
      for (const key of await redis.keys(`${gw.prefix}{status}:incident-key:*`))
        if ((await redis.get(key)) === first.body.id) keys.push(key);
      expect(keys).toHaveLength(1);
      const ttl = await redis.ttl(keys[0]!);
      expect(ttl).toBeGreaterThan(86_400 - 60);
      expect(ttl).toBeLessThanOrEqual(86_400);
      // ...and that time passes.
      await redis.del(keys[0]!);
    } finally {
      redis.disconnect();
    }
    const again = await admin(gw.url, "/incidents", { body, headers });
    expect([again.status, again.headers.get("idempotent-replayed")]).toEqual([201, null]);
    expect(again.body.id).not.toBe(first.body.id);
    expect(again.body.resolved_at).toBeNull();
    const active = (await call(`${gw.url}/status.json`)).body.incidents.active;
    expect(active.map((i: { id: string }) => i.id)).toContain(again.body.id);
    // The new opening is the one its key now names.
    const retry = await admin(gw.url, "/incidents", { body, headers });
    expect([retry.status, retry.body.id]).toEqual([200, again.body.id]);
  });

  it("posts an update once per Idempotency-Key, even after the incident is resolved; another body under the key is 409", async () => {
    const opened = await admin(gw.url, "/incidents", {
      body: { title: "Retried update", message: "Looking." },
    });
    const path = `/incidents/${opened.body.id}/updates`;
    const headers = { "idempotency-key": `update-${Date.now()}` };
    const body = { status: "identified", message: "Found it." };
    const first = await admin(gw.url, path, { body, headers });
    const retry = await admin(gw.url, path, { body, headers });
    expect([first.status, retry.status]).toEqual([200, 200]);
    expect(retry.body).toEqual(first.body);
    expect([
      first.headers.get("idempotent-replayed"),
      retry.headers.get("idempotent-replayed"),
    ]).toEqual([null, "true"]);
    expect(retry.body.updates.map((u: { status: string }) => u.status)).toEqual([
      "investigating",
      "identified",
    ]);
    // The key is not shown: updates are what the page shows.
    expect(Object.keys(retry.body.updates[1]).sort()).toEqual(["at", "message", "status"]);
    const other = await admin(gw.url, path, { body: { ...body, message: "Another." }, headers });
    expect([other.status, other.body.error?.code]).toEqual([409, "idempotency_conflict"]);
    // A retry whose first attempt landed before the resolution is answered, not refused.
    await admin(gw.url, `/incidents/${opened.body.id}/resolve`, { body: {} });
    const late = await admin(gw.url, path, { body, headers });
    expect([late.status, late.body.updates.length]).toEqual([200, 3]);
  });
});
