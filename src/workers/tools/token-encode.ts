import type { Tiktoken } from "js-tiktoken/lite";

/**
 * js-tiktoken's `encode(text, "all")`, token for token, with its byte-pair merge done in
 * O(n log n) instead of O(n²). js-tiktoken rescans every pair of a piece after each merge, and a
 * piece is a whole run of letters: 10,000 letters without a space took 11 s, 40,000 three
 * minutes, so a long word, a hash or minified text ran the call into its deadline. Here the
 * candidate pairs wait in a heap (lowest rank first, then leftmost: js-tiktoken's order), and a
 * merge only re-ranks its two neighbours.
 */
export function encodeTokens(encoder: Tiktoken, text: string): number[] {
  const { patStr, rankMap, specialTokens } = internalsOf(encoder);
  const specials = new RegExp(Object.keys(specialTokens).map(escapeRegex).join("|"), "g");
  const pieces = new RegExp(patStr, "ug");
  const utf8 = new TextEncoder();
  const known = new Map<number, number>();
  const ids: number[] = [];
  for (let start = 0; ; ) {
    specials.lastIndex = start;
    const special = specials.exec(text);
    for (const [piece] of text.substring(start, special?.index ?? text.length).matchAll(pieces)) {
      const bytes = utf8.encode(piece);
      const whole = rankMap.get(bytes.join(","));
      if (whole !== undefined) ids.push(whole);
      else mergePairs(bytes, rankMap, known, ids);
    }
    if (!special) return ids;
    ids.push(specialTokens[special[0]]!);
    start = special.index + special[0].length;
  }
}

interface Internals {
  patStr: string;
  rankMap: Map<string, number>;
  specialTokens: Record<string, number>;
}

/** The encoder's pattern and tables (fields js-tiktoken marks internal: checked, so an upgrade that renames them fails loudly). */
function internalsOf(encoder: Tiktoken): Internals {
  const found = encoder as unknown as Partial<Internals>;
  if (
    typeof found.patStr !== "string" ||
    !(found.rankMap instanceof Map) ||
    typeof found.specialTokens !== "object"
  )
    throw new Error("js-tiktoken's encoder no longer has patStr, rankMap and specialTokens");
  return found as Internals;
}

const escapeRegex = (s: string) => s.replace(/[\\^$*+?.()|[\]{}]/g, "\\$&");

/** A pair waits in the heap as one number, rank × SLOT + the first byte of its left part: rank first, then leftmost. */
const SLOT = 2 ** 26;
/** Pairs already ranked, by their two tokens' ids (left × ID_SLOT + right); -1 when the pair is no token. */
const ID_SLOT = 2 ** 21;

/**
 * Appends the tokens of one piece: its bytes merged pair by pair, the lowest-ranked (then
 * leftmost) pair first. Every part is a token, so a pair is known by its two tokens' ids, and
 * each distinct pair's bytes are looked up once per call (`known`).
 */
function mergePairs(
  bytes: Uint8Array,
  ranks: Map<string, number>,
  known: Map<number, number>,
  ids: number[],
): void {
  const n = bytes.length;
  if (n >= SLOT) throw new RangeError("a piece of 64 MB or more");
  // The parts, as a linked list of their first byte: part `i` is bytes [i, next[i]), token id[i].
  const next = Int32Array.from({ length: n }, (_, i) => i + 1);
  const prev = Int32Array.from({ length: n }, (_, i) => i - 1);
  const id = Int32Array.from(bytes, (b) => ranks.get(String(b))!);
  const alive = new Uint8Array(n).fill(1);
  // The rank last queued for the pair starting at each part (-1: none): an entry of another rank is stale.
  const queued = new Int32Array(n).fill(-1);
  const heap = new MinHeap();
  /** Queues the pair of part `i` and the part after it, if their bytes together are a token. */
  const offer = (i: number) => {
    if (i < 0) return;
    queued[i] = -1;
    const j = next[i]!;
    if (j >= n) return;
    const pair = id[i]! * ID_SLOT + id[j]!;
    let rank = known.get(pair);
    if (rank === undefined) {
      rank = ranks.get(bytes.subarray(i, next[j]).join(",")) ?? -1;
      known.set(pair, rank);
    }
    if (rank < 0) return;
    queued[i] = rank;
    heap.push(rank * SLOT + i);
  };
  for (let i = 0; i < n - 1; i++) offer(i);
  while (heap.size > 0) {
    const entry = heap.pop();
    const i = entry % SLOT;
    const rank = (entry - i) / SLOT;
    if (!alive[i] || queued[i] !== rank) continue; // a neighbour merged since: not this pair any more
    const j = next[i]!;
    alive[j] = 0;
    id[i] = rank;
    next[i] = next[j]!;
    if (next[i]! < n) prev[next[i]!] = i;
    offer(prev[i]!);
    offer(i);
  }
  for (let i = 0; i < n; i = next[i]!) ids.push(id[i]!);
}

/** A binary min-heap of numbers. */
class MinHeap {
  private readonly items: number[] = [];

  get size(): number {
    return this.items.length;
  }

  push(value: number): void {
    const items = this.items;
    let at = items.length;
    items.push(value);
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (items[parent]! <= value) break;
      items[at] = items[parent]!;
      at = parent;
    }
    items[at] = value;
  }

  pop(): number {
    const items = this.items;
    const top = items[0]!;
    const last = items.pop()!;
    if (items.length === 0) return top;
    let at = 0;
    for (;;) {
      const left = 2 * at + 1;
      if (left >= items.length) break;
      const right = left + 1;
      const child = right < items.length && items[right]! < items[left]! ? right : left;
      if (items[child]! >= last) break;
      items[at] = items[child]!;
      at = child;
    }
    items[at] = last;
    return top;
  }
}
