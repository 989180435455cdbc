/**
 * Choosing which tools an agent is handed: all of them, a list of names (aliases allowed), or a
 * ranked search over names, titles and descriptions — so a model is not given the whole
 * catalogue at once. The Python library's `select_tools` makes the same choice, word for word.
 */
import type { Toolgate } from "../client.js";
import { ToolgateError } from "../errors.js";
import type { ToolDescription } from "../types.js";

export interface ToolSubset {
  /**
   * Exactly these tools (canonical names or aliases), in this order, even when the gateway lists
   * one as unavailable (you asked for it by name). A name the catalogue does not have throws
   * `invalid_argument`, naming the closest tool name: it is almost always a typo.
   */
  names?: string[] | undefined;
  /**
   * Words matched (whole words) against names and aliases (weight 3), titles (2) and descriptions
   * (1); the best `limit` tools are kept, best first.
   */
  search?: string | undefined;
  /** At most this many tools. Default 5 for a search, all otherwise. */
  limit?: number | undefined;
  /** Keep tools the gateway lists as unavailable in a search or the whole catalogue. Default false. */
  includeUnavailable?: boolean | undefined;
}

export const DEFAULT_SEARCH_LIMIT = 5;

/** Runs of Unicode letters, marks and digits (NFKC, lower-cased), as the gateway's own search reads words. */
const words = (text: string) =>
  new Set(
    text
      .normalize("NFKC")
      .toLowerCase()
      .match(/[\p{L}\p{M}\p{N}]+/gu) ?? [],
  );

function score(tool: ToolDescription, query: Set<string>): number {
  const names = words([tool.name, ...tool.aliases].join(" "));
  const title = words(tool.title);
  const description = words(tool.description);
  let total = 0;
  for (const w of query)
    total += 3 * Number(names.has(w)) + 2 * Number(title.has(w)) + Number(description.has(w));
  return total;
}

/**
 * How many single-character edits (insert, delete, replace, swap two neighbours) turn `a` into
 * `b`: a swap counts once, as "hsah" is one slip from "hash".
 */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  return d[a.length]![b.length]!;
}

/** The catalogue name (or alias) a mistyped name most likely meant: a third of it wrong at most. */
export function closestToolName(name: string, known: string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(name.toLowerCase(), candidate);
    if (distance <= Math.max(1, Math.floor(name.length / 3)) && (!best || distance < best.distance))
      best = { name: candidate, distance };
  }
  return best?.name;
}

const invalid = (message: string) =>
  new ToolgateError({ status: 0, code: "invalid_argument", message });

export function selectTools(
  catalogue: ToolDescription[],
  subset: ToolSubset = {},
): ToolDescription[] {
  const { names, search, limit, includeUnavailable = false } = subset;
  if (names !== undefined && search !== undefined) throw invalid("Pass names or search, not both.");
  if (limit !== undefined && !(Number.isInteger(limit) && limit > 0))
    throw invalid(`limit must be a positive integer, not ${JSON.stringify(limit)}.`);
  if (names !== undefined) {
    const byName = new Map<string, ToolDescription>();
    for (const tool of catalogue) for (const n of [tool.name, ...tool.aliases]) byName.set(n, tool);
    const unknown = names.filter((n) => !byName.has(n));
    if (unknown.length > 0)
      throw invalid(
        `No such tool: ${unknown
          .map((n) => {
            const guess = closestToolName(n, [...byName.keys()]);
            return guess
              ? `${JSON.stringify(n)} (did you mean ${JSON.stringify(guess)}?)`
              : JSON.stringify(n);
          })
          .join(", ")}.`,
      );
    const chosen = [...new Set(names.map((n) => byName.get(n)!))];
    return chosen.slice(0, limit);
  }
  const pool = catalogue.filter((tool) => includeUnavailable || tool.available);
  if (search === undefined) return pool.slice(0, limit);
  const query = words(search);
  return pool
    .map((tool, index) => ({ tool, index, score: score(tool, query) }))
    .filter((t) => t.score > 0)
    .sort((a, b) => b.score - a.score || a.index - b.index)
    .slice(0, limit ?? DEFAULT_SEARCH_LIMIT)
    .map((t) => t.tool);
}

export async function catalogueFor(
  client: Toolgate,
  subset?: ToolSubset,
): Promise<ToolDescription[]> {
  return selectTools(await client.tools.list(), subset);
}
