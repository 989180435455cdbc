-- KEYS: idempotency record   ARGV: fingerprint, lease ms
-- Claims the key for one execution, or reports what became of the claim already made.
local r = redis.call('HMGET', KEYS[1], 'state', 'fingerprint', 'response')
if not r[1] then
  redis.call('HSET', KEYS[1], 'state', 'in_progress', 'fingerprint', ARGV[1])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
  return cjson.encode({ state = 'started' })
end
if r[2] ~= ARGV[1] then return cjson.encode({ state = 'conflict' }) end
if r[1] == 'completed' then return cjson.encode({ state = 'completed', response = cjson.decode(r[3]) }) end
return cjson.encode({ state = 'in_progress' })
