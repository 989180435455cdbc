import { createRequire } from "node:module";

/**
 * A CommonJS package loaded the first time it is used rather than when the gateway starts:
 * start-up loads only what answering `/readyz` needs (the packages of pages, exports, optional
 * features and x402 come later). Synchronous, so it fits code that runs synchronously (reading
 * the configuration, rendering a page); for ES-module-only packages use `import()`.
 *
 *   const papa = lazyRequire<typeof import("papaparse")>("papaparse");
 *   papa().unparse(rows);
 */
const require = createRequire(import.meta.url);

export function lazyRequire<T>(specifier: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(specifier) as T);
}

/** An asynchronous load (an `import()`, a model built from it) made once, on the first call. */
export function lazy<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | null = null;
  return () => (loaded ??= load());
}
