import { describe, expect, it } from "vitest";
import { renderStatusPage } from "../../src/pages/status.js";
import type { ComponentReport, StatusReport } from "../../src/status/report-schema.js";

/**
 * The status page's uptime is floored to two decimals, never rounded up: "100.00%" for a
 * component whose checks failed (99.996%) told the reader there were no failures.
 */
const today = new Date().toISOString().slice(0, 10);
const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);

function page(days: ComponentReport["days"], uptime: number | null): string {
  const report: StatusReport = {
    status: "operational",
    history_available: true,
    updated_at: new Date().toISOString(),
    check_interval_ms: 30_000,
    components: [
      {
        id: "rest-api",
        name: "REST API",
        group: "API",
        state: "operational",
        detail: null,
        checked_at: new Date().toISOString(),
        uptime_90d: uptime,
        days,
        latency_ms: { p50: 1, p95: 2, p99: 3, source: "checks", samples: 1 },
      },
    ],
    incidents: { active: [], recent: [], as_of: new Date().toISOString() },
  };
  return renderStatusPage(report, { autoRefresh: false, basePath: "" });
}
const uptimeCell = (html: string) => /<td>([^<]*)<div aria-label="uptime per day/.exec(html)?.[1];

describe("status page uptime", () => {
  it("floors a share with failures, however close to 100%, and shows 100% only without any", () => {
    // 24,999 of 25,000: 99.996%, which rounding showed as 100.00%.
    const html = page([{ day: today, ok: 24_999, total: 25_000 }], 99.996);
    expect(uptimeCell(html)).toBe("99.99%");
    expect(html).toContain(`title="${today}: 99.99% of 25000 checks"`);
    // Over two days, from the counts: 2,999,999 of 3,000,000 (status.json rounds it to 100).
    expect(
      uptimeCell(
        page(
          [
            { day: yesterday, ok: 1_000_000, total: 1_000_000 },
            { day: today, ok: 1_999_999, total: 2_000_000 },
          ],
          100,
        ),
      ),
    ).toBe("99.99%");
    expect(uptimeCell(page([{ day: today, ok: 1, total: 3 }], 33.3333))).toBe("33.33%");
    expect(uptimeCell(page([{ day: today, ok: 2, total: 3 }], 66.6667))).toBe("66.66%");
    expect(uptimeCell(page([{ day: today, ok: 29, total: 100 }], 29))).toBe("29.00%");
    expect(uptimeCell(page([{ day: today, ok: 0, total: 5 }], 0))).toBe("0.00%");
    expect(uptimeCell(page([{ day: today, ok: 5, total: 5 }], 100))).toBe("100%");
    expect(uptimeCell(page([], null))).toBe("—");
  });
});
