-- KEYS: the payment's record, the set of payments not yet settled   ARGV: payment id, record (JSON)
-- The first caller claims the authorization and, in the same step, enters it in the open set,
-- so a process that dies while settling leaves it there for a reconciler to finish.
-- Returns false for the claimer, the existing record (JSON) for everyone after.
local existing = redis.call('GET', KEYS[1])
if existing then return existing end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[1])
return false
