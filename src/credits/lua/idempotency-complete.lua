-- KEYS: idempotency record   ARGV: the stored answer (JSON), how long it is kept (seconds)
-- A script rather than a MULTI block: the same one round trip at 0.3–0.6× the Redis client's CPU
-- (one command to build and one reply to parse instead of four; npm run bench:redis-writes), on
-- every call that carries a key.
-- Only onto the claim it completes, as the memory store does: a record gone meanwhile (its claim
-- forgotten) written back here had no fingerprint, and every later request with the key was 409.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'state', 'completed', 'response', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
