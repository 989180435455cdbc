import { RE2JS } from "re2js";

/**
 * A bound, decided when a schema is registered, on what validating one input with it can cost.
 * Ajv validates in the gateway's event loop with no time limit, so a schema someone else wrote
 * must not be able to make one value cost much: this walk follows the schema's `$ref`s and counts,
 * for a single place in the input (a value at one path), the schema keywords Ajv may check there —
 * `allOf`/`anyOf`/`oneOf`/`not`/`if`/`then`/`else`/`$ref`/`dependentSchemas` apply their
 * subschemas at the same place, so they add up (and multiply when nested), while `properties`,
 * `items` and the like step into the value's members, each a place of its own. It refuses:
 *
 * - a `$ref` cycle that comes back to a schema at the same place (Ajv recurses until the stack
 *   runs out);
 * - more than MAX_CHECKS_PER_VALUE keyword entries at one place, counting those a recursion
 *   through members adds at each level of nesting (a recursion that applies itself twice to one
 *   member doubles per level: refused however deep the input may be);
 * - `uniqueItems` that would compare items pairwise (Ajv's O(n²) deep equality) without a
 *   `maxItems` of at most MAX_UNIQUE_ITEMS; items typed as scalars are hashed, in linear time.
 *
 * Counts are memoised per subschema, so the walk is linear in the schema for the in-place part,
 * with a few rounds more for a recursion through members. Only refs inside the schema (`#…`)
 * are followed; `$id`s are dropped before (json-schema.ts), so no other ref could resolve.
 */
export const MAX_CHECKS_PER_VALUE = 2_000;
export const MAX_UNIQUE_ITEMS = 64;
const MAX_ROUNDS = 100;
/**
 * The most member counts the walk may add up, over all its rounds: it runs in the event loop when
 * a schema is registered, and a 32 KB schema of 600 `$ref`s to one node of 1,500 properties took
 * 500 ms before this bound (each `$ref` copies what its target's members cost).
 */
export const MAX_WALK_STEPS = 50_000;

const IN_PLACE_ONE = ["not", "if", "then", "else"] as const;
const IN_PLACE_MANY = ["allOf", "anyOf", "oneOf"] as const;
const SCALARS = new Set(["string", "number", "integer", "boolean", "null"]);

type Schema = Record<string, unknown>;
const isObject = (v: unknown): v is Schema =>
  v !== null && typeof v === "object" && !Array.isArray(v);

interface Node {
  schema: Schema;
  where: string;
  /** Subschemas applied at the same place (with multiplicity). */
  inPlace: Node[];
  /** The refs those came from, for the cycle's message. */
  refs: (string | null)[];
  properties: Map<string, Node>;
  patterns: { re: RE2JS | null; node: Node }[];
  additional: Node | null;
  unevaluatedProperties: Node | null;
  propertyNames: Node | null;
  prefix: Node[];
  rest: Node | null;
  contains: Node | null;
  unevaluatedItems: Node | null;
  weight: number;
  /** Keyword entries checked at this node's place, in-place subschemas included. */
  here: number;
  /** The most checked at any one place at or below this node's (the fixpoint). */
  most: number;
}

/** What the members of a value cost, per member: by property name, or by index. */
interface Members {
  byName: Map<string, number>;
  otherName: number;
  names: number;
  byIndex: number[];
  otherIndex: number;
}

export class SchemaCostError extends Error {}

/**
 * The most keyword entries checked at one place of an input validated with `root`, or
 * SchemaCostError saying why it could cost too much (more than `limit`).
 */
