import { afterAll, beforeAll, expect, it } from "vitest";
import { startGateway, type TestGateway } from "../helpers/gateway.js";

/**
 * The status page's own checks (POST /mcp, GET /readyz every interval) are left out of the
 * request metrics, or they would be most of a quiet door's figures; they are told by a mark only
 * the process knows. A client that sends the header itself, from loopback (a same-host proxy
 * without TRUST_PROXY forwards everyone from there), is counted like anyone.
 */
let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ store: "memory", env: { STATUS_CHECK_INTERVAL_MS: "100" } });
});
afterAll(() => gw?.stop());

const countOf = async (route: string, method: string) => {
  const text = await fetch(`${gw.url}/metrics`).then((r) => r.text());
  const line = text
    .split("\n")
    .find(
      (l) =>
        l.startsWith("toolgate_http_requests_total{") &&
        l.includes(`route="${route}"`) &&
        l.includes(`method="${method}"`),
    );
  return line ? Number(line.split(" ").pop()) : 0;
};

it("leaves the status checks out of the request metrics, and counts a client that sends their header", async () => {
  // Several intervals of checks, each POSTing /mcp: none counted. The first lands within an
  // interval when the machine keeps up, later under load: waited for.
  const mcpCheckedAt = async () => {
    const status = await fetch(`${gw.url}/status.json`).then((r) => r.json());
    return status.components.find((c: { id: string }) => c.id === "mcp").checked_at;
  };
  for (const deadline = Date.now() + 20_000; !(await mcpCheckedAt()) && Date.now() < deadline; )
    await new Promise((r) => setTimeout(r, 100));
  await new Promise((r) => setTimeout(r, 1000));
  expect(await mcpCheckedAt()).not.toBeNull(); // the checks ran
  expect(await countOf("/mcp", "POST")).toBe(0);

  const before = await countOf("/v1/tools", "GET");
  for (const value of ["1", "yes", "0".repeat(32)])
    await fetch(`${gw.url}/v1/tools`, { headers: { "x-toolgate-status-probe": value } }).then((r) =>
      r.arrayBuffer(),
    );
  expect((await countOf("/v1/tools", "GET")) - before).toBe(3);
});
