/**
 * Calls a tool with an API key. Run: TOOLGATE_API_KEY=tg_live_… npx tsx keyed-call.ts
 * (TOOLGATE_BASE_URL defaults to http://localhost:8402), in an ES module project
 * ("type": "module" in package.json) for its top-level await.
 */
import { Toolgate, ToolgateError } from "toolgate";

const client = new Toolgate(); // TOOLGATE_API_KEY and TOOLGATE_BASE_URL from the environment

try {
  const { digest } = await client.tools.call("hash", { text: "hello world", algorithm: "sha256" });
  console.log(`sha256("hello world") = ${digest}`);
  const account = await client.account.get();
  console.log(`${account.credits} credits left on ${account.id} (${account.tier})`);
} catch (error) {
  if (!(error instanceof ToolgateError)) throw error;
  console.error(`${error.status} ${error.code}: ${error.message} [${error.requestId}]`);
  process.exitCode = 1;
}
