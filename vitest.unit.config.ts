import { defineConfig } from "vitest/config";

/**
 * `npm run test:unit`: the pure logic alone (no Redis, no chain), for a
 * contributor's edit-test loop. The same files also run in `npm test`.
 */
export default defineConfig({
  test: {
    include: ["test/unit/**/*.test.ts"],
    // One test starts the gateway process to see it refuse a bad production configuration.
    testTimeout: 30_000,
    reporters: ["default", "./test/helpers/summary-reporter.ts"],
  },
});
