/**
 * `npm start`: with NODE_ENV=production, the compiled build (`npm run build` → dist/), run by plain
 * Node; otherwise the TypeScript sources through tsx, so that `npm ci && npm start` works on a fresh
 * checkout with no build step. Both run in this process (no extra child to forward signals to);
 * `WEB_CONCURRENCY` forks re-run this same file, so they take the same branch.
 */
const production = process.env.NODE_ENV === "production";
if (!production) (await import("tsx/esm/api")).register();
const entry = production ? "../dist/src/main.js" : "../src/main.ts";
const { run } = await import(new URL(entry, import.meta.url).href).catch((err) => {
  if (production && err?.code === "ERR_MODULE_NOT_FOUND") {
    process.stderr.write(
      "NODE_ENV=production runs the compiled build: run `npm run build` first (dist/ is missing).\n",
    );
    process.exit(1);
  }
  throw err;
});
run();
