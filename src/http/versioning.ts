import type { RequestHandler } from "express";
import { DateTime } from "luxon";
import { z } from "zod";
import { ApiError } from "./errors.js";

/**
 * API versions are data: each has the path prefixes it serves and the day it shipped, and may be
 * marked deprecated (configuration, `API_VERSIONS`). A deprecated version's successor is the next
 * one to ship; the previous version is supported for six months after its successor shipped
 * (specification, "Versioning"). Until then every answer under it carries `Deprecation`
 * (RFC 9745), `Sunset` (RFC 8594) and a `Link` to the changelog; after the sunset it answers
 * 410 `version_retired`, pointing at the same path under the successor.
 */
export const SUPPORT_WINDOW_MONTHS = 6;

const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "a date, YYYY-MM-DD");
export const apiVersionSchema = z.strictObject({
  name: z.string().regex(/^v\d+$/, "a version name like v2"),
  prefixes: z
    .array(z.string().regex(/^\/[a-z0-9/]*[a-z0-9]$/, "a path prefix like /v1 or /api/v1"))
    .min(1),
  released: day,
  /** The day the deprecation was announced (shown in `Deprecation`); needs a successor. */
  deprecated: day.optional(),
});
export type ApiVersion = z.infer<typeof apiVersionSchema>;

/** The versions this code base serves; `API_VERSIONS` (JSON, same shape) replaces the table. */
export const API_VERSIONS: ApiVersion[] = [
  { name: "v1", prefixes: ["/v1", "/api/v1"], released: "2026-11-21" },
];

export const apiVersionsSchema = z
  .array(apiVersionSchema)
  .min(1)
  .superRefine((versions, ctx) => {
    const sorted = [...versions].sort((a, b) => a.released.localeCompare(b.released));
    sorted.forEach((v, i) => {
      if (v.deprecated && !sorted[i + 1])
        ctx.addIssue({
          code: "custom",
          message: `${v.name} is deprecated but no later version has shipped to succeed it`,
        });
    });
  });

export interface VersionLifecycle {
  version: ApiVersion;
  successor: ApiVersion | null;
  deprecatedAt: Date | null;
  /** Six months after the successor shipped; null while the version is not deprecated. */
  sunsetAt: Date | null;
}

const utcDay = (d: string) => DateTime.fromISO(d, { zone: "utc" });

export function lifecycles(versions: ApiVersion[]): VersionLifecycle[] {
  const sorted = [...versions].sort((a, b) => a.released.localeCompare(b.released));
  return sorted.map((version, i) => {
    const successor = sorted[i + 1] ?? null;
    const deprecated = Boolean(version.deprecated && successor);
    return {
      version,
      successor,
      deprecatedAt: deprecated ? utcDay(version.deprecated!).toJSDate() : null,
      sunsetAt: deprecated
        ? utcDay(successor!.released).plus({ months: SUPPORT_WINDOW_MONTHS }).toJSDate()
        : null,
    };
  });
}

/**
 * The version a path is under, and the matching prefix. Compared as written: routing is
 * case-sensitive too (http/router.ts), so `/V1/tools` is under no version and reaches no route.
 */
function versionOf(
  table: VersionLifecycle[],
  path: string,
): { lifecycle: VersionLifecycle; prefix: string } | null {
  for (const lifecycle of table) {
    for (const prefix of lifecycle.version.prefixes) {
      if (path === prefix || path.startsWith(`${prefix}/`)) return { lifecycle, prefix };
    }
  }
  return null;
}

/** The same path under the successor version (the prefix at the same position in its list). */
function successorPath(lifecycle: VersionLifecycle, prefix: string, path: string): string {
  const index = lifecycle.version.prefixes.indexOf(prefix);
  const next =
    lifecycle.successor!.prefixes[Math.min(index, lifecycle.successor!.prefixes.length - 1)]!;
  return `${next}${path.slice(prefix.length)}`;
}

/** Whether answers on `path` carry deprecation headers, or a 410 (a deprecated version's path). */
export function isDeprecatedPath(versions: ApiVersion[], path: string): boolean {
  return (
    versionOf(
      lifecycles(versions).filter((l) => l.deprecatedAt),
      path,
    ) !== null
  );
}

/**
 * A request's path as a Link target: Node's parser lets `>` (and `<`, `^`, backquotes, braces and
 * the like) through in a path, and a `>` would end the target and let the path add parameters and
 * links of its own to the answer's header.
 */
const inLink = (path: string) => path.replace(/[<>"\\^`{|}]/g, (c) => encodeURIComponent(c));

/**
 * `publicBaseUrl` (config) makes the `Link` header's addresses absolute: a reference is resolved
 * against the request's URL, which behind a proxy serving the gateway under a path would leave the
 * path out. The 410's `successor` stays the API path, as routes are named (a client puts its own
 * base URL before it).
 */
export function versioning(
  versions: ApiVersion[],
  publicBaseUrl: string,
  now: () => number = () => Date.now(),
): RequestHandler {
  const changelogUrl = `${publicBaseUrl}/changelog`;
  const table = lifecycles(versions).filter((l) => l.deprecatedAt);
  return (req, res, next) => {
    if (table.length === 0) return next();
    const match = versionOf(table, req.path);
    if (!match) return next();
    const { lifecycle, prefix } = match;
    const successor = successorPath(lifecycle, prefix, req.path);
    res.setHeader("Deprecation", `@${Math.floor(lifecycle.deprecatedAt!.getTime() / 1000)}`);
    res.setHeader("Sunset", lifecycle.sunsetAt!.toUTCString());
    res.setHeader(
      "Link",
      `<${changelogUrl}>; rel="deprecation"; type="text/html", <${publicBaseUrl}${inLink(successor)}>; rel="successor-version"`,
    );
    if (now() < lifecycle.sunsetAt!.getTime()) return next();
    next(
      new ApiError(
        "version_retired",
        `API ${lifecycle.version.name} was retired on ${lifecycle.sunsetAt!.toISOString().slice(0, 10)}; use ${lifecycle.successor!.name}: ${req.method} ${successor}. See ${changelogUrl}.`,
        { details: { successor: successor, successor_version: lifecycle.successor!.name } },
      ),
    );
  };
}