export function checkSchemaCost(root: Schema, limit = MAX_CHECKS_PER_VALUE): number {
  const nodes = new Map<Schema, Node>();
  const anchors = new Map<string, Schema[]>();
  collectAnchors(root, anchors, 0);

  const resolve = (ref: string, where: string, dynamic: boolean): Schema[] => {
    if (!ref.startsWith("#"))
      throw new SchemaCostError(
        `${where}: $ref "${ref}" is not inside the schema (only "#…" refs are followed)`,
      );
    let fragment: string;
    try {
      fragment = decodeURIComponent(ref.slice(1));
    } catch {
      throw new SchemaCostError(`${where}: $ref "${ref}" is not a valid URI fragment`);
    }
    if (fragment === "" || fragment.startsWith("/")) {
      let target: unknown = root;
      for (const raw of fragment.split("/").slice(1)) {
        const part = raw.replace(/~1/g, "/").replace(/~0/g, "~");
        target =
          target !== null && typeof target === "object"
            ? (target as Record<string, unknown>)[part]
            : undefined;
      }
      if (!isObject(target)) return [];
      return dynamic ? [target, ...(anchors.get(`$${fragment}`) ?? [])] : [target];
    }
    // `#name`: an `$anchor`, or for `$dynamicRef` any `$dynamicAnchor` of that name (which one
    // applies depends on the path taken: all are counted).
    return anchors.get(dynamic ? `$${fragment}` : fragment) ?? [];
  };

  const nodeOf = (schema: unknown, where: string): Node | null => {
    if (!isObject(schema)) return null; // true/false, or nothing: no work to speak of
    const known = nodes.get(schema);
    if (known) return known;
    const node: Node = {
      schema,
      where,
      inPlace: [],
      refs: [],
      properties: new Map(),
      patterns: [],
      additional: null,
      unevaluatedProperties: null,
      propertyNames: null,
      prefix: [],
      rest: null,
      contains: null,
      unevaluatedItems: null,
      weight: weightOf(schema),
      here: 0,
      most: 0,
    };
    nodes.set(schema, node);
    const add = (child: Node | null, ref: string | null = null) => {
      if (child) {
        node.inPlace.push(child);
        node.refs.push(ref);
      }
    };
    for (const key of IN_PLACE_ONE) add(nodeOf(schema[key], `${where}/${key}`));
    for (const key of IN_PLACE_MANY) {
      const list = schema[key];
      if (Array.isArray(list))
        list.forEach((s, i) => {
          add(nodeOf(s, `${where}/${key}/${i}`));
        });
    }
    for (const key of ["dependentSchemas", "dependencies"]) {
      const map = schema[key];
      if (isObject(map))
        for (const [name, s] of Object.entries(map)) add(nodeOf(s, `${where}/${key}/${name}`));
    }
    for (const [key, dynamic] of [
      ["$ref", false],
      ["$dynamicRef", true],
    ] as const) {
      const ref = schema[key];
      if (typeof ref !== "string") continue;
      for (const target of resolve(ref, `${where}/${key}`, dynamic))
        add(nodeOf(target, ref), `${key} "${ref}" at ${where}`);
    }
    if (isObject(schema.properties))
      for (const [name, s] of Object.entries(schema.properties)) {
        const child = nodeOf(s, `${where}/properties/${name}`);
        if (child) node.properties.set(name, child);
      }
    if (isObject(schema.patternProperties))
      for (const [pattern, s] of Object.entries(schema.patternProperties)) {
        const child = nodeOf(s, `${where}/patternProperties/${pattern}`);
        if (child) node.patterns.push({ re: compiled(pattern), node: child });
      }
    node.additional = nodeOf(schema.additionalProperties, `${where}/additionalProperties`);
    node.unevaluatedProperties = nodeOf(
      schema.unevaluatedProperties,
      `${where}/unevaluatedProperties`,
    );
    node.propertyNames = nodeOf(schema.propertyNames, `${where}/propertyNames`);
    const prefix = Array.isArray(schema.prefixItems)
      ? schema.prefixItems
      : Array.isArray(schema.items)
        ? schema.items
        : [];
    node.prefix = prefix.map((s, i) => nodeOf(s, `${where}/prefixItems/${i}`)).filter(isNode);
    node.rest = Array.isArray(schema.items)
      ? nodeOf(schema.additionalItems, `${where}/additionalItems`)
      : nodeOf(schema.items, `${where}/items`);
    node.contains = nodeOf(schema.contains, `${where}/contains`);
    node.unevaluatedItems = nodeOf(schema.unevaluatedItems, `${where}/unevaluatedItems`);
    checkUniqueItems(schema, where);
    return node;
  };

  const top = nodeOf(root, "#")!;
  // Members before the schemas that hold them, mostly: a chain without recursion settles in one round.
  const all = [...nodes.values()].reverse();

  // In place: a DAG (a cycle is refused), each node's count memoised.
  const state = new Map<Node, "open" | "done">();
  const countHere = (node: Node): number => {
    const seen = state.get(node);
    if (seen === "done") return node.here;
    if (seen === "open") return Number.NaN;
    state.set(node, "open");
    let here = node.weight;
    node.inPlace.forEach((child, i) => {
      const count = countHere(child);
      if (Number.isNaN(count))
        throw new SchemaCostError(
          `${node.refs[i] ?? child.where} comes back to ${child.where} at the same place in the input (a $ref cycle that never steps into a property or item recurses without end)`,
        );
      here += count;
    });
    node.here = Math.min(here, limit + 1);
    state.set(node, "done");
    if (node.here > limit)
      throw new SchemaCostError(
        `${node.where}: one value of the input would be checked against more than ${limit} schema keywords (its allOf/anyOf/oneOf/not/if/$ref branches multiply); simplify it`,
      );
    return node.here;
  };
  for (const node of all) countHere(node);

  // Through members: `most` is a fixpoint (a recursion through properties or items loops back),
  // approached from below; if it still grows after MAX_ROUNDS, or past the bound, the recursion
  // multiplies the checks with the input's depth.
  for (const node of all) node.most = node.here;
  let steps = 0;
  for (let round = 0; ; round++) {
    const members = new Map<Node, Members>();
    const membersOf = (node: Node): Members => {
      const known = members.get(node);
      if (known) return known;
      let sum = ownMembers(node);
      for (const child of node.inPlace) {
        const other = membersOf(child);
        steps +=
          sum.byName.size + other.byName.size + sum.byIndex.length + other.byIndex.length + 1;
        if (steps > MAX_WALK_STEPS)
          throw new SchemaCostError(
            `${top.where}: it is too intricate to bound what one input costs (its $refs bring in too many properties, over and over); simplify it`,
          );
        sum = merge(sum, other);
      }
      members.set(node, sum);
      return sum;
    };
    let changed = false;
    for (const node of all) {
      const most = Math.min(Math.max(node.here, largest(membersOf(node))), limit + 1);
      if (most !== node.most) {
        node.most = most;
        changed = true;
      }
      if (most > limit)
        throw new SchemaCostError(
          `${node.where}: its $ref recursion applies a schema more than once to the same member, so the checks multiply with each level of the input's nesting (more than ${limit} for one value); simplify it`,
        );
    }
    if (!changed) break;
    if (round >= MAX_ROUNDS)
      throw new SchemaCostError(
        `${top.where}: its $ref recursion is too intricate to bound what one input costs; simplify it`,
      );
  }
  return Math.max(...all.map((node) => node.most));
}

