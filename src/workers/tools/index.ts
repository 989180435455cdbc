import { TOOLS } from "../../tools/catalogue/index.js";
import * as ai from "./ai.js";
import * as data from "./data.js";
import * as geo from "./geo.js";
import { HEAVY_PROXIES } from "./heavy-proxies.js";
import type { ToolImplementation } from "./implementation.js";
import * as security from "./security.js";
import * as units from "./units.js";
import * as utilities from "./utilities.js";
import * as web from "./web.js";
import webSearch from "./web-search.js";

const isImplementation = (value: unknown): value is ToolImplementation =>
  typeof value === "object" && value !== null && "definition" in value && "run" in value;

/**
 * Every implementation the modules of this folder export (the heavy tools as proxies onto the
 * heavy pool): the catalogue (tools/catalogue/index.ts) is the one list of tools, so this one is
 * gathered, not written again, and checked against it below. documents.ts, code.ts and images.ts
 * are left out: every tool of theirs runs in the heavy pool, whose threads load them on a first call
 * (tools/heavy.ts); loading their packages here (ExcelJS, pdf-lib, linkedom, Prettier…) took
 * half a second of every start for nothing. A tool of theirs moved out of the heavy pool fails
 * the check below at start-up until its module is listed here.
 */
const implementations = [
  // A heavy tool's implementation runs only in the heavy pool's threads (tools/heavy.ts): here it is its proxy.
  ...[ai, web, data, utilities, units, security, geo].flatMap((module) =>
    Object.values(module).filter(
      (value) => isImplementation(value) && value.definition.pool !== "heavy",
    ),
  ),
  webSearch,
  ...HEAVY_PROXIES,
] as ToolImplementation[];

/** Every tool of the catalogue, by canonical name; start-up fails if one lacks an implementation. */
export const IMPLEMENTATIONS = new Map<string, ToolImplementation>();
for (const impl of implementations) {
  if (IMPLEMENTATIONS.has(impl.definition.name))
    throw new Error(`tool ${impl.definition.name} is implemented twice`);
  IMPLEMENTATIONS.set(impl.definition.name, impl);
}
for (const tool of TOOLS) {
  const impl = IMPLEMENTATIONS.get(tool.name);
  if (!impl) throw new Error(`tool ${tool.name} has no worker implementation`);
  if (impl.definition !== tool) throw new Error(`tool ${tool.name} is implemented twice`);
}
if (IMPLEMENTATIONS.size !== TOOLS.length)
  throw new Error("a worker implementation is not in the catalogue");
