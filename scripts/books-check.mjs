/**
 * `npm run books:check`: as scripts/start.mjs chooses, with NODE_ENV=production the compiled build
 * (`npm run build` → dist/src/books/check-command.js, what the production image holds: no tsx
 * there), run by plain Node; otherwise the TypeScript source through tsx, so that it works on a
 * checkout with no build step. The check itself is src/books/check-command.ts.
 */
const production = process.env.NODE_ENV === "production";
if (!production) (await import("tsx/esm/api")).register();
const entry = production ? "../dist/src/books/check-command.js" : "../src/books/check-command.ts";
const { run } = await import(new URL(entry, import.meta.url).href).catch((err) => {
  if (production && err?.code === "ERR_MODULE_NOT_FOUND") {
    process.stderr.write(
      "NODE_ENV=production runs the compiled build: run `npm run build` first (dist/ is missing).\n",
    );
    process.exit(1);
  }
  throw err;
});
await run();