function ownMembers(node: Node): Members {
  const most = (n: Node | null) => n?.most ?? 0;
  const unevaluatedProperties = most(node.unevaluatedProperties);
  const byName = new Map<string, number>();
  for (const [name, child] of node.properties) {
    let sum = child.most + unevaluatedProperties;
    for (const { re, node: p } of node.patterns) if (!re || re.test(name)) sum += p.most;
    byName.set(name, sum);
  }
  // An unlisted name: the patterns it matches (all, at worst), or additionalProperties if none.
  const patterns = node.patterns.reduce((sum, p) => sum + p.node.most, 0);
  const everyItem = most(node.contains) + most(node.unevaluatedItems);
  return {
    byName,
    otherName: Math.max(patterns, most(node.additional)) + unevaluatedProperties,
    names: most(node.propertyNames),
    byIndex: node.prefix.map((child) => child.most + everyItem),
    otherIndex: most(node.rest) + everyItem,
  };
}

function merge(a: Members, b: Members): Members {
  const byName = new Map<string, number>();
  for (const name of new Set([...a.byName.keys(), ...b.byName.keys()]))
    byName.set(name, (a.byName.get(name) ?? a.otherName) + (b.byName.get(name) ?? b.otherName));
  const length = Math.max(a.byIndex.length, b.byIndex.length);
  const byIndex: number[] = [];
  for (let i = 0; i < length; i++)
    byIndex.push((a.byIndex[i] ?? a.otherIndex) + (b.byIndex[i] ?? b.otherIndex));
  return {
    byName,
    otherName: a.otherName + b.otherName,
    names: a.names + b.names,
    byIndex,
    otherIndex: a.otherIndex + b.otherIndex,
  };
}

