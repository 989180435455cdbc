/**
 * A child process for the nonce-sequence test: takes COUNT nonces from the relayer sequence NAME
 * in the Redis store under PREFIX, all at once, starting the sequence at START if it does not
 * exist yet (as a gateway does with the chain's pending count), and prints them as JSON.
 */
import { PERIOD_MS } from "../../src/accounts/tiers.js";
import { tierLimits } from "../../src/store/index.js";
import { createRedisStore } from "../../src/store/redis.js";
import { REDIS_URL } from "./redis.js";

const [prefix, name, count, start] = process.argv.slice(2) as [string, string, string, string];
const store = createRedisStore({
  url: REDIS_URL,
  keyPrefix: prefix,
  tiers: tierLimits(),
  periodMs: PERIOD_MS,
});
const take = async () =>
  (await store.takeRelayerNonce(name, null)) ??
  (await store.takeRelayerNonce(name, Number(start)))!;
const nonces = await Promise.all(Array.from({ length: Number(count) }, take));
process.stdout.write(JSON.stringify(nonces));
await store.close();
