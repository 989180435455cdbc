import { XMLParser, XMLValidator } from "fast-xml-parser";
import { describe, expect, it } from "vitest";
import {
  parseChangelog,
  readChangelog,
  renderChangelogPage,
  renderChangelogRss,
} from "../../src/pages/changelog.js";

/**
 * CHANGELOG.md read into releases: a "## … — date" line inside a fenced code block is code, not a
 * release; a date that is no real day does not reach the feed as "Invalid Date"; anchors keep
 * accented letters and stay unique.
 */
const CRAFTED = `# Changelog

## Fixes & <improvements> — 2026-11-30

- Migrate with:

\`\`\`sh
## back up first — 2026-11-29
redis-cli save
\`\`\`

~~~~
## still code — 2026-11-28
~~~
## still code, the fence above was too short — 2026-11-27
~~~~

## Bad date — 2026-13-45

text

## Rolled over — 2026-02-30

## Ünïcödé — 2026-11-20

## Unicode — 2026-11-20

## リリース
`;

describe("parseChangelog", () => {
  const { releases } = parseChangelog(CRAFTED);

  it("reads a heading inside a fenced code block as the release's code", () => {
    expect(releases.map((r) => r.title)).toEqual([
      "Fixes & <improvements>",
      "Bad date — 2026-13-45",
      "Rolled over — 2026-02-30",
      "Ünïcödé",
      "Unicode",
      "リリース",
    ]);
    expect(releases[0]!.markdown).toContain("## back up first — 2026-11-29\nredis-cli save\n");
    expect(releases[0]!.markdown).toContain("## still code, the fence above was too short");
  });

  it("reads a line that starts with inline triple-backtick code as text, not as a fence", () => {
    const inline = parseChangelog(
      "## 1.1 — 2026-12-02\n\n```npm i toolgate``` now works.\n\n## 1.0 — 2026-12-01\n\nFirst.\n",
    ).releases;
    expect(inline.map((r) => r.title)).toEqual(["1.1", "1.0"]);
    expect(inline[1]!.markdown).toContain("First.");
  });

  it("dates a release only with a real day: an impossible date leaves the heading undated", () => {
    expect(releases.map((r) => r.date)).toEqual([
      "2026-11-30",
      null,
      null,
      "2026-11-20",
      "2026-11-20",
      null,
    ]);
    const xml = renderChangelogRss(CRAFTED, "https://api.example");
    expect(XMLValidator.validate(xml)).toBe(true);
    expect(xml).not.toContain("Invalid Date");
    const items = new XMLParser({ isArray: (name) => name === "item" }).parse(xml).rss.channel.item;
    expect(items.map((i: { title: string }) => i.title)).toEqual([
      "Fixes & <improvements> (2026-11-30)",
      "Ünïcödé (2026-11-20)",
      "Unicode (2026-11-20)",
    ]);
  });

  it("keeps accented letters in anchors, names a heading of another script, and never repeats an anchor", () => {
    expect(releases.map((r) => r.slug)).toEqual([
      "fixes-improvements-2026-11-30",
      "bad-date-2026-13-45",
      "rolled-over-2026-02-30",
      "unicode-2026-11-20",
      "unicode-2026-11-20-2",
      "release",
    ]);
    const page = renderChangelogPage(CRAFTED, "");
    const ids = [...page.matchAll(/<section id="([^"]*)"/g)].map((m) => m[1]);
    expect(ids).toEqual(releases.map((r) => r.slug));
  });

  it("reads the shipped CHANGELOG.md with real dates and unique anchors", () => {
    const shipped = parseChangelog(readChangelog()).releases;
    expect(shipped.length).toBeGreaterThanOrEqual(2);
    for (const r of shipped) {
      // Every heading but "Unreleased" carries a date, and it is a real day.
      if (r.title !== "Unreleased")
        expect([r.title, r.date]).toEqual([r.title, expect.any(String)]);
      if (r.date) expect(new Date(`${r.date}T00:00:00Z`).toISOString().slice(0, 10)).toBe(r.date);
    }
    expect(new Set(shipped.map((r) => r.slug)).size).toBe(shipped.length);
  });
});
