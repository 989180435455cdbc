-- KEYS: the owner's webhooks, the webhook's delivery log   ARGV: webhook id, attempt (JSON), cap
-- Logged only while the webhook exists: an attempt that ends after its webhook was deleted
-- would otherwise recreate the log, a list with no expiry and no webhook to reach it by.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('LPUSH', KEYS[2], ARGV[2])
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[3]) - 1)
return 1
