-- KEYS: a value   ARGV: the value as it was read, the value to write
-- Writes only if the value is still the one read: a change made from a stale read is refused, and
-- the caller reads again or gives up (src/status/redis-store.ts changeIncident; an e-mail claim
-- taken over from a dead sign-up, src/store/accounts/redis.ts claimEmail: one claimant wins).
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
