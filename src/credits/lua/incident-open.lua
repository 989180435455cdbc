-- KEYS: the incident, the ids of incidents by creation time, the ids of open incidents
-- ARGV: the incident as JSON, its creation time, its id
-- Opens an incident once: when one is kept under its id already (an opening retried with the same
-- Idempotency-Key, src/status/incident-routes.ts), it stays as it is and is answered; else nil.
local kept = redis.call('GET', KEYS[1])
if kept then return kept end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
redis.call('SADD', KEYS[3], ARGV[3])
return false
