/**
 * What writing a value as JSON would meet, found without writing it: "cycle" (an object inside
 * itself: JSON.stringify throws), "over" (more than `limit` bytes, counted roughly: strings and
 * keys by length, other values by a typical width), or "ok". It stops at the first of the two.
 *
 * Why: a heavy thread that runs out of heap inside JSON.stringify takes the whole workers process
 * down (V8 cannot unwind from there), so an output is weighed before it is written.
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
    if (typeof item === "string") weight += item.length + 2;
    else if (item === null || typeof item !== "object") weight += 8;
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
