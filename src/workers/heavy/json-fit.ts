/**
 * The bytes a string takes in the heap once written as JSON: its quotes, six characters for each
 * control character (`\u0001`), two for a quote or backslash, and twice the lot when one character
 * is beyond Latin-1 (V8 then holds the whole text two bytes a character).
 */
export function jsonStringBytes(text: string): number {
  let length = text.length + 2;
  let wide = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20) length += 5;
    else if (c === 0x22 || c === 0x5c) length += 1;
    else if (c > 0xff) wide = true;
  }
  return wide ? length * 2 : length;
}

/**
 * What writing a value as JSON would meet, found without writing it: "cycle" (an object inside
 * itself: JSON.stringify throws), "over" (more than `limit` bytes of heap: strings as written,
 * escapes included, keys by length, other values at their widest), or "ok". It stops at the
 * first of the two.
 *
 * Why: a heavy process that runs out of heap inside JSON.stringify dies (V8 cannot unwind from
 * there) after seconds of last-resort collections; an output weighed first is refused at once.
 */
export function jsonFit(value: unknown, limit: number): "ok" | "cycle" | "over" {
  let weight = 0;
  /** The objects on the path from the root to the one being walked (a cycle returns to one). */
  const onPath = new Set<object>();
  // Depth-first, without recursion (outputs may nest deeper than the stack): an object is
  // entered, its children walked, then it is left (the `leave` marker takes it off the path).
  const stack: { value: unknown; leave?: true }[] = [{ value }];
  while (stack.length > 0) {
    const next = stack.pop()!;
    const item = next.value;
    if (next.leave) {
      onPath.delete(item as object);
      continue;
    }
    if (typeof item === "string") weight += jsonStringBytes(item);
    else if (item === null || typeof item !== "object") weight += 24;
    else if (ArrayBuffer.isView(item)) weight += item.byteLength * 4;
    else if (item instanceof Date) weight += 26;
    else {
      if (onPath.has(item)) return "cycle";
      onPath.add(item);
      stack.push({ value: item, leave: true });
      weight += 2;
      if (Array.isArray(item)) for (const child of item) stack.push({ value: child });
      else
        for (const [key, child] of Object.entries(item)) {
          weight += key.length + 4;
          stack.push({ value: child });
        }
    }
    if (weight > limit) return "over";
  }
  return "ok";
}

/**
 * An integer read exactly (a bigint) as JSON can carry it: a number when a double holds it
 * exactly, else its decimal text. Most JSON readers, JavaScript's among them, would round a longer
 * number silently; text is visibly not a number.
 */
export function jsonInteger(value: bigint): number | string {
  const double = Number(value);
  return Number.isSafeInteger(double) ? double : value.toString();
}
