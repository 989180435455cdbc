-- KEYS: account   ARGV: tier
local a = load_account(KEYS[1])
if not a then return nil end
-- The tier the account has (a plan whose period has not ended) changes nothing: a paid plan's
-- period still ends, and it falls back to Free then (re-applying a tier list made it last for
-- good). Another tier, or a plan already over, is an operator's tier change: it has no end date.
if a.tier ~= ARGV[1] or plan_lapsed(a, now_ms()) then
  redis.call('HSET', KEYS[1], 'tier', ARGV[1], 'plan_expires_at', 0)
  a = load_account(KEYS[1])
end
return cjson.encode(a)
