/**
 * What `npm start` and `npm run books:check` load: with NODE_ENV=production the compiled build
 * (`npm run build` → dist/, what the production image holds: no tsx there), run by plain Node;
 * otherwise the TypeScript sources through tsx, so that both work on a fresh checkout with no
 * build step. Paths are relative to this file.
 */
export async function launch(source, compiled) {
  const production = process.env.NODE_ENV === "production";
  if (!production) (await import("tsx/esm/api")).register();
  const entry = production ? compiled : source;
  return import(new URL(entry, import.meta.url).href).catch((err) => {
    if (production && err?.code === "ERR_MODULE_NOT_FOUND") {
      process.stderr.write(
        "NODE_ENV=production runs the compiled build: run `npm run build` first (dist/ is missing).\n",
      );
      process.exit(1);
    }
    throw err;
  });
}
