import { afterAll, describe, expect, it } from "vitest";
import { createMemoryStatusStore } from "../../src/status/memory-store.js";
import { createRedisStatusStore } from "../../src/status/redis-store.js";
import type { Incident, StatusStore } from "../../src/status/store.js";
import { dropPrefix, REDIS_URL, uniquePrefix } from "../helpers/redis.js";

/**
 * Both status stores honour an incident opening's Idempotency-Key for the time given and no
 * longer: a retry within it answers the incident the key opened, one after it opens a new one.
 */
const prefix = uniquePrefix("incident-keys");
afterAll(() => dropPrefix(prefix));

const opening = (id: string): Incident => ({
  id,
  title: "t",
  impact: "minor",
  components: [],
  createdAt: Date.now(),
  resolvedAt: null,
  updates: [{ status: "investigating", message: "m", at: Date.now() }],
});

describe.each([
  ["redis", () => createRedisStatusStore({ url: REDIS_URL, keyPrefix: prefix, cluster: false })],
  ["memory", createMemoryStatusStore],
] as const)("the %s status store", (_name, create) => {
  it("keeps an opening's Idempotency-Key for its time, then opens a new incident under it", async () => {
    const store: StatusStore = create();
    try {
      const key = { key: `k${Date.now()}${_name}`, ttlSeconds: 1 };
      const suffix = `${_name}${Date.now()}`;
      expect(await store.saveIncident(opening(`inc_a${suffix}`), key)).toBeNull();
      expect((await store.saveIncident(opening(`inc_b${suffix}`), key))?.id).toBe(`inc_a${suffix}`);
      expect(await store.getIncident(`inc_b${suffix}`)).toBeNull();
      await new Promise((r) => setTimeout(r, 1100));
      expect(await store.saveIncident(opening(`inc_c${suffix}`), key)).toBeNull();
      expect((await store.saveIncident(opening(`inc_d${suffix}`), key))?.id).toBe(`inc_c${suffix}`);
      // Without a key, every opening is kept.
      expect(await store.saveIncident(opening(`inc_e${suffix}`))).toBeNull();
      expect(await store.saveIncident(opening(`inc_f${suffix}`))).toBeNull();
      expect((await store.openIncidents()).map((i) => i.id).sort()).toEqual(
        [`inc_a${suffix}`, `inc_c${suffix}`, `inc_e${suffix}`, `inc_f${suffix}`].sort(),
      );
    } finally {
      await store.close();
    }
  });
});
