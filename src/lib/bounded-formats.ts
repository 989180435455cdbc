import { z } from "zod";

/**
 * Zod string formats whose length is checked before their format. `z.url().max(n)` runs the
 * format's check first, on the whole string, and `.max` only after: `new URL()` of a host of one
 * long label of distinct CJK characters is superlinear (its punycode), so 200,000 characters held
 * the gateway's event loop for seconds before the length refused them. Here the length check
 * comes first and aborts, so the format is only checked on a string that fits. The answers are
 * today's: same issue codes and messages (an `error` given names every refusal, as z.url's did),
 * and the same published schema (`format` and `maxLength`).
 */

type UrlParams = { protocol?: RegExp; error?: string };

/** An absolute URL of at most `max` characters: z.url(params).max(max), length first. */
export const boundedUrl = (max: number, params: UrlParams = {}) =>
  z
    .string({ error: params.error })
    .max(max, { abort: true, error: params.error })
    .check(z.url(params));

/** An e-mail address of at most `max` characters: z.email().max(max), length first. */
export const boundedEmail = (max: number) => z.string().max(max, { abort: true }).check(z.email());
