import type { Reporter, TestModule } from "vitest/node";

/**
 * Ends the run with one plain line, `tests: N passed, N failed, N skipped`, that any CI can read;
 * a file that failed outside its tests (a hook or an import: its tests never ran) is added as
 * `, N files failed outside their tests`, so such a run never reads as "0 failed".
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    let brokenFiles = 0;
    for (const module of modules) {
      let failedHere = 0;
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === "passed") passed++;
        else if (state === "failed") failedHere++;
        else skipped++;
      }
      failed += failedHere;
      if (module.state() === "failed" && failedHere === 0) brokenFiles++;
    }
    const broken = brokenFiles > 0 ? `, ${brokenFiles} files failed outside their tests` : "";
    process.stdout.write(
      `\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped${broken}\n`,
    );
  }
}
