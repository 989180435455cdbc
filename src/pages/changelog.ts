import { readFileSync } from "node:fs";
import { Marked } from "marked";
import { esc, layout } from "./respond.js";
import { renderRss } from "./rss.js";

/**
 * /changelog and /changelog.rss, both from CHANGELOG.md: each `## <title> — <YYYY-MM-DD>`
 * heading is one release (one RSS item); an `## Unreleased` section is shown on the page but
 * not announced in the feed until it gets a date.
 */
export interface Release {
  title: string;
  /** null for "Unreleased". */
  date: string | null;
  /** Anchor on /changelog, and the RSS guid's tail. */
  slug: string;
  markdown: string;
}

const HEADING = /^## (.+?)\s*$/;
const DATED = /^(.*?)\s+[—–-]\s+(\d{4}-\d{2}-\d{2})$/;
// A fenced code block's opening line (CommonMark: up to three spaces, then three or more backticks
// or tildes): a "## …" line inside it is code, not a release. A backtick fence's info string has
// no backtick, so "```npm i toolgate``` now works." is inline code, not a fence that would swallow
// every later release.
const FENCE = /^ {0,3}(`{3,}(?=[^`]*$)|~{3,})/;

export function parseChangelog(markdown: string): { intro: string; releases: Release[] } {
  const lines = markdown.split("\n");
  const intro: string[] = [];
  const releases: Release[] = [];
  let fence: string | null = null;
  for (const line of lines) {
    const heading = fence === null ? HEADING.exec(line) : null;
    fence = fenceAfter(fence, line);
    if (heading) {
      const dated = DATED.exec(heading[1]!);
      // A heading whose date is no real day ("2026-13-45") is not dated: in the feed it was an
      // "Invalid Date" pubDate, which no RSS reader accepts.
      const date = dated && isRealDay(dated[2]!) ? dated[2]! : null;
      const title = date ? dated![1]! : heading[1]!;
      const base = slugOf(`${title}${date ? `-${date}` : ""}`);
      let slug = base;
      for (let n = 2; releases.some((r) => r.slug === slug); n++) slug = `${base}-${n}`;
      releases.push({ title, date, slug, markdown: "" });
    } else if (releases.length > 0) releases.at(-1)!.markdown += `${line}\n`;
    else if (!line.startsWith("# ")) intro.push(line);
  }
  return { intro: intro.join("\n").trim(), releases };
}

/** The fence open after `line`: `open` until a line of its character, at least as long, closes it. */
function fenceAfter(open: string | null, line: string): string | null {
  const marker = FENCE.exec(line)?.[1];
  if (open === null) return marker ?? null;
  const closes =
    marker !== undefined &&
    marker[0] === open[0] &&
    marker.length >= open.length &&
    line.trim() === marker;
  return closes ? null : open;
}

/** Whether `yyyyMmDd` is a day of the calendar (not "2026-13-45", nor "2026-02-30", which Date rolls over). */
function isRealDay(yyyyMmDd: string): boolean {
  const day = new Date(`${yyyyMmDd}T00:00:00Z`);
  return !Number.isNaN(day.getTime()) && day.toISOString().slice(0, 10) === yyyyMmDd;
}

/**
 * An anchor from a heading: accents taken off their letters (NFKD, marks dropped: "Ünïcödé" is
 * "unicode", not "n-c-d"), any other run of characters a hyphen. A heading with no Latin letter
 * or digit left (all in another script) is "release"; the caller numbers repeats.
 */
function slugOf(heading: string): string {
  const slug = heading
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-|-$/g, "");
  return slug || "release";
}

export function readChangelog(path = new URL("../../CHANGELOG.md", import.meta.url)): string {
  return readFileSync(path, "utf8");
}

// Raw HTML in the Markdown is shown as text: the changelog is ours, but the page needs no HTML from it.
const marked = new Marked({ gfm: true, renderer: { html: ({ text }) => esc(text) } });
const toHtml = (md: string) => marked.parse(md, { async: false }) as string;

/** `basePath`: config.basePath, before the page's own addresses. */
export function renderChangelogPage(markdown: string, basePath: string): string {
  const { intro, releases } = parseChangelog(markdown);
  const body = releases
    .map(
      (
        r,
      ) => `<section id="${esc(r.slug)}"><h2><a href="#${esc(r.slug)}">${esc(r.title)}</a>${r.date ? ` <time datetime="${r.date}" class="muted">${r.date}</time>` : ' <span class="muted">(not yet released)</span>'}</h2>
${toHtml(r.markdown)}</section>`,
    )
    .join("\n");
  return layout({
    title: "Toolgate changelog",
    basePath,
    head: `<link rel="alternate" type="application/rss+xml" title="Toolgate changelog" href="${basePath}/changelog.rss">`,
    body: `<h1>Changelog</h1>${toHtml(intro)}<p>Follow it in a feed reader: <a href="${basePath}/changelog.rss">${basePath}/changelog.rss</a> (RSS 2.0).</p>${body}`,
  });
}

export function renderChangelogRss(markdown: string, baseUrl: string): string {
  const { releases } = parseChangelog(markdown);
  return renderRss({
    title: "Toolgate changelog",
    link: `${baseUrl}/changelog`,
    self: `${baseUrl}/changelog.rss`,
    description: "Releases and announcements of the Toolgate API, including deprecations.",
    items: releases
      .filter((r) => r.date)
      .map((r) => ({
        title: `${r.title} (${r.date})`,
        link: `${baseUrl}/changelog#${r.slug}`,
        guid: `${baseUrl}/changelog#${r.slug}`,
        date: new Date(`${r.date}T00:00:00Z`),
        description: toHtml(r.markdown),
      })),
  });
}
