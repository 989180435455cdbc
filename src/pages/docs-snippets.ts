/**
 * The TypeScript and Python client-library snippets shown under each tool on /docs. They call
 * the tool with its worked example through the official libraries (`toolgate` on npm and PyPI),
 * which read the key from TOOLGATE_API_KEY, so a snippet runs as copied.
 */

/** A JSON value written as a Python literal (True/False/None; JSON strings are valid Python). */
export function pythonLiteral(value: unknown, indent = ""): string {
  if (value === null || value === undefined) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "number" || typeof value === "string") return JSON.stringify(value);
  const inner = `${indent}    `;
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    return `[\n${value.map((v) => `${inner}${pythonLiteral(v, inner)},`).join("\n")}\n${indent}]`;
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) return "{}";
  return `{\n${entries.map(([k, v]) => `${inner}${JSON.stringify(k)}: ${pythonLiteral(v, inner)},`).join("\n")}\n${indent}}`;
}

export function typescriptSnippet(tool: string, example: unknown): string {
  return `import { Toolgate } from "toolgate";

const client = new Toolgate(); // reads TOOLGATE_API_KEY (and TOOLGATE_BASE_URL)
const result = await client.tools.call(${JSON.stringify(tool)}, ${JSON.stringify(example, null, 2)});
console.log(result);
`;
}

export function pythonSnippet(tool: string, example: unknown): string {
  return `from toolgate import Toolgate

client = Toolgate()  # reads TOOLGATE_API_KEY (and TOOLGATE_BASE_URL)
result = client.tools.call(${JSON.stringify(tool)}, ${pythonLiteral(example)})
print(result)
`;
}
