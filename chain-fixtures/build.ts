/**
 * Compiles chain-fixtures/contracts/*.sol with the solc npm package and writes the committed
 * build: chain-fixtures/build/<Contract>.json (ABI + bytecode) and contracts-abi/eip3009-token.json
 * (the ABI the gateway uses). `npm run build:contracts`; a test checks the committed build
 * matches a fresh compile.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import solc from "solc";
import { isMainModule } from "../src/lib/main-module.js";

const root = fileURLToPath(new URL("..", import.meta.url));

export function compileContracts(): Record<string, { abi: unknown[]; bytecode: `0x${string}` }> {
  const sources = Object.fromEntries(
    readdirSync(`${root}chain-fixtures/contracts`)
      .filter((f) => f.endsWith(".sol"))
      .map((f) => [f, { content: readFileSync(`${root}chain-fixtures/contracts/${f}`, "utf8") }]),
  );
  const input = {
    language: "Solidity",
    sources,
    settings: {
      optimizer: { enabled: true, runs: 200 },
      outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts: Record<
      string,
      Record<string, { abi: unknown[]; evm: { bytecode: { object: string } } }>
    >;
  };
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length) throw new Error(errors.map((e) => e.formattedMessage).join("\n"));
  const built: Record<string, { abi: unknown[]; bytecode: `0x${string}` }> = {};
  for (const file of Object.values(output.contracts)) {
    for (const [name, c] of Object.entries(file))
      if (c.evm.bytecode.object)
        built[name] = { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
  }
  return built;
}

export function buildJson(name: string, c: { abi: unknown[]; bytecode: string }): string {
  return `${JSON.stringify({ contractName: name, compiler: `solc ${solc.version()}`, abi: c.abi, bytecode: c.bytecode }, null, 2)}\n`;
}

if (isMainModule(import.meta.url)) {
  const built = compileContracts();
  for (const [name, c] of Object.entries(built))
    writeFileSync(`${root}chain-fixtures/build/${name}.json`, buildJson(name, c));
  writeFileSync(
    `${root}contracts-abi/eip3009-token.json`,
    `${JSON.stringify(built.TestUSDC!.abi, null, 2)}\n`,
  );
  console.log(`built ${Object.keys(built).join(", ")} with solc ${solc.version()}`);
}
