-- KEYS: account   ARGV: the alert's threshold in credits (0 = none)
-- Setting the spend alert re-arms it for the current month (a raised threshold fires again when
-- reached); an account that does not exist is not created.
if redis.call('EXISTS', KEYS[1]) == 0 then return nil end
redis.call('HSET', KEYS[1], 'spend_alert', ARGV[1], 'spend_alerted', 0)
return cjson.encode(load_account(KEYS[1]))
