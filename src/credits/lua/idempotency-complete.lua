-- KEYS: idempotency record, the account's kept-answer bytes
-- ARGV: the stored answer (JSON), how long it is kept (seconds), the account's limit (bytes)
-- A script rather than a MULTI block: the same one round trip at 0.3–0.6× the Redis client's CPU
-- (one command to build and one reply to parse instead of four; npm run bench:redis-writes), on
-- every call that carries a key.
-- Only onto the claim it completes, as the memory store does: a record gone meanwhile (its claim
-- forgotten) written back here had no fingerprint, and every later request with the key was 409.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local ttl = tonumber(ARGV[2])
local size = #ARGV[1]
-- The account's kept answers, in bytes, by the hour they expire (rounded up): what is still
-- held is the sum of the hours not yet past, whatever each answer's own lifetime.
local now = now_ms()
local now_hour = math.floor(now / 3600000)
local expires_hour = math.floor((now + ttl * 1000 + 3599999) / 3600000)
local held = 0
local hours = redis.call('HGETALL', KEYS[2])
for i = 1, #hours, 2 do
  if tonumber(hours[i]) < now_hour then
    redis.call('HDEL', KEYS[2], hours[i])
  else
    held = held + tonumber(hours[i + 1])
  end
end
redis.call('EXPIRE', KEYS[1], ttl)
if held + size > tonumber(ARGV[3]) then
  -- Served and charged, but not kept: a retry with the key is told so rather than run again.
  redis.call('HSET', KEYS[1], 'state', 'not_kept')
  return 2
end
redis.call('HSET', KEYS[1], 'state', 'completed', 'response', ARGV[1])
redis.call('HINCRBY', KEYS[2], expires_hour, size)
if redis.call('TTL', KEYS[2]) < ttl + 3600 then redis.call('EXPIRE', KEYS[2], ttl + 3600) end
return 1
