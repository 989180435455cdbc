import { startPostgresCluster } from "./postgres.js";

/**
 * vitest global setup: the books tests need a real PostgreSQL. Unless `TEST_DATABASE_URL` names
 * one, start a private cluster (test/helpers/postgres.ts) for the run and hand its address to
 * every test worker; stopped and removed after the run. It boots in the background (the address is
 * known at once), so a run without books tests does not wait for it.
 */
export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  if (process.env.TEST_DATABASE_URL) return undefined;
  const cluster = await startPostgresCluster();
  process.env.TEST_DATABASE_URL = cluster.url;
  process.stdout.write(`tests: starting a private PostgreSQL at ${cluster.url}\n`);
  return () => cluster.destroy();
}
