import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    // Hooks start gateway processes (see spawnService's own 60 s bound).
    hookTimeout: 90_000,
    // Multi-process tests spawn gateways; two cores are what CI has.
    maxWorkers: 2,
    reporters: ["default", "./test/helpers/summary-reporter.ts"],
    globalSetup: [
      "./test/helpers/redis-setup.ts",
      "./test/helpers/postgres-setup.ts",
      "./test/helpers/tls-setup.ts",
      "./test/helpers/sdk-package-setup.ts",
    ],
  },
});
