-- KEYS: a value   ARGV: the value as it was read, the value to write
-- Writes only if the value is still the one read: a change made from a stale read is refused, and
-- the caller reads again (src/status/redis-store.ts changeIncident).
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
