import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";

/**
 * The README's MCP Inspector command, run as written (with a real key and this gateway's
 * address) through npx on the Node that runs the tests: it must name an exact version, since
 * npm on Node 20 otherwise picks 0.15.0, which has no --header.
 */
const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
const command = /<!-- mcp-inspector -->\s*```sh\n(.*)\n```/.exec(readme)?.[1] ?? "";

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ store: "memory" });
});
afterAll(() => gw.stop());

it("names an exact Inspector version", () => {
  expect(command).toMatch(/^npx -y @modelcontextprotocol\/inspector@\d+\.\d+\.\d+ --cli /);
});

it("calls a tool through the gateway when run as the README says", async () => {
  const { key } = await fundedAccount(gw.url, 100, "starter");
  // The README's words, split as the shell would: double-quoted words kept whole, $KEY expanded.
  const words = [...command.matchAll(/"([^"]*)"|(\S+)/g)].map((m) =>
    (m[1] ?? m[2]!).replace("$KEY", key).replace("http://localhost:8402", gw.url),
  );
  const output = await new Promise<string>((resolve, reject) =>
    execFile(
      words[0]!,
      words.slice(1),
      { timeout: 240_000, env: { ...process.env, npm_config_update_notifier: "false" } },
      (err, stdout, stderr) =>
        err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout),
    ),
  );
  expect(JSON.parse(output).structuredContent).toEqual({
    algorithm: "sha256",
    encoding: "hex",
    digest: "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
  });
  expect(
    await (await fetch(`${gw.url}/api/v1/account`, { headers: { "x-api-key": key } })).json(),
  ).toMatchObject({ credits: 99 });
}, 300_000);
