import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { MAX_YAML_DEPTH } from "../../src/tools/catalogue/documents.js";
import { readYamlDocuments } from "../../src/workers/tools/yaml-documents.js";

const run = promisify(execFile);

/** What `readYamlDocuments` answers: the documents as JSON, or the refusal's status, code and message. */
function read(source: string): unknown {
  try {
    return readYamlDocuments(source, "yaml").map((d) => d.toJSON());
  } catch (err) {
    const e = err as { status?: number; code?: string; message: string };
    return [e.status, e.code, e.message];
  }
}

describe("reading YAML for the tools", () => {
  it("reads what the yaml package reads, and places errors by line and column", () => {
    for (const source of [
      "a: 1\nb: [1, 2, {c: d}]\n",
      "- x\n- y: |\n    block\n    text\n- 'quoted [ not a collection'\n",
      "--- 1\n--- {a: [b]}\n...\n",
      "key: plain [text] with {braces}\n# a comment [\n",
      "? complex\n: value\n",
      "",
    ])
      expect(read(source)).toEqual(parseAllDocuments(source).map((d) => d.toJSON()));
    expect(read("a: 1\nb: 2\na: 3")).toEqual([
      422,
      "invalid_input",
      "Not valid YAML: Map keys must be unique at line 3, column 1",
    ]);
    expect(read("a: [1, 2\nb: 3")).toEqual([
      422,
      "invalid_input",
      expect.stringMatching(/^Not valid YAML: .* at line \d+, column \d+$/),
    ]);
  });

  it("serves collections nested to the limit and refuses one level more, flow and block alike", () => {
    const flow = (n: number) => `${"[".repeat(n)}x${"]".repeat(n)}`;
    const block = (n: number) => `${"- ".repeat(n)}x`;
    for (const nested of [flow, block]) {
      expect(read(nested(MAX_YAML_DEPTH))).toHaveLength(1);
      expect(read(nested(MAX_YAML_DEPTH + 1))).toEqual([
        422,
        "resource_limit",
        `The YAML nests collections more than ${MAX_YAML_DEPTH} levels deep.`,
      ]);
    }
  });

  it("refuses collections nested 333,000 deep without building their tree: within a 64 MB heap", async () => {
    // The tree of either took 190–365 MB before any check could see it (the heavy pool's
    // process then ran out of memory under load, and the caller got 504 instead of 422).
    const script = `
      import { readYamlDocuments } from "./src/workers/tools/yaml-documents.ts";
      for (const source of ["[".repeat(333000) + "]".repeat(333000), "- ".repeat(333000) + "x"]) {
        try { readYamlDocuments(source, "yaml"); console.log("read"); }
        catch (err) { console.log(err.status, err.code); }
      }`;
    const { stdout } = await run(
      process.execPath,
      ["--max-old-space-size=64", "--import", "tsx", "--input-type=module", "-e", script],
      { cwd: new URL("../..", import.meta.url).pathname },
    );
    expect(stdout.trim().split("\n")).toEqual(["422 resource_limit", "422 resource_limit"]);
  }, 30_000);
});
