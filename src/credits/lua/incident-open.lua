-- KEYS: the incident, the ids of incidents by creation time, the ids of open incidents, the id of
--       the incident the opening's Idempotency-Key opened (a key never written when it sent none)
-- ARGV: the incident as JSON, its creation time, its id, how long the Idempotency-Key is kept in
--       seconds ('0' when the opening sent none)
-- Opens an incident once per Idempotency-Key while the key is kept (src/status/incident-routes.ts):
-- when the key opened one already, nothing is written and that incident's id is answered; else nil.
local keyed = tonumber(ARGV[4]) > 0
if keyed then
  local kept = redis.call('GET', KEYS[4])
  if kept then return kept end
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
redis.call('SADD', KEYS[3], ARGV[3])
if keyed then redis.call('SET', KEYS[4], ARGV[3], 'EX', ARGV[4]) end
return false
