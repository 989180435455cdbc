-- KEYS: idempotency record
-- Ends the lease of a claim in progress, keeping its request id (idempotency/index.ts
-- releaseIdempotent). Nothing on a record gone or completed: HSET alone would write a record
-- without a fingerprint, or reopen an answered one.
if redis.call('HGET', KEYS[1], 'state') ~= 'in_progress' then return 0 end
redis.call('HSET', KEYS[1], 'lease_until', 0)
return 1
