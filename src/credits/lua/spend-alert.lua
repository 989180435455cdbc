-- KEYS: account   ARGV: the alert's threshold in credits (0 = none)
-- Setting the spend alert re-arms it for the current month (a raised threshold fires again when
-- reached); an account that does not exist is not created.
-- A removal (0) of an alert that is not set answers 'not_set': of two at once, one removes it and
-- the other is told so (the second DELETE's 404), as a removal after it would be.
if redis.call('EXISTS', KEYS[1]) == 0 then return nil end
if ARGV[1] == '0' and tonumber(redis.call('HGET', KEYS[1], 'spend_alert') or '0') == 0 then
  return 'not_set'
end
redis.call('HSET', KEYS[1], 'spend_alert', ARGV[1], 'spend_alerted', 0)
return cjson.encode(load_account(KEYS[1]))
