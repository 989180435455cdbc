-- KEYS: idempotency record   ARGV: fingerprint, lease ms, request id, record ttl ms
-- Claims the key for one execution, or reports what became of the claim already made.
-- The record outlives its lease: a claim whose holder died (lease over, no answer) is taken
-- over with the request id it was charged under, so the retry reuses that debit. The request
-- that holds the claim may begin again (a paid call claims its key before settling its payment,
-- then runs under that claim).
local now = now_ms()
local r = redis.call('HMGET', KEYS[1], 'state', 'fingerprint', 'response', 'request_id', 'lease_until')
if not r[1] then
  redis.call('HSET', KEYS[1], 'state', 'in_progress', 'fingerprint', ARGV[1], 'request_id', ARGV[3], 'lease_until', now + tonumber(ARGV[2]))
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[4]))
  return cjson.encode({ state = 'started', requestId = ARGV[3] })
end
if r[2] ~= ARGV[1] then return cjson.encode({ state = 'conflict' }) end
if r[1] == 'completed' then return cjson.encode({ state = 'completed', response = cjson.decode(r[3]) }) end
if r[4] ~= ARGV[3] and now < (tonumber(r[5]) or 0) then return cjson.encode({ state = 'in_progress' }) end
redis.call('HSET', KEYS[1], 'lease_until', now + tonumber(ARGV[2]))
return cjson.encode({ state = 'started', requestId = r[4] })
