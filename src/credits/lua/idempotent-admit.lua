-- KEYS: admit.lua's seven, then the idempotency record
-- ARGV: admit.lua's twenty-one, then the claim's fingerprint, lease ms, request id, record ttl ms,
--       awaited request id
-- A call under an Idempotency-Key in one round trip: claims the key (idempotency-begin.lua) and,
-- when this request now holds it under its own request id, admits the call (admit.lua) in the
-- same step. A refused admission frees the key again, so a retry may run. Any other claim (in
-- progress, completed, a conflict, or taken over under another request id) is answered alone.
local claim = claim_idempotency(KEYS[8], ARGV[22], ARGV[23], ARGV[24], ARGV[25], ARGV[26])
if claim.state ~= 'started' or claim.requestId ~= ARGV[4] then return cjson.encode({ claim = claim }) end
local admitted = admit_call(true)
if admitted.status ~= 'ok' then redis.call('DEL', KEYS[8]) end
return cjson.encode({ claim = claim, admit = admitted })