const largest = (m: Members): number =>
  Math.max(m.otherName, m.names, m.otherIndex, ...m.byName.values(), ...m.byIndex);

const isNode = (n: Node | null): n is Node => n !== null;

/**
 * What checking this schema once costs, in keyword entries: each keyword, and each entry of a
 * list or map it holds (`enum` values, `required` names, `properties`…: Ajv loops over them on
 * every check). A pairwise `uniqueItems` counts its `maxItems` (each item is compared with all).
 */
function weightOf(schema: Schema): number {
  let weight = 1;
  for (const value of Object.values(schema)) {
    weight += 1;
    if (Array.isArray(value)) weight += value.length;
    else if (isObject(value)) weight += Object.keys(value).length;
  }
  if (schema.uniqueItems === true && !hashable(schema) && typeof schema.maxItems === "number")
    weight += schema.maxItems;
  return weight;
}

/** Ajv hashes items for `uniqueItems` when `items` says they are scalars only (uniqueItems.ts `canOptimize`). */
function hashable(schema: Schema): boolean {
  if (!isObject(schema.items)) return false;
  const type = schema.items.type;
  const types = Array.isArray(type) ? type : [type];
  return types.length > 0 && types.every((t) => typeof t === "string" && SCALARS.has(t));
}

function checkUniqueItems(schema: Schema, where: string): void {
  if (schema.uniqueItems !== true || hashable(schema)) return;
  const max = schema.maxItems;
  if (typeof max !== "number" || max > MAX_UNIQUE_ITEMS)
    throw new SchemaCostError(
      `${where}: uniqueItems compares every item with every other, so it needs "maxItems" of at most ${MAX_UNIQUE_ITEMS}, or "items" typed as scalars only (string, number, integer, boolean, null)`,
    );
}

function compiled(pattern: string): RE2JS | null {
  try {
    return RE2JS.compile(pattern);
  } catch {
    return null; // Ajv refuses it first; if not, counted as matching every name
  }
}

/** `$anchor` names, and `$dynamicAnchor` names under `$`, to the schemas that declare them. */
function collectAnchors(value: unknown, anchors: Map<string, Schema[]>, depth: number): void {
  if (value === null || typeof value !== "object" || depth > 64) return;
  if (isObject(value)) {
    for (const [key, prefix] of [
      ["$anchor", ""],
      ["$dynamicAnchor", "$"],
    ] as const) {
      const name = value[key];
      if (typeof name === "string") {
        const list = anchors.get(prefix + name) ?? [];
        list.push(value);
        anchors.set(prefix + name, list);
        if (prefix === "$") {
          // A $dynamicAnchor is also a plain anchor.
          const plain = anchors.get(name) ?? [];
          plain.push(value);
          anchors.set(name, plain);
        }
      }
    }
  }
  for (const child of Object.values(value)) collectAnchors(child, anchors, depth + 1);
}
