import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, expect, it } from "vitest";
import { SDK_TYPES_FILE, generateSdkTypes } from "../../../scripts/sdk-types.js";
import { startGateway, type TestGateway } from "../../helpers/gateway.js";

/** The library's checked-in API types are what a running gateway's /openapi.json generates. */
let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ store: "memory" });
});
afterAll(() => gw?.stop());

it("sdk/typescript/src/generated/openapi.ts matches the running gateway's document (else: npm run sdk:types)", async () => {
  const document = await (await fetch(`${gw.url}/openapi.json`)).json();
  const expected = await generateSdkTypes(document as object);
  expect(
    await readFile(SDK_TYPES_FILE, "utf8"),
    "the API changed: regenerate with `npm run sdk:types`",
  ).toBe(expected);
});
