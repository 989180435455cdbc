-- KEYS: the owner's webhooks   ARGV: webhook id, new sealed secret, overlap (ms), now (epoch ms)
-- Lives beside the ledger scripts because it shares their loader. A rotation is decided against
-- the record as the rotation before it left it, in one step: two racing rotations never both
-- replace the same secret (one would hand out a secret that never signs, or drop the previous
-- secret before the expiry promised), and a rotation never writes back a webhook deleted meanwhile.
-- The overlap rule is the route's (src/webhooks/routes/rotate-secret.ts), held here atomically.
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return cjson.encode({ status = 'not_found' }) end
local webhook = cjson.decode(raw)
local overlap = tonumber(ARGV[3])
local now = tonumber(ARGV[4])
local previous_signs = type(webhook.previousSealedSecret) == 'string'
  and (tonumber(webhook.previousSecretExpiresAt) or 0) > now
if overlap > 0 and previous_signs then
  return cjson.encode({ status = 'in_progress', webhook = webhook })
end
if overlap > 0 then
  webhook.previousSealedSecret = webhook.sealedSecret
  webhook.previousSecretExpiresAt = now + overlap
else
  webhook.previousSealedSecret = cjson.null
  webhook.previousSecretExpiresAt = cjson.null
end
webhook.sealedSecret = ARGV[2]
-- Epoch milliseconds have 13 digits: within cjson's 14 significant ones, so they come back whole.
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(webhook))
return cjson.encode({ status = 'rotated', webhook = webhook })
