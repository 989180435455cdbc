-- KEYS: the payment's record, the set of payments not yet settled, its call's index
-- ARGV: payment id, record (JSON), how long the call's index is kept (ms; "" for a payment not indexed by its call)
-- The first caller claims the authorization and, in the same step, enters it in the open set,
-- so a process that dies while settling leaves it there for a reconciler to finish.
-- A paid call under a key the client chose is indexed by that call: a later claim for the same
-- call under another authorization gets the record of the payment the call already has, while
-- that record lasts (a released payment let go of the call). The index holds that record's key,
-- which lies in this slot.
-- Returns false for the claimer, the existing record (JSON) for everyone after.
local existing = redis.call('GET', KEYS[1])
if existing then return existing end
if ARGV[3] ~= '' then
  local other = redis.call('GET', KEYS[3])
  if other and other ~= KEYS[1] then
    local record = redis.call('GET', other)
    if record then return record end
  end
  redis.call('SET', KEYS[3], KEYS[1], 'PX', ARGV[3])
end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[1])
return false
