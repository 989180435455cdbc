import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installPackedSdk, type InstalledProject } from "../../helpers/sdk-package.js";

/**
 * The TypeScript a user copies — the READMEs' examples and examples/typescript — type-checked
 * against the library installed from its npm pack tarball, with the strictest flags a user may
 * set (the helper's typecheck: --strict, --exactOptionalPropertyTypes, --noUncheckedIndexedAccess).
 */
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/** The README's ```ts blocks (list-indented ones too), dedented, in order. */
const tsBlocks = (markdown: string): string[] =>
  [...markdown.matchAll(/^( *)```ts\n([\s\S]*?)^\1```$/gm)].map(([, indent, body]) =>
    body!.replace(new RegExp(`^${indent}`, "gm"), ""),
  );

/** What the READMEs leave to the reader: a key id and a wallet key, and viem's account maker. */
const GIVEN = `import { privateKeyToAccount } from "viem/accounts";
declare const keyId: string;
declare const key: \`0x\${string}\`;
void privateKeyToAccount;
`;

let project: InstalledProject;
beforeAll(async () => {
  project = await installPackedSdk();
}, 180_000);
afterAll(async () => {
  await project?.remove();
});

describe("the TypeScript users copy compiles against the packed library", () => {
  it("the READMEs' client examples and examples/typescript/*.ts, under --exactOptionalPropertyTypes", async () => {
    const rootBlocks = tsBlocks(await readFile(join(ROOT, "README.md"), "utf8")).filter((b) =>
      b.includes('from "toolgate"'),
    );
    const sdkBlocks = tsBlocks(await readFile(join(ROOT, "sdk/typescript/README.md"), "utf8"));
    expect(rootBlocks).toHaveLength(1);
    expect(sdkBlocks.length).toBeGreaterThanOrEqual(2);
    const examples = (await readdir(join(ROOT, "examples/typescript"))).filter((f) =>
      f.endsWith(".ts"),
    );
    expect(examples).toContain("paid-call.ts");
    const files: Record<string, string> = {
      "readme-root.ts": GIVEN + rootBlocks.join("\n"),
      "readme-sdk.ts": GIVEN + sdkBlocks.join("\n"),
    };
    for (const example of examples)
      files[`example-${example}`] = await readFile(
        join(ROOT, "examples/typescript", example),
        "utf8",
      );
    expect(await project.typecheckFiles(files)).toBe("");
  }, 60_000);

  it("every public option takes an explicit undefined as absent", async () => {
    const errors = await project.typecheck(
      "explicit-undefined.ts",
      `import { Toolgate, verifyWebhook } from "toolgate";
import { aiTools } from "toolgate/ai";
import { openAITools, selectTools } from "toolgate/agents";
const maybe = <T>(): T | undefined => undefined;
const client = new Toolgate({
  apiKey: maybe<string>(), baseUrl: maybe<string>(), wallet: undefined, maxRetries: maybe<number>(),
  timeoutMs: maybe<number>(), fetch: undefined, headers: undefined,
  spending: { maxPerCall: maybe<bigint>(), maxPerSession: undefined, allowedAssets: undefined },
});
await client.tools.call("hash", { text: "x", algorithm: maybe<"md5">() }, { idempotencyKey: maybe<string>(), signal: undefined, timeoutMs: undefined, maxRetries: undefined });
await client.tools.list({ q: maybe<string>(), category: undefined });
const first = await client.account.events({ limit: 1 });
await client.account.events({ cursor: first.next_cursor ?? undefined, type: undefined });
await client.usage.list({ cursor: maybe<string>(), tool: undefined, from: undefined });
await client.usage.analytics({ granularity: undefined, group_by: maybe<"tool">() });
await client.keys.rotate("key_1", { grace_seconds: maybe<number>() });
await client.keys.revoke("key_1", { force: maybe<boolean>() });
await verifyWebhook("{}", {}, "whsec_x", { toleranceSeconds: maybe<number>(), now: undefined });
const subset = { names: maybe<string[]>(), search: undefined, limit: maybe<number>(), includeUnavailable: undefined };
await aiTools(client, subset);
await openAITools(client, subset);
selectTools([], subset);
`,
    );
    expect(errors).toBe("");
  }, 60_000);
});
