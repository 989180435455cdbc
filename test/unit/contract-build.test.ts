import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { buildJson, compileContracts } from "../../chain-fixtures/build.js";

describe("the committed token build", () => {
  it("is what the committed Solidity compiles to (npm run build:contracts)", () => {
    const built = compileContracts();
    for (const name of ["TestUSDC", "TestSmartWallet"]) {
      expect(
        readFileSync(new URL(`../../chain-fixtures/build/${name}.json`, import.meta.url), "utf8"),
      ).toBe(buildJson(name, built[name]!));
    }
    expect(
      JSON.parse(
        readFileSync(new URL("../../contracts-abi/eip3009-token.json", import.meta.url), "utf8"),
      ),
    ).toEqual(built.TestUSDC!.abi);
  }, 60_000);
});
