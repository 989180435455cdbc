import type { Ajv } from "ajv";
import addFormats from "ajv-formats";

/** Callers' schemas use `format` (email, uri, date-time…) and expect it checked, not ignored. */
export function withFormats<T extends Ajv>(ajv: T): T {
  addFormats.default(ajv);
  return ajv;
}
