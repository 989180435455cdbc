import { execFile } from "node:child_process";
import { access, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
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
});
