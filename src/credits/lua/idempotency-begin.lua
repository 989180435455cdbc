-- KEYS: idempotency record   ARGV: fingerprint, lease ms, request id, record ttl ms, awaited request id
-- (prelude.lua claim_idempotency)
return cjson.encode(claim_idempotency(KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]))
