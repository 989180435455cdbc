import { unitConvert as unitConvertTool } from "../../tools/catalogue/utilities.js";
import type { Unit } from "mathjs";
import { WorkerError } from "../errors.js";
import { implement } from "./implementation.js";
import { lazy } from "../../lib/lazy-require.js";

/**
 * unit-convert, apart from the other utilities: mathjs takes about 1-2 s to load, which the
 * utilities that run in the heavy pool's threads (regex-test, json-schema-validate, text-diff,
 * qr-code) should not pay in each fresh thread. It is loaded on the first unit-convert call, not
 * when the workers start: it was most of their start-up time (and of every process that imports
 * them, the tests included), for one tool of the catalogue.
 */
const mathjs = lazy(() => import("mathjs"));

export const unitConvert = implement(unitConvertTool, {
  async run(input) {
    const { unit } = await mathjs();
    // Each half of the conversion blames its own field: an unknown `from` is not the `to`'s fault.
    let amount: Unit;
    try {
      amount = unit(input.value, input.from);
    } catch (err) {
      throw new WorkerError(
        422,
        "invalid_input",
        `Cannot convert from ${input.from}: ${(err as Error).message}`,
        "from",
      );
    }
    let result: number;
    try {
      result = amount.toNumber(input.to);
    } catch (err) {
      throw new WorkerError(
        422,
        "invalid_input",
        `Cannot convert ${input.from} to ${input.to}: ${(err as Error).message}`,
        "to",
      );
    }
    // 1e308 km in nm is Infinity, which JSON cannot carry (it failed the answer: 502).
    if (!Number.isFinite(result))
      throw new WorkerError(
        422,
        "invalid_input",
        `${input.value} ${input.from} in ${input.to} is beyond the range of a number.`,
        "value",
      );
    return { value: input.value, from: input.from, to: input.to, result };
  },
});
