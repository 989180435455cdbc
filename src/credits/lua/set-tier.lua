-- KEYS: account   ARGV: tier
if redis.call('EXISTS', KEYS[1]) == 0 then return nil end
-- An operator's tier change has no end date.
redis.call('HSET', KEYS[1], 'tier', ARGV[1], 'plan_expires_at', 0)
return cjson.encode(load_account(KEYS[1]))
