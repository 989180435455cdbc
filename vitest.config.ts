import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    // Hooks start gateway processes (see spawnService's own 60 s bound).
    hookTimeout: 90_000,
    // Multi-process tests spawn gateways; two cores are what CI has.
    maxWorkers: 2,
    // Each worker runs its files one after another in one process, importing the sources once
    // rather than once per file (that import was 300 s of CPU over a run). The tests share no
    // module state: every dependency is passed in, each test builds its own gateway under its own
    // Redis prefix, and a test that changes the process (fake timers, env) puts it back.
    isolate: false,
    reporters: ["default", "./test/helpers/summary-reporter.ts"],
    globalSetup: [
      "./test/helpers/redis-setup.ts",
      "./test/helpers/postgres-setup.ts",
      "./test/helpers/tls-setup.ts",
      "./test/helpers/sdk-package-setup.ts",
      "./test/helpers/compiled-setup.ts",
    ],
  },
});
