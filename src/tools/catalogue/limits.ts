/**
 * How long a tool's texts may be, tied to the body limit so every limit a tool's schema publishes
 * can be reached: a text at its maximum (in ASCII) fits in the smallest body the gateway accepts,
 * and one character more is answered 422 `validation_failed` naming the field, not 413 first.
 * Limits count characters (UTF-16 code units, as JSON Schema's maxLength); the body limit counts
 * bytes, so a text of many multi-byte characters meets the body limit earlier.
 */

/** The smallest `BODY_LIMIT_BYTES` the configuration accepts (and its default): 1 MiB. */
export const MIN_BODY_LIMIT_BYTES = 1_048_576;

/** The longest text a tool takes in one field; a tool whose call always carries two long texts (text-diff) gives each half. */
export const MAX_TEXT_CHARS = 1_000_000;
