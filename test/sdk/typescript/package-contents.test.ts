import { execFile } from "node:child_process";
import { access, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { build, type Metafile } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installPackedSdk, type InstalledProject } from "../../helpers/sdk-package.js";

/** What the npm pack tarball of sdk/typescript holds, file by file. */
const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

let project: InstalledProject;
let packed: string[];
beforeAll(async () => {
  project = await installPackedSdk();
  packed = (await run("tar", ["-tzf", project.tarball])).stdout.trim().split("\n");
}, 180_000);
afterAll(async () => {
  await project?.remove();
});

describe("the npm tarball", () => {
  it("ships the repository's MIT LICENSE, as package.json's license says", async () => {
    expect(packed).toContain("package/LICENSE");
    const license = await readFile(join(ROOT, "LICENSE"), "utf8");
    expect(license).toMatch(/^MIT License\n\nCopyright \(c\) 2026 Toolgate contributors\n/);
    expect(await readFile(join(project.dir, "node_modules/toolgate/LICENSE"), "utf8")).toBe(
      license,
    );
    const pkg = JSON.parse(await readFile(join(ROOT, "sdk/typescript/package.json"), "utf8"));
    expect(pkg.license).toBe("MIT");
  });

  it("holds no compiled file whose source is gone (prepack builds into an emptied dist)", async () => {
    const compiled = packed.filter((f) => f.startsWith("package/dist/"));
    expect(compiled).toContain("package/dist/index.js");
    const orphans: string[] = [];
    for (const file of compiled) {
      const source = file
        .replace(/^package\/dist\//, "sdk/typescript/src/")
        .replace(/\.js$|\.d\.ts$/, ".ts");
      if (
        !source.endsWith(".ts") ||
        !(await access(join(ROOT, source)).then(
          () => true,
          () => false,
        ))
      )
        orphans.push(file);
    }
    expect(orphans).toEqual([]);
  });

  it("its README and the Python package's link to nothing by a relative path (it breaks on a registry's page)", async () => {
    for (const readme of ["sdk/typescript/README.md", "sdk/python/README.md"]) {
      const text = await readFile(join(ROOT, readme), "utf8");
      const relative = [...text.matchAll(/\]\(([^)]*)\)/g)]
        .map((m) => m[1]!)
        .filter((target) => !/^(https?:|mailto:|#)/.test(target));
      expect([readme, relative]).toEqual([readme, []]);
    }
  });

  it("bundled for a browser with an API key only, loads neither viem nor @x402 until a wallet pays", async () => {
    const result = await build({
      stdin: {
        contents: `import { Toolgate } from "toolgate";
const client = new Toolgate({ apiKey: "tg_live_x", baseUrl: "https://toolgate.example" });
console.log(await client.tools.list());`,
        resolveDir: project.dir,
        loader: "js",
      },
      bundle: true,
      minify: true,
      splitting: true,
      format: "esm",
      platform: "browser",
      outdir: join(project.dir, "bundle"),
      metafile: true,
      write: false,
      logLevel: "silent",
    });
    const outputs: Metafile["outputs"] = result.metafile.outputs;
    // The entry chunk and the chunks it imports statically: what loads before any payment.
    const first = new Set<string>();
    const pending = [Object.keys(outputs).find((o) => outputs[o]!.entryPoint)!];
    for (let out = pending.pop(); out !== undefined; out = pending.pop()) {
      if (first.has(out)) continue;
      first.add(out);
      for (const i of outputs[out]!.imports)
        if (i.kind === "import-statement") pending.push(i.path);
    }
    const inputsOf = (outs: Iterable<string>) =>
      [...outs].flatMap((o) => Object.keys(outputs[o]!.inputs));
    const payment = (input: string) => /node_modules\/(viem|@x402)\//.test(input);
    expect(inputsOf(first).filter(payment)).toEqual([]);
    const bytes = [...first].reduce((sum, o) => sum + outputs[o]!.bytes, 0);
    expect(bytes).toBeLessThan(40_000); // ~17 KB; the x402 client and viem are ~390 KB more
    // They are still in the bundle, in a chunk loaded when a wallet client first pays.
    expect(inputsOf(Object.keys(outputs)).some(payment)).toBe(true);
  });
});
