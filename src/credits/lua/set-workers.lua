-- Binds an account to its own worker pool, or unbinds it (an empty URL). The binding lives in
-- the account hash, so the admission script returns it with the account at no extra cost.
-- KEYS: account   ARGV: url ('' = unbind)
-- An unbind removes a binding that is there, or answers 'not_bound': of two at once, one removes
-- it and the other is told so (the second DELETE's 404), as an unbind after it would be.
if redis.call('EXISTS', KEYS[1]) == 0 then return nil end
if ARGV[1] == '' then
  if redis.call('HDEL', KEYS[1], 'workers_url') == 0 then return 'not_bound' end
else
  redis.call('HSET', KEYS[1], 'workers_url', ARGV[1])
end
return cjson.encode(load_account(KEYS[1]))
