import { defineConfig } from "vitest/config";

/**
 * `npm run test:unit`: the pure logic alone (no Redis, no chain, no gateway process), for a
 * contributor's edit-test loop. The same files also run in `npm test`.
 */
export default defineConfig({
  test: {
    include: ["test/unit/**/*.test.ts"],
    reporters: ["default", "./test/helpers/summary-reporter.ts"],
  },
});
